"""Which provider a run takes: the one named, or ``auto``'s choice, said in one line, and
kept with the run in its --out folder so that the next run into it takes the same while
what decided it holds (issue 69: an engine another process started moved every nvcc cell
of a day's work into containers between two identical commands)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..common import recorded
from ..common.files import write_atomic
from ..errors import EnvironmentUnavailable, UserError
from .docker import BASE_TAG, CUDA_COMPAT_IN_IMAGE, engine, image_exists
from .toolkits import Notes

# The choice of the last run into a folder and what decided it (beside its results.json,
# written as the choice is made: an interrupted run's --resume takes it too).
CHOICE_FILE = ".cudamatrix-provider.json"
CHOICE_FORMAT = 1
AUTO_PROVIDERS = ("wheels", "docker")


@dataclass(frozen=True)
class AutoFacts:
    """What ``auto`` weighs: whether a Docker engine answers, whether it holds the base
    image the wheels flavour needs (True where not needed or not asked), the selection's
    frontends that run on this machine, and the flavour asked for."""

    engine: bool
    base_image: bool
    local: tuple[str, ...]
    flavour: str

    def to_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "base_image": self.base_image,
                "local": list(self.local), "flavour": self.flavour}

    @staticmethod
    def from_dict(data: object) -> AutoFacts | None:
        """The facts as recorded, or None where the record holds none it can trust."""
        if not isinstance(data, dict):
            return None
        local = data.get("local")
        if not (isinstance(data.get("engine"), bool) and isinstance(data.get("base_image"), bool)
                and isinstance(local, list) and all(isinstance(x, str) for x in local)
                and isinstance(data.get("flavour"), str)):
            return None
        return AutoFacts(data["engine"], data["base_image"], tuple(local), data["flavour"])


@dataclass(frozen=True)
class LastChoice:
    """The provider the last run into a folder took and, where ``auto`` chose it, the facts
    it was decided by (None for a named one, or a folder from before the facts were kept)."""

    provider: str
    facts: AutoFacts | None = None


def probe_facts(flavour: str, local_frontends: Sequence[str]) -> AutoFacts:
    """The facts as they are on this machine now (the Docker engine asked once)."""
    try:
        client = engine()
    except EnvironmentUnavailable:
        return AutoFacts(False, False, tuple(local_frontends), flavour)
    base = image_exists(client, BASE_TAG) if flavour == "wheels" else True
    return AutoFacts(True, base, tuple(local_frontends), flavour)


def decide(facts: AutoFacts) -> tuple[str, str]:
    """``auto``'s choice from the facts alone, and why: containers where a Docker engine
    and its base image are ready, else wheels; never containers for a selection with cells
    of a frontend that builds on this machine (in containers those cells became skips
    when an engine happened to answer)."""
    if not facts.engine:
        return "wheels", "auto: no Docker engine answers"
    if not facts.base_image:
        return "wheels", f"auto: the Docker engine lacks the base image {BASE_TAG}"
    if facts.local:
        return "wheels", (f"auto: the selection's {', '.join(facts.local)} cells run on this "
                          "machine, not in containers (--provider docker runs the others there)")
    return "docker", "auto: a Docker engine and its images are ready"


def _local_cells(frontends: Sequence[str], none: str = "none of the selection's cells") -> str:
    """The selection's cells that build here, by frontend (`build` is a build case's)."""
    return f"the selection's {', '.join(frontends)} cells" if frontends else none


def what_changed(before: AutoFacts, now: AutoFacts) -> list[str]:
    """Each fact that differs from the last run's, said as it is now."""
    said = []
    if before.flavour != now.flavour:
        said.append(f"--docker-flavour is {now.flavour} (it was {before.flavour})")
    if before.engine != now.engine:
        said.append("a Docker engine answers now (none did then)" if now.engine
                    else "no Docker engine answers now (one did then)")
    elif now.engine and before.base_image != now.base_image:
        said.append(f"the Docker engine has the base image {BASE_TAG} now" if now.base_image
                    else f"the Docker engine lacks the base image {BASE_TAG} now")
    if now.engine and before.local != now.local:  # without an engine they decide nothing
        said.append(f"{_local_cells(now.local)} run on this machine, not in containers "
                    f"({_local_cells(before.local, 'none')} did at the last run)")
    return said


