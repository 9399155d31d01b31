"""The text a signature covers, and nothing else: the one reader of a clearsigned document.

gpgv checks a clearsigned file and says "Good signature" while lines stand before the
signed block, or after it, that no signature covers; read whole, such a file gave the
tool a forged line first. One forged line in front of Debian's genuine InRelease, put
there by anyone between the runner and a plain-http mirror, named a forged Packages.xz,
hence a forged .deb whose nvcc the tool ran (issue 79, point 1). So:

- a document with anything outside its one signed block (before the header, after the
  signature, a second block) is refused, as apt refuses it;
- the text handed on is what gpgv wrote with ``--output``: the bytes its check covered,
  dash-escapes undone, never the file's.

No other module runs gpgv or reads a signed document's text
(tests/unit/test_signed_text_reader.py walks the package for it).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import EnvironmentUnavailable
from .bounded_fetch import AnswerRefused
from .interruption import run_preparation

BEGIN = b"-----BEGIN PGP SIGNED MESSAGE-----"
SIGNATURE = b"-----BEGIN PGP SIGNATURE-----"
END = b"-----END PGP SIGNATURE-----"
VERIFIER = "gpgv"
_TIMEOUT_S = 120


class SignatureRefused(AnswerRefused):
    """A signed document whose signature does not hold, or that holds text outside it."""


def _one_signed_block(signed: bytes, what: str) -> None:
    """Refuse a document that is not exactly one clearsigned block: nothing before its
    header, one signature, nothing but line ends after it."""
    lines = signed.splitlines()
    if not lines or lines[0].rstrip() != BEGIN:
        raise SignatureRefused(f"{what}: text before its signed block, which no signature "
                               "covers: refused")
    markers = [line.rstrip() for line in lines if line.startswith(b"-----")]
    if markers != [BEGIN, SIGNATURE, END]:
        raise SignatureRefused(f"{what}: not one signed block (a second one, or one cut "
                               "short): refused")
    if signed[signed.rindex(END) + len(END):].strip():
        raise SignatureRefused(f"{what}: text after its signature, which no signature "
                               "covers: refused")


def verified_text(signed: bytes, keyring: Path, what: str) -> str:
    """The text of `signed`, a clearsigned document, that its signature covers, checked by
    gpgv against `keyring`; SignatureRefused where the check fails or anything stands
    outside the signed block. `what` names the document in a message ("Debian bookworm's
    InRelease")."""
    if shutil.which(VERIFIER) is None or not keyring.is_file():
        raise EnvironmentUnavailable(f"checking {what}'s signature needs {VERIFIER} and the "
                                     f"keyring {keyring} (apt-get install gpgv)")
    _one_signed_block(signed, what)
    with tempfile.TemporaryDirectory(prefix="cudamatrix-signed-") as folder:
        document, covered = Path(folder) / "signed", Path(folder) / "covered"
        document.write_bytes(signed)
        done = run_preparation([VERIFIER, "--keyring", str(keyring), "--output",
                                str(covered), str(document)], timeout=_TIMEOUT_S)
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no signature"])[-1]
            raise SignatureRefused(f"{what} failed its signature check: {said}")
        with covered.open("rb") as handle:  # gpgv's own output, never longer than its input
            text = handle.read(len(signed) + 1)
    return text.decode(errors="replace")
