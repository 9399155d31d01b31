"""The figures of bench/gpu/cold_jit.sh (issue 81), from its runs' results:

    python cold_jit_summary.py OUT WORK CORES

OUT holds walls.txt (each run's wall), jit.txt (jit_side_by_side.py's output) and
reference.json (the C++ cudaEvent saxpy); WORK/runs/NAME each run's --out. Prints the floor
(bench/first_run.py jit_floor, from the run that compiled each arch apart, the JIT's work
from jit.txt), each cold run against it, the warm re-run's seconds a cell, the faulting
cells, and the timed saxpy against its reference."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from first_run import jit_floor


def cells(work: Path, name: str) -> list[dict]:
    path = work / "runs" / name / "results.json"
    return json.loads(path.read_text())["cells"] if path.exists() else []


def main() -> int:
    out, work, cores = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    walls = {k: (float(v), int(rc)) for k, rc, v in re.findall(
        r"^(\S+): rc=(\d+) wall ([\d.]+) s", (out / "walls.txt").read_text(), re.M)}
    jit_text = (out / "jit.txt").read_text() if (out / "jit.txt").exists() else ""
    jit_work = re.search(r"^jit_work_s ([\d.]+)", jit_text, re.M)
    apart = cells(work, "off-reversed-apart") or cells(work, "cold")
    floor, path, compile_work, jit, named = jit_floor(
        apart, cores, float(jit_work.group(1)) if jit_work else None)
    print(f"floor {floor:.1f} s = max(longest single-arch compile + its load {path:.1f} s "
          f"({named}), (compile work {compile_work:.1f} s + JIT work {jit:.1f} s) / {cores} "
          f"cores = {(compile_work + jit) / cores:.1f} s)")
    for name, (wall, rc) in walls.items():
        found = cells(work, name)
        loads = [s for c in found for s in c["stages"] if s["stage"] == "load"]
        jits = [s for s in loads if (s.get("details") or {}).get("via") == "ptx-jit"]
        servers = {(s.get("details") or {}).get("gpu", {}).get("uuid") for s in loads}
        print(f"{name}: rc={rc} {len(found)} cells, wall {wall:.2f} s "
              f"({wall / max(1, len(found)):.3f} s a cell), {wall / floor:.2f}x the floor; "
              f"load stage {sum(s.get('seconds', 0) for s in loads):.1f} s over {len(loads)} "
              f"loads, {len(jits)} of them PTX JIT ({sum(s.get('seconds', 0) for s in jits):.1f}"
              f" s); GPUs {len(servers - {None})}")
    for before, after in (("cold-one-server", "off-plan"), ("before-recorded", "cold-recorded"),
                          ("before-first-off", "first-off")):
        if before in walls and after in walls:
            print(f"the code before ({before}) against the code now ({after}): "
                  f"{walls[before][0] / walls[after][0]:.2f}x")
    for name in walls:
        waits = [(s.get("details") or {}).get("gpu_wait_s", 0.0)
                 for c in cells(work, name) for s in c["stages"]]
        if any(waits):
            print(f"{name}: cells waited {sum(waits):.1f} s for a GPU server in all "
                  f"(longest {max(waits):.1f} s)")
    replaced: dict[str, int] = {}
    for name in walls:
        for cell in cells(work, name):
            for stage in cell["stages"]:
                why = (stage.get("details") or {}).get("server_replaced", "")
                if "memory" in why:
                    replaced[name] = replaced.get(name, 0) + 1
    print(f"servers replaced for device memory: {replaced or 'none'}")
    for line in jit_text.splitlines():
        if not line.startswith("jit_work_s"):
            print(f"JIT: {line}")
    for cell in cells(work, "cold"):
        if cell["id"].startswith("faults/"):
            load = next((s for s in cell["stages"] if s["stage"] == "load"), {})
            print(f"fault corpus: {cell['id']}: {cell['outcome']} at {cell.get('stage')}; "
                  f"server replaced: {(load.get('details') or {}).get('server_replaced', '')}")
    reference = out / "reference.json"
    for name in ("cold", "warm"):
        timed = [c for c in cells(work, name) if c["id"].startswith("saxpy/cold-256MiB/")
                 and c["id"].endswith("/sm_90")]
        if not timed or not reference.exists():
            continue
        run = next(s for s in timed[0]["stages"] if s["stage"] == "run")
        tool = run["details"]["timing"]["median_us"]
        ref = json.loads(reference.read_text())["median_us"]
        print(f"saxpy 256 MiB cold L2 ({name} run, beside the JIT loads): tool {tool:.2f} us, "
              f"C++ cudaEvent reference {ref:.2f} us: {tool / ref:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
