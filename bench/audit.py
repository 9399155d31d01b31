"""The audit's speed and memory targets (issue 13), measured: ``nox -s bench_audit``.

For each wheel: the whole ``cudamatrix audit --no-measure`` command (facts, predictions
for the matrix's GPUs and drivers, the four reports) timed from a warm download cache,
with the peak resident memory of the command and its children, next to the wheel's
largest member (what unpacking would have cost) and its largest module (the bound).
Writes bench/AUDIT.md with --write.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from cudamatrix.config.options import default_cache
from cudamatrix.stages.binaries.elf import fatbins
from cudamatrix.stages.binaries.inputs import resolve

REPO = Path(__file__).resolve().parents[1]
WHEELS = {"bitsandbytes==0.50.2": 5.0, "vllm==0.11.0": None}


def largest(wheel: Path) -> tuple[int, int]:
    """The wheel's largest member (uncompressed) and its largest fatbinary."""
    member = module = 0
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for info in archive.infolist():
            if not info.filename.endswith(".so"):
                continue
            member = max(member, info.file_size)
            path = Path(archive.extract(info, scratch))
            with path.open("rb") as handle:
                module = max([module, *(f.size for f in fatbins(handle))])
            path.unlink()
    return member, module


def measure(spec: str) -> dict[str, float]:
    wheel = resolve(spec, default_cache())  # downloaded once, outside the timing
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "cudamatrix", "audit", str(wheel), "--no-measure",
                        "--out", out], cwd=REPO, check=False, capture_output=True)
    seconds = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    member, module = largest(wheel)
    return {"mb": wheel.stat().st_size / 1e6, "seconds": seconds,
            "peak_mb": max(peak, before) / 1024, "member_mb": member / 1e6,
            "module_mb": module / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write bench/AUDIT.md")
    args = parser.parse_args()
    rows = ["| wheel | size | audit, reports included | target | peak memory | largest member "
            "| largest module |", "|---|---|---|---|---|---|---|"]
    for spec, target in WHEELS.items():
        got = measure(spec)
        met = "-" if target is None else f"< {target:.0f} s: " + (
            "yes" if got["seconds"] < target else "NO")
        rows.append(f"| {spec} | {got['mb']:.0f} MB | {got['seconds']:.1f} s | {met} | "
                    f"{got['peak_mb']:.0f} MB | {got['member_mb']:.0f} MB | "
                    f"{got['module_mb']:.0f} MB |")
        print(rows[-1], flush=True)
    text = ("# Audit benchmark\n\nMeasured by `nox -s bench_audit` (bench/audit.py): "
            "`cudamatrix audit WHEEL --no-measure` from a warm download cache, the matrix's "
            "GPUs and driver labels, the four reports written. Peak memory is the largest "
            "resident size of the command or any process it ran (cuobjdump included); "
            "wheels are read member by member and each fatbinary handed to cuobjdump alone, "
            "so it follows the largest module, not the largest member.\n\n"
            + "\n".join(rows) + "\n")
    if args.write:
        (REPO / "bench" / "AUDIT.md").write_text(text)


if __name__ == "__main__":
    main()
