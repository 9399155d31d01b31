"""Users add their own cases with --corpus; a hanging one costs only its own cell."""

from __future__ import annotations

from pathlib import Path

KERNEL = """
extern "C" __global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
"""


def _write_case(root: Path, case_id: str, files: dict[str, str]) -> None:
    folder = root / case_id
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def _hanging_and_fine_cases(root: Path, hang_id: str, extra: str = "") -> None:
    """A case that sleeps for two minutes (sm_90a only) and one that compiles at once."""
    _write_case(root, hang_id, {
        "hang.py": "import time\ntime.sleep(120)\n",
        "case.toml": 'title = "hangs"\n[[variant]]\nname = "sleeps"\nsource = "hang.py"\n'
                     f'frontend = "cute-dsl"\n{extra}only = {{ arch = "sm_90a" }}\n',
    })
    _write_case(root, "fine", {
        "add.cu": KERNEL,
        "case.toml": 'title = "fine"\n[[variant]]\nname = "v"\nsource = "add.cu"\n'
                     'frontend = "nvrtc"\n',
    })


def test_user_case_runs_without_touching_the_package(run_cli, tmp_path: Path) -> None:
    cases = tmp_path / "my-cases"
    _write_case(cases, "add-one", {
        "add.cu": KERNEL,
        "case.toml": (
            'title = "my kernel"\n'
            '[[variant]]\nname = "plain"\nsource = "add.cu"\nfrontend = "nvrtc"\n'
            'kernel = "add_one"\n'
            '  [[variant.artifact]]\n  in = "ptx"\n  contains = "add_one"\n'
        ),
    })
    run = run_cli("run", "--corpus", str(cases), "--case", "add-one", "--toolkit", "12.4",
                  "--toolkit", "13.0", "--arch", "sm_80", out=tmp_path / "out")
    assert run.code == 0, run.output
    cells = run.cells()
    assert set(cells) == {"add-one/plain/12.4/sm_80", "add-one/plain/13.0/sm_80"}
    assert all(c["outcome"] == "pass" for c in cells.values())
    assert [s["stage"] for s in cells["add-one/plain/13.0/sm_80"]["stages"]] == \
        ["compile", "inspect", "load"]


def test_broken_user_kernel_fails_with_its_message(run_cli, tmp_path: Path) -> None:
    cases = tmp_path / "my-cases"
    _write_case(cases, "typo", {
        "bad.cu": KERNEL.replace("x[i] += 1.0f;", "x[i] += undefined_name;"),
        "case.toml": 'title = "t"\n[[variant]]\nname = "v"\nsource = "bad.cu"\n'
                     'frontend = "nvrtc"\n',
    })
    run = run_cli("run", "--corpus", str(cases), "--case", "typo", "--toolkit", "12.4",
                  "--arch", "sm_80", out=tmp_path / "out")
    assert run.code == 1
    cell = run.cells()["typo/v/12.4/sm_80"]
    assert cell["outcome"] == "fail" and cell["stage"] == "compile"
    assert "undefined_name" in cell["message"]
    assert cell["diagnosis"]["rule"] == "unclassified"


def test_hanging_case_times_out_alone(run_cli, tmp_path: Path) -> None:
    cases = tmp_path / "my-cases"
    _hanging_and_fine_cases(cases, "hang", "timeout = 3\n")
    run = run_cli("run", "--corpus", str(cases), "--case", "hang", "--case", "fine",
                  "--toolkit", "13.0", "--arch", "sm_90a", out=tmp_path / "out", timeout=600)
    cells = run.cells()
    hung = cells["hang/sleeps/bundled/sm_90a/cute_dsl-4.8.1"]
    assert hung["outcome"] == "error" and "limit" in hung["message"]
    assert hung["diagnosis"]["rule"] == "timeout"
    assert hung["seconds"] < 60
    assert cells["fine/v/13.0/sm_90a"]["outcome"] == "pass"
    assert run.code == 1


def test_run_time_limit_cuts_the_run_and_resume_finishes_it(run_cli, tmp_path: Path) -> None:
    cases = tmp_path / "my-cases"
    _hanging_and_fine_cases(cases, "a-hang")
    args = ("run", "--corpus", str(cases), "--case", "a-hang", "--case", "fine",
            "--toolkit", "13.0", "--arch", "sm_80", "--arch", "sm_90a", "--jobs", "1")
    out = tmp_path / "out"
    cut = run_cli(*args, "--run-timeout", "4", out=out, timeout=600)
    cells = cut.cells()
    hung = cells["a-hang/sleeps/bundled/sm_90a/cute_dsl-4.8.1"]
    assert hung["outcome"] == "error" and hung["diagnosis"]["rule"] == "timeout"
    assert hung["seconds"] < 30
    waiting = [c for i, c in cells.items() if i.startswith("fine/")]
    assert len(waiting) == 2
    assert all(c["outcome"] == "error" and "--run-timeout" in c["message"] for c in waiting)
    assert cut.code == 1

    # The cells the limit never started are run by --resume; the finished one is kept.
    resumed = run_cli(*args, "--resume", out=out, timeout=600)
    assert "resuming: 1 of 3 cells already done" in resumed.output
    assert {i: c["outcome"] for i, c in resumed.cells().items() if i.startswith("fine/")} == \
        {"fine/v/13.0/sm_80": "pass", "fine/v/13.0/sm_90a": "pass"}