def choose_auto(facts: AutoFacts, last: LastChoice | None) -> tuple[str, str, str]:
    """``auto``'s provider, why, and the line that says it (the run's first). The last
    run's provider is kept where it can still serve: wheels always can, so an engine that
    came up between two runs never moves a folder's cells into containers (every verdict's
    environment changed silently, everything compiled again); containers only while the
    facts still choose them. Where the facts changed the line says what changed, and where
    the provider changed, from what to what."""
    chosen, why = decide(facts)
    if last is None or last.provider not in AUTO_PROVIDERS:
        return chosen, why, f"provider: {chosen} ({why})"
    changed = what_changed(last.facts, facts) if last.facts is not None else []
    though = f", though {'; '.join(changed)}" if changed else ""
    if last.provider == "wheels" and chosen == "docker":
        why = ("auto: kept from the last run here; a Docker engine answers now (--provider "
               "docker to use it)")
        line = (f"provider: wheels, kept from the last run here{though} (--provider docker to "
                "use it)" if changed else f"provider: wheels ({why})")
        return "wheels", why, line
    if last.provider != chosen:
        since = f": {'; '.join(changed)}" if changed else ""
        line = (f"provider: {chosen}, changed from {last.provider} at the last run here"
                f"{since} ({why}; --provider pins one)")
        return chosen, f"{why}; the last run here used {last.provider} (--provider pins one)", line
    if changed:
        return chosen, why, f"provider: {chosen}, as at the last run here{though} ({why})"
    return chosen, why, f"provider: {chosen} ({why})"


def last_choice(out: Path) -> LastChoice | None:
    """The choice of the last run into `out`: its choice file, else the provider its
    results.json names (a folder written before the facts were kept), else None."""
    for name, read in ((CHOICE_FILE, _from_choice_file), ("results.json", _from_results)):
        try:
            data = recorded.read_json(out / name, 256 << 20)
        except recorded.UnreadableRecord:
            continue
        found = read(data)
        if found is not None:
            return found
    return None


def _from_choice_file(data: object) -> LastChoice | None:
    if not isinstance(data, dict) or data.get("format") != CHOICE_FORMAT:
        return None
    provider = data.get("provider")
    if not isinstance(provider, str) or not provider:
        return None
    return LastChoice(provider, AutoFacts.from_dict(data.get("facts")))


def _from_results(data: object) -> LastChoice | None:
    run = data.get("run") if isinstance(data, dict) else None
    provider = run.get("provider") if isinstance(run, dict) else None
    return LastChoice(provider) if isinstance(provider, str) and provider else None


def keep_choice(out: Path, provider: str, why: str, facts: AutoFacts | None) -> None:
    """The run's choice and its facts into `out`, for the next run into it to weigh."""
    write_atomic(out / CHOICE_FILE, json.dumps({
        "format": CHOICE_FORMAT, "provider": provider, "why": why,
        "facts": facts.to_dict() if facts is not None else None}, indent=1) + "\n")


def choose_provider(provider: str, flavour: str, cuda_compat: bool,
                    progress: Notes, out: Path | None = None,
                    local_frontends: Sequence[str] = ()) -> tuple[str, str]:
    """The provider to run with and how it was chosen, said in one short line; `out`: the
    run's folder, whose last choice ``auto`` weighs (choose_auto) and where this one is
    kept (a named provider too: the next ``auto`` run says it changed from it)."""
    if cuda_compat and (provider != "docker" or flavour != "nvidia"):
        raise UserError("--cuda-compat needs --provider docker --docker-flavour nvidia: only "
                        f"NVIDIA's images carry the forward-compatibility libraries "
                        f"({CUDA_COMPAT_IN_IMAGE}); PyPI has no wheel of them")
    facts: AutoFacts | None = None
    if provider == "docker":
        try:
            engine()
        except EnvironmentUnavailable as exc:
            raise UserError(f"--provider docker: {exc}") from None
        chosen, why = "docker", "named (--provider docker)"
        line = f"provider: {chosen} ({why})"
    elif provider != "auto":
        chosen, why = provider, f"named (--provider {provider})"
        line = f"provider: {chosen} ({why})"
    else:
        facts = probe_facts(flavour, local_frontends)
        chosen, why, line = choose_auto(facts, last_choice(out) if out else None)
    progress.note(line)
    if out is not None:
        keep_choice(out, chosen, why, facts)
    return chosen, why
