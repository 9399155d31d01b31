"""The mistakes a change to a key or a run option is likeliest to make, each made on purpose
in a copy of the package, and the unit tests that must then fail (`nox -s mutations`).

Issue 67 found six such mistakes that the unit lane passed; each is one entry here, on the
real `maxrregcount` key and the real `--retries` and `--cell-timeout` flags; two more break
the one rule of a cell's pipeline (which stage runs next). A mutation the tests survive is
a test missing: this exits 1 naming it.

    python tests/mutations.py            # every mutation
    python tests/mutations.py --list     # their names
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KEYS = ("tests/unit/test_declared_keys.py",)
FLAGS = ("tests/unit/test_run_flags.py", "-k", "repro_or_says or read_by_the_run")
PIPELINE = ("tests/unit/test_pipeline.py",)


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str  # below src/cudamatrix
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("the reader drops a new key's value", "config/corpus.py",
             "found[name] = self.declared(where, key, raw.get(name))",
             'found[name] = self.declared(where, key, None if name == "maxrregcount" '
             "else raw.get(name))", KEYS),
    Mutation("a misspelt nvcc flag", "stages/frontends/nvcc.py",
             'f"-maxrregcount={job.maxrregcount}"', 'f"-maxregcount={job.maxrregcount}"',
             KEYS),
    Mutation("the key marked as not changing the compile", "stages/cell/job.py",
             "    maxrregcount: int | None = None\n",
             "    maxrregcount: int | None = field(default=None, metadata=AFTER_COMPILE)\n",
             KEYS),
    Mutation("the NVRTC frontend forgets the key", "stages/frontends/nvrtc.py",
             '        options.append(f"--maxrregcount={job.maxrregcount}")\n',
             "        pass\n", KEYS),
    Mutation("the code using a run option forgotten", "orchestrator/cell_runner.py",
             "self.options.retries", "0", FLAGS),
    Mutation("a run option dropped from a cell's repro line", "config/options.py",
             '            read=flags.positive_number,\n            repro=True,\n        ),\n'
             '    )\n    # The limit of CuPy',
             '            read=flags.positive_number,\n        ),\n    )\n'
             '    # The limit of CuPy', FLAGS),
    # The one rule of a cell's pipeline (stages/runtime/pipeline.py: goes_on).
    Mutation("the pipeline goes on after an inspect error", "stages/runtime/pipeline.py",
             'ENDS = ("error", "timeout", "crashed")', 'ENDS = ("timeout", "crashed")',
             PIPELINE),
    Mutation("an artifact check that failed stops the GPU stages", "stages/runtime/pipeline.py",
             '    return not (last.stage in GPU_STAGES and last.status != "ok")',
             '    return last.status == "ok"', PIPELINE),
)


def survives(mutation: Mutation, work: Path) -> bool:
    """Whether the tests pass with the mutation made in a copy of the package at `work`."""
    package = work / "src" / "cudamatrix"
    shutil.rmtree(work / "src", ignore_errors=True)
    shutil.copytree(REPO / "src", work / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    target = package / mutation.path
    text = target.read_text()
    if text.count(mutation.old) != 1:
        raise SystemExit(f"mutation {mutation.name!r}: {mutation.path} no longer holds "
                         f"{mutation.old!r} once: update tests/mutations.py")
    target.write_text(text.replace(mutation.old, mutation.new))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, (str(work / "src"), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *mutation.tests], cwd=REPO, env=env, capture_output=True, text=True)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the mutations and stop")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(m.name for m in MUTATIONS))
        return 0
    survived = []
    with tempfile.TemporaryDirectory(prefix="cudamatrix-mutations-") as folder:
        for number, mutation in enumerate(MUTATIONS, 1):
            lived = survives(mutation, Path(folder))
            print(f"[{number}/{len(MUTATIONS)}] {mutation.name}: "
                  f"{'SURVIVED (no test failed)' if lived else 'caught'}", flush=True)
            if lived:
                survived.append(mutation.name)
    print(f"{len(MUTATIONS) - len(survived)} caught, {len(survived)} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
