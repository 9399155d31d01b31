"""Which GPU each cell of a run loaded its module on (its load stage's `gpu`), summed up,
and the time the GPU stages took. python3 gpus.py RUN_OUT_FOLDER"""
import collections
import json
import sys

record = json.load(open(f"{sys.argv[1]}/results.json"))
per_gpu: collections.Counter[str] = collections.Counter()
gpu_seconds = 0.0
outcomes: collections.Counter[str] = collections.Counter()
for cell in record["cells"]:
    outcomes[cell["outcome"]] += 1
    for stage in cell["stages"]:
        if stage["stage"] in ("load", "run"):
            gpu_seconds += stage.get("seconds") or 0.0
        gpu = (stage.get("details") or {}).get("gpu")
        if stage["stage"] == "load" and gpu:
            per_gpu[f"{gpu['index']} {gpu['uuid']}"] += 1
print("  outcomes:", dict(outcomes), "| cells per GPU:", dict(per_gpu),
      f"| GPU stages {gpu_seconds:.3f} s in all")
