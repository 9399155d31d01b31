# A probe run on a lent H200 (torch 2.11.0+cu130, CUDA 13.0): which rlimit lets a CUDA process start and still bounds what it writes. Output: rlimit-h200.txt.
import resource, subprocess, sys
LIMIT = int(7.9 * (1 << 30))
CHILD = r'''
import sys
import torch
x = torch.arange(8.0, device="cuda") * 2.5
torch.cuda.synchronize()
print("torch ok", x.sum().item(), flush=True)
try:
    big = bytearray(int(sys.argv[1]))
    print("allocated", len(big) >> 30, "GiB: NOT bounded", flush=True)
except MemoryError:
    print("MemoryError: bounded", flush=True)
'''
def limit(kind):
    def apply():
        if kind:
            resource.setrlimit(kind, (LIMIT, LIMIT))
    return apply
for name, kind in (("none", None), ("RLIMIT_AS", resource.RLIMIT_AS), ("RLIMIT_DATA", resource.RLIMIT_DATA)):
    done = subprocess.run([sys.executable, "-c", CHILD, str(12 << 30)], preexec_fn=limit(kind),
                          capture_output=True, text=True, timeout=120)
    tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
    print(f"{name}: rc={done.returncode}", " | ".join(tail))
