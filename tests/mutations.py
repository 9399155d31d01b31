"""The mistakes a change to a key or a run option is likeliest to make, each made on purpose
in a copy of the package, and the unit tests that must then fail (`nox -s mutations`).

Issue 67 found six such mistakes that the unit lane passed; each is one entry here, on the
real `maxrregcount` key and the real `--retries` and `--cell-timeout` flags; two more break
the one rule of a cell's pipeline (which stage runs next). A mutation the tests survive is
a test missing: this exits 1 naming it.

    python tests/mutations.py            # every mutation
    python tests/mutations.py --list     # their names
    python tests/mutations.py --only torch   # those whose name holds "torch"
    python tests/mutations.py --lane --only torch  # each against the whole unit lane
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
RUNNER = ("tests/unit/test_cell_runner.py",)
TORCH = ("tests/unit/test_torch_flags.py",)
STRATEGY = ("tests/unit/test_compile_strategy.py",)
ARCH = ("tests/unit/test_arch_guard.py",)
FIRST = ("tests/unit/test_first_release.py",)
TIMEOUT = ("tests/unit/test_run_timeout.py",)
REPRO = ("tests/unit/test_repro_genuine.py",)
DIAGNOSIS = ("tests/unit/test_diagnosis.py",)
PREFETCH = ("tests/unit/test_prefetch.py",)
BUDGET = ("tests/unit/test_budget_spills.py",)
PYTHON = ("tests/unit/test_python_axis.py",)
SIGNED = ("tests/unit/test_signed_text_reader.py", "tests/unit/test_debian_archive.py")
FETCH = ("tests/unit/test_fetch_bounds.py", "tests/unit/test_debian_archive.py")
CONFINED = ("tests/unit/test_confined_paths.py",)
CELL_ENVIRONMENT = ("tests/unit/test_cell_environment.py",)
LOG_LINE = ("tests/unit/test_log_lines.py",)
VERDICT = ("tests/unit/test_verdict_boundaries.py",)
VERDICT_RULES = ("tests/unit/test_verdict_rules.py",)


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
    # Issue 80: the kernel probe and the since-which-arch preprocessing made their own
    # nvcc lines, which the compile's keys did not reach.
    Mutation("nvcc's kernel probe leaves the case's words off", "stages/frontends/nvcc.py",
             'return [[nvcc, *shaping, "-ptx",', 'return [[nvcc, "-ptx",', KEYS),
    Mutation("nvcc's preprocessing leaves the case's words off", "stages/frontends/nvcc.py",
             'return [[nvcc, *shaping, "-E",', 'return [[nvcc, "-E",', KEYS),
    # A reviewer's: a purpose's own words mixed up (each passed the unit lane until
    # test_declared_keys read each call's arch and the log's repro line).
    Mutation("nvcc's kernel probe for nvcc's default arch", "stages/frontends/nvcc.py",
             'return [[nvcc, *shaping, "-ptx", *virtual,', 'return [[nvcc, *shaping, "-ptx",',
             KEYS),
    Mutation("nvcc's repro line keeps the cell's --keep-dir", "stages/frontends/nvcc.py",
             'keep = ["--keep", "--keep-dir", str(work / "keep")] if line.purpose == "compile"',
             'keep = ["--keep", "--keep-dir", str(work / "keep")] if line.purpose != "probe"',
             KEYS),
    Mutation("nvcc's host pass for the cell's arch, not the one searched",
             "stages/frontends/nvcc.py",
             'return [[nvcc, *shaping, "--dryrun", "-c", f"--gpu-architecture={arch}"',
             'return [[nvcc, *shaping, "--dryrun", "-c", f"--gpu-architecture={job.arch}"',
             KEYS),
    Mutation("clang's host line without the case's words", "stages/frontends/clang.py",
             'host = [*_common(job), "--cuda-host-only", *_shaping(job), "-c", "-o",',
             'host = [*_common(job), "--cuda-host-only", "-c", "-o",', KEYS),
    Mutation("clang's kernel probe writes over the cell's PTX", "stages/frontends/clang.py",
             'return [[*device, "-S", "-o", str(job.work / PROBE_PTX)',
             'return [[*device, "-S", "-o", str(job.work / PTX)', KEYS),
    Mutation("the code using a run option forgotten", "orchestrator/cell_runner.py",
             "self.options.retries", "0", FLAGS),
    Mutation("a run option dropped from a cell's repro line", "config/options.py",
             '            read=flags.positive_number,\n            repro=True,\n        ),\n'
             '    )\n    # The limit of CuPy',
             '            read=flags.positive_number,\n        ),\n    )\n'
             '    # The limit of CuPy', FLAGS),
    # The one rule of a cell's pipeline (stages/cell/sequence.py: goes_on).
    Mutation("the pipeline goes on after an inspect error", "stages/cell/sequence.py",
             'ENDS = ("error", "timeout", "crashed")', 'ENDS = ("timeout", "crashed")',
             PIPELINE),
    Mutation("an artifact check that failed stops the GPU stages", "stages/cell/sequence.py",
             '    return not (last.stage in GPU_STAGES and last.status != "ok")',
             '    return last.status == "ok"', PIPELINE),
    # The pipeline's compile results and its loop (issue 67), made again by a reviewer.
    Mutation("the pipeline goes on after a compile that erred", "stages/cell/sequence.py",
             'if compiled.stage != "compile" or compiled.status != "ok":',
             'if compiled.stage != "compile" or compiled.status == "failed":', PIPELINE),
    Mutation("a fresh compile past the cell's limit is a tool's error",
             "stages/runtime/pipeline.py",
             "        except subprocess.TimeoutExpired:\n            raise\n", "", PIPELINE),
    Mutation("a prebuilt compile read from the cell's own folder", "stages/runtime/pipeline.py",
             'folder = Path(carried.job.prebuilt or "")', "folder = carried.job.work", PIPELINE),
    Mutation("a cell's stages saved only when its steps are done", "stages/runtime/pipeline.py",
             "        carried.stages.extend(said)\n        if in_worker:\n"
             "            save_stages(job, carried.stages)\n",
             "        carried.stages.extend(said)\n    if in_worker:\n"
             "        save_stages(job, carried.stages)\n", PIPELINE),
    Mutation("the GPU's server handed no module", "stages/runtime/pipeline.py",
             "*((module.ptx, module.cubin, module.library)", "*((None, None, None)", PIPELINE),
    Mutation("no GPU: a load skipped after the cell's own load", "stages/runtime/pipeline.py",
             "goes_on(stages) and not any(s.stage in GPU_STAGES for s in stages)",
             "goes_on(stages)", PIPELINE),
    Mutation("a group's compile charges each cell all its CPU time",
             "stages/runtime/pipeline.py",
             "share = round(compiler.seconds / len(stages), 3)",
             "share = round(compiler.seconds, 3)", PIPELINE),
    # A cell's way through the run (orchestrator/cell_runner.py).
    Mutation("a failed cached compile sent to a GPU's worker", "orchestrator/cell_runner.py",
             "if cached is not None and not (goes_on([cached]) and self.device.present):",
             "if cached is not None and not self.device.present:", RUNNER),
    Mutation("one retry more than --retries asks", "record/verdict_rules.py",
             "attempts_before < retries", "attempts_before <= retries", RUNNER),
    Mutation("cells with other flags built by one group compile", "orchestrator/cell_runner.py",
             "todo = [p for p in todo if p.job is not None and p.job.flags == first_flags]",
             "todo = [p for p in todo if p.job is not None]", RUNNER),
    Mutation("a cell the group's build skipped keeps the skip", "orchestrator/cell_runner.py",
             "                    again.append(member)\n                    continue\n",
             "                    again.append(member)\n", RUNNER),
    Mutation("a project build that hit its limit counted as kept", "orchestrator/cell_runner.py",
             "and not ended(stages[0])",
             'and stages[0].status not in ("error", "crashed")', RUNNER),
    # A torch release's CUDAExtension flags, read from its files (issue 69).
    Mutation("torch: the C++ ABI a table's, not TorchConfig.cmake's",
             "stages/frontends/torch_flags.py",
             'abi = cmake_abi(torch_config or "")', "abi = 0", TORCH),
    Mutation("torch: ROCm's libraries linked for CUDA's", "stages/frontends/torch_flags.py",
             "visit(statement.orelse)", "visit(statement.body)", TORCH),
    Mutation("torch: -fPIC after COMMON_NVCC_FLAGS dropped", "stages/frontends/torch_flags.py",
             "nvcc=(*common, *_after_common(tree))", "nvcc=tuple(common)", TORCH),
    Mutation("torch: the shell's quotes kept on -fPIC", "stages/frontends/torch_flags.py",
             "return [part for word in words for part in shlex.split(word)]",
             "return list(words)", TORCH),
    Mutation("torch: the standard added over the case's own", "stages/frontends/torch_flags.py",
             'if self.std is None or any(f.startswith("-std=") for f in flags):',
             "if self.std is None:", TORCH),
    Mutation("torch: the extension's name define missed", "stages/frontends/torch_flags.py",
             "            names_extension = True  # `define = f'-DTORCH_EXTENSION_NAME={name}'`",
             "            pass", TORCH),
    Mutation("torch: Python's headers left off", "stages/frontends/torch_extension.py",
             "*job.env.include_dirs,\n                                   *python.include_dirs)]",
             "*job.env.include_dirs)]", TORCH),
    Mutation("torch: the binding compiled without torch's defines",
             "stages/frontends/torch_extension.py",
             "*flags.with_std([*cxx_own, *defines])", "*flags.with_std(cxx_own)", TORCH),
    Mutation("torch: a second arch beside the case's own", "stages/frontends/torch_extension.py",
             "any(f.startswith(_ARCH_FLAGS) for f in nvcc_own)", "False", TORCH),
    # How a group of cells that differ only in arch is compiled (issue 72).
    Mutation("strategy: threads counted into the compile key", "stages/cell/job.py",
             "    threads: int = field(default=1, metadata=AFTER_COMPILE)\n",
             "    threads: int = 1\n", STRATEGY),
    Mutation("strategy: --threads given to the toolkit before it",
             "orchestrator/compile_strategy.py",
             "return Version(job.env.toolkit) >= Version(first)",
             "return Version(job.env.toolkit) > Version(first)", STRATEGY),
    Mutation("strategy: more threads than the group has archs",
             "orchestrator/compile_strategy.py",
             "return max(1, min(archs, 1 + max(0, self.idle() - self.waiting())))",
             "return max(1, 1 + max(0, self.idle() - self.waiting()))",
             STRATEGY),
    Mutation("strategy: the cores a group's nvcc took never given back",
             "orchestrator/compile_strategy.py",
             "                self._busy -= threads - 1\n", "                pass\n", STRATEGY),
    Mutation("strategy: a split's extra host passes not counted",
             "orchestrator/compile_strategy.py",
             "            work += (SPLIT_COST - 1) * whole\n", "", STRATEGY),
    Mutation("strategy: a split cell costed at its share alone",
             "orchestrator/compile_strategy.py",
             "apart = SPLIT_COST * max(expected(c) for c in group)",
             "apart = max(expected(c) for c in group)", STRATEGY),
    Mutation("strategy: --compile-strategy apart still groups",
             "orchestrator/compile_strategy.py",
             "        return [[cell] for cell in cells]\n", "        pass\n", STRATEGY),
    Mutation("strategy: grouped splits as auto does", "orchestrator/compile_strategy.py",
             'if strategy == "auto" else groups', 'if strategy != "apart" else groups',
             STRATEGY),
    # Since which arch a name exists (issue 71, point 1).
    Mutation("arch search: the cell's own arch counted newer", "stages/compile/arch_guard.py",
             "if parsed.capability > mine and not parsed.suffix:",
             "if parsed.capability >= mine and not parsed.suffix:", ARCH),
    Mutation("arch search: arch-specific targets tried as newer archs",
             "stages/compile/arch_guard.py",
             "if parsed.capability > mine and not parsed.suffix:",
             "if parsed.capability > mine:", ARCH),
    Mutation("arch search: the oldest newer arch skipped", "stages/compile/arch_guard.py",
             "    for arch in newer:\n        text = newest",
             "    for arch in newer[1:]:\n        text = newest", ARCH),
    Mutation("arch search: NVRTC compiles again with less than the failed compile's time",
             "stages/compile/arch_guard.py", "max(1.0, each)", "1.0", ARCH),
    # Since which CCCL release (issue 71, point 2).
    Mutation("CCCL: the cell's own release read again", "providers/first_release.py",
             "if after is not None and Version(release) <= after:",
             "if after is not None and Version(release) < after:", FIRST),
    Mutation("CCCL: a lookup kept without its release", "providers/first_release.py",
             'return f"{lack.kind}:{lack.name}@{release}"',
             'return f"{lack.kind}:{lack.name}"', FIRST),
    Mutation("CCCL: an incomplete wheel taken at its word", "providers/first_release.py",
             "            return None, version\n", "            return False, version\n",
             FIRST),
    Mutation("CCCL: one matrix's lookups served to another's releases",
             "providers/first_release.py",
             "if found is None or found.releases != sorted(releases, key=Version):",
             "if found is None:", FIRST),
    # The diagnosis rules of issue 71.
    Mutation("diagnosis: the measured finding tried after the compiler's words",
             "record/diagnose.py", "found = _from_details(stage.details, message)",
             "found = None", DIAGNOSIS),
    Mutation("diagnosis: an arch rule's fix without its __CUDA_ARCH__ value",
             "record/diagnose.py",
             'values.setdefault("arch_number", _arch_number(values["arch"]))', "pass",
             DIAGNOSIS),
    # The python axis (issue 69, item 2): its declaration and its multiplication rule.
    Mutation("python: the axis multiplies every frontend's cells", "config/plan.py",
             "    if not spec_includes_python:\n        return [None]\n", "", PYTHON),
    Mutation("python: the installed Python's cell given an id of its own", "config/plan.py",
             "None if p == INSTALLED else p for p in wanted", "p for p in wanted", PYTHON),
    Mutation("python: a variant's Pythons not narrowed to the tier's", "config/plan.py",
             "if not tier.pythons or p in tier.pythons", "if True", PYTHON),
    Mutation("python: the declared shape of a value left unchecked", "config/declarations.py",
             "        if self.pattern is not None:\n", "        if False:\n", PYTHON),
    Mutation("python: a tier's value not read by its declaration", "config/matrix.py",
             "            refused = TIER.key(PYTHON).refusal(pythons)\n",
             "            refused = None\n", PYTHON),
    Mutation("python: the key taken on a frontend without Python's headers", "config/corpus.py",
             "if not registered()[frontend].python_headers:", "if False:", PYTHON),
    Mutation("python: the headers' release left out of the compile key",
             "orchestrator/compile_cache.py", "    if job.python_headers is not None:\n",
             "    if False:\n", PYTHON),
    # Environments prepared ahead of their cells (issue 72).
    Mutation("prefetch: every worker passes the schedule's head over", "orchestrator/prefetch.py",
             "                    if not self._head_awaited:\n", "                    if False:\n",
             PREFETCH),
    Mutation("prefetch: a group ready when any of its needs is", "orchestrator/prefetch.py",
             "return all(self._done[need].done()", "return any(self._done[need].done()",
             PREFETCH),
    Mutation("prefetch: one lock for every environment", "orchestrator/environments.py",
             "return self._locks.setdefault(key, threading.Lock())",
             'return self._locks.setdefault("all", threading.Lock())', PREFETCH),
    Mutation("strategy: cores a waiting group will take given to --threads",
             "orchestrator/compile_strategy.py", "1 + max(0, self.idle() - self.waiting())",
             "1 + self.idle()", STRATEGY),
    Mutation("prefetch: the head waited for however short", "orchestrator/prefetch.py",
             "return self._cost(head) + self._cost(group) <= self._pending_cost / self._workers",
             "return False", PREFETCH),
    Mutation("prefetch: pending cost not lowered as groups are taken", "orchestrator/prefetch.py",
             "self._pending_cost -= self._cost(group)", "pass", PREFETCH),
    Mutation("prefetch: Debian's nvcc after the wheels", "providers/toolkits.py",
             "            env = self._wheels(version)\n"
             "            unpacked = unpacking.exception()",
             "            unpacked = unpacking.exception()\n"
             "            env = self._wheels(version)",
             PREFETCH),
    Mutation("prefetch: CuPy prepared for cells without a GPU", "orchestrator/cell_jobs.py",
             "if frontend(cell.frontend).needs_gpu_to_compile and not self.device.present:",
             "if False:", PREFETCH),
    Mutation("prefetch: cutlass_torch installed apart from cutlass_python", "providers/wheels.py",
             "named = name if name == \"cutlass\" else _install_named_by(matrix, name)",
             "named = name", ("tests/unit/test_shared_installs.py",)),
    Mutation("tls: the system's certificates loaded for every request",
             "common/package_index.py",
             "else host_addresses.default_context()",
             "else ssl._create_default_https_context()", ("tests/unit/test_index_tls.py",)),
    Mutation("tls: one context for every host a request reaches", "common/package_index.py",
             "        return _context(url)", "        return self._context  # type: ignore",
             ("tests/unit/test_index_tls.py",)),
    Mutation("dns: a host looked up for every connection", "common/host_addresses.py",
             "    return found[1] if time.monotonic() - found[0] < lasts else None",
             "    return None", ("tests/unit/test_host_addresses.py",)),
    Mutation("dns: a dead address kept", "common/host_addresses.py",
             "    forget(host, port)\n    raise failure", "    raise failure",
             ("tests/unit/test_host_addresses.py",)),
    # Only what a signature covers is read, and every answer within its bound (issue 79,
    # points 1 and 2): each mistake that would undo either, the walks of the package too.
    Mutation("signed text: the release file read around the reader", "providers/debian.py",
             '    return verified_text(signed, KEYRING, f"Debian {suite}\'s InRelease")',
             '    verified_text(signed, KEYRING, f"Debian {suite}\'s InRelease")\n'
             "    return signed.decode()", SIGNED),
    Mutation("signed text: text outside the signed block taken", "common/signed_text.py",
             "    _one_signed_block(signed, what)\n", "", SIGNED),
    Mutation("signed text: the file's bytes handed on, not gpgv's", "common/signed_text.py",
             "            text = handle.read(len(signed) + 1)",
             "            text = signed or handle.read()", SIGNED),
    Mutation("bounded fetch: an answer read whole, then measured", "common/bounded_fetch.py",
             "            while block := _next_block(answer, min(BLOCK_BYTES, max_bytes + 1 - "
             "size)):\n                blocks.append(block)",
             "            while block := answer.read():\n                blocks.append(block)",
             FETCH),
    Mutation("bounded fetch: package indexes opened around the bounded reader",
             "common/package_index.py",
             '        got = bounded_fetch.fetch(authorized(url, headers), MAX_PAGE_BYTES, '
             '"any index page",\n                                  timeout, _handlers())',
             "        with urllib.request.build_opener(*_handlers()).open(\n"
             "                authorized(url, headers), timeout=timeout) as opened:\n"
             "            got = bounded_fetch.Answer(opened.status, dict(opened.headers), "
             "opened.read())", FETCH),
    Mutation("bounded fetch: a .deb read past its stanza's Size", "providers/debian.py",
             "deb, int(size),", "deb, 1 << 40,", FETCH),
    Mutation("interrupt: a preparation ending after the interrupt is a failure",
             "common/interruption.py",
             "                signal_group(process, signal.SIGKILL)\n    if _interrupted:\n"
             "        raise KeyboardInterrupt\n",
             "                signal_group(process, signal.SIGKILL)\n",
             ("tests/unit/test_interruption.py",)),
    Mutation("interrupt: a preparation in the run's own group", "common/interruption.py",
             "start_new_session=True, **options", "**options",
             ("tests/unit/test_interruption.py",)),
    # The run's --run-timeout bounds its preparations and look-ups (issue 79, break 7).
    Mutation("run timeout: a preparation stopped at the deadline taken for its exit",
             "common/interruption.py",
             "        raise KeyboardInterrupt\n    stop_if_out_of_time()\n\n\ndef run_preparation(",
             "        raise KeyboardInterrupt\n\n\ndef run_preparation(", TIMEOUT),
    Mutation("run timeout: a request waits its own timeout past the run's",
             "common/bounded_fetch.py",
             "open(request, timeout=time_left(timeout)) as answer:\n            said =",
             "open(request, timeout=timeout) as answer:\n            said =", TIMEOUT),
    Mutation("run timeout: the since-release look-up goes on past the deadline",
             "providers/first_release.py",
             "                except RunOutOfTime:\n                    raise", "", TIMEOUT),
    Mutation("run timeout: an environment the limit stopped is the run's failure",
             "orchestrator/runner.py", "if why != stopped}", "}", TIMEOUT),
    # A run's --out is cleared only where an earlier run wrote it (issue 79, break 6).
    Mutation("out: a folder holding a project's files taken as --out", "common/removal.py",
             "    if others:\n", "    if False:\n", ("tests/unit/test_out_folder.py",)),
    # repro on genuine records (issue 79, also noticed).
    Mutation("repro: a host compiler by name refused", "commands/repro.py",
             "by_name = _HOST_COMPILER.match(words[0]) is not None", "by_name = False",
             REPRO),
    Mutation("repro: a link reads the record's objects", "commands/repro.py",
             "            kept.append(made.get(word, word))", "            kept.append(word)",
             REPRO),
    Mutation("repro: --cache not read", "commands/repro.py",
             "lambda: cases_here(args), args.cache)", "lambda: cases_here(args))", REPRO),
    Mutation("repro: a case folder named twice read twice", "commands/selection.py",
             "    folders = tuple({p.resolve(): p for p in folders}.values())\n", "", REPRO),
    Mutation("locks: two threads of a run told another process holds the folder",
             "common/locks.py", "    if not ours.acquire(timeout=timeout_s):",
             "    if not ours.acquire(timeout=0.0001) and False:",
             ("tests/unit/test_locks.py",)),
    # A budget's limit is judged by a figure, or says why it cannot be (issue 69, point 4).
    Mutation("budget: a limit with no figure passes", "stages/inspect/budgets.py",
             "# a limit left unjudged passed as if kept\n",
             "# a limit left unjudged passed as if kept\n                continue\n", BUDGET),
    Mutation("budget: ptxas's spills joined from another arch", "stages/inspect/budgets.py",
             'spills = {(str(p.get("kernel")), str(p.get("arch"))): p for p in ptxas}',
             'spills = {(str(p.get("kernel")), str(record.get("arch"))): p for p in ptxas '
             "for record in resources}", BUDGET),
    # Issue 79: a case-named path made around the one home (common/confined.py).
    Mutation("confined: torch-extension's sources joined to the case folder around the home",
             "stages/frontends/torch_extension.py",
             'case_path(s, job.case_folder) for s in _listed(job, "sources")',
             'str(Path(job.case_folder) / s) for s in _listed(job, "sources")', CONFINED),
    Mutation("confined: the reader lets a frontend's path options through", "config/corpus.py",
             'options.update(self.option_paths(f"{where}.options", options, frontend, '
             "directory))", "options.update({})", CONFINED),
    Mutation("confined: a line marker's header read wherever it lies",
             "stages/compile/arch_guard.py",
             "    if not inside(path, list(readable) or [base]):\n        return None\n", "",
             ARCH),
    Mutation("confined: a header name that climbs is looked up", "providers/first_release.py",
             'return Lacking("header", name) if plain_relative(name) else None',
             'return Lacking("header", name)', FIRST),
    # A cell's processes get the cell environment, and a stage record masks what one
    # printed (issue 79, break 5).
    Mutation("cell environment: a cell's process handed the run's environment",
             "stages/frontends/torch_extension.py",
             'env=cell_environment({"PYTHONPATH": str(package.parent)}))',
             'env={**os.environ, "PYTHONPATH": str(package.parent)})', CELL_ENVIRONMENT),
    Mutation("cell environment: a build's tool run inheriting the run's environment",
             "stages/process/limits.py",
             "env=env if env is not None else cell_environment(), cwd=cwd,",
             "env=env, cwd=cwd,", CELL_ENVIRONMENT),
    Mutation("cell environment: a stage record's log kept unmasked", "stages/cell/result.py",
             'for name in ("message", "log", "accident", "built_alone"):',
             'for name in ("message", "accident", "built_alone"):', CELL_ENVIRONMENT),
    # Every line the tool prints goes through common/log_line.py (issue 79, break 4): a
    # module printing on its own, and the line's rule losing `##[`, each caught.
    Mutation("log line: validate prints a warning on its own", "commands/validate.py",
             "        say(warning, invocation.console)\n",
             "        invocation.console.print(warning, markup=False)\n", LOG_LINE),
    Mutation("log line: `##[` left in a line", "common/log_line.py",
             r'    shown = _V1_COMMAND.sub(r"\\x23", shown)' + "\n", "", LOG_LINE),
    # A cell's verdict at its boundaries (record/verdict.py; issue 80: the first survived).
    Mutation("verdict: a failure expected where no GPU ran it judged xpass", "record/verdict.py",
             "and _order(wanted) >= _order(stage):", "and _order(wanted) > _order(stage):",
             VERDICT),
    Mutation("verdict: a cell whose first stage was skipped judged a pass", "record/verdict.py",
             'if status == "skipped" and not reached:', 'if status == "skipped" and reached:',
             VERDICT),
    Mutation("verdict: an expected hang judged as a tool's error", "record/verdict.py",
             'if status == "timeout" and expectation.outcome == "timeout":',
             'if status == "timeout" and expectation.outcome == "fail":', VERDICT),
    Mutation("verdict: a failure where a hang was expected judged xfail", "record/verdict.py",
             'if expectation.outcome != "fail":', 'if expectation.outcome == "pass":',
             VERDICT),
    # The verdict's rules that read outcomes alone (record/verdict_rules.py, issue 80).
    Mutation("verdict rules: --fail-on never fails a run with a failed cell",
             "record/verdict_rules.py", '    if fail_on == "never":\n        return 0\n', "",
             VERDICT_RULES),
    Mutation("verdict rules: a flaky cell counted a new failure", "record/verdict_rules.py",
             "new_failure=fails_anew and not flaky", "new_failure=fails_anew",
             VERDICT_RULES),
    Mutation("verdict rules: a cell that failed and fails still counted fixed",
             "record/verdict_rules.py",
             "fixed = recorded and before in FAILING and after in WORKING",
             "fixed = recorded and before in FAILING", VERDICT_RULES),
    Mutation("verdict rules: a shard's unprepared toolkit fails its run",
             "record/verdict_rules.py", 'return fail_on != "never"', "return True",
             VERDICT_RULES),
    # Issue 80's verdict, groupings and stage sequence, made again by a reviewer (each
    # survived the unit lane until its test came).
    Mutation("verdict: an expected warning checked on a pass alone", "record/verdict.py",
             "    if verdict.outcome in WORKING:\n        return _warned",
             '    if verdict.outcome == "pass":\n        return _warned',
             ("tests/unit/test_verdict.py",)),
    Mutation("junit: a tool's error written as the code's failure", "record/outcomes.py",
             'JUNIT_FAILURES: frozenset[Outcome] = frozenset({"fail", "xpass"})',
             'JUNIT_FAILURES: frozenset[Outcome] = frozenset({"fail", "error", "xpass"})',
             ("tests/unit/test_junit.py",)),
    Mutation("sequence: a load that could not be done lets the run go on",
             "stages/cell/sequence.py",
             'return ended(stage) or (stage.stage in GPU_STAGES and stage.status != "ok")',
             'return ended(stage) or (stage.stage in GPU_STAGES and stage.status == "failed")',
             PIPELINE),
    Mutation("outcomes: an unexpected pass not among the unexpected", "record/outcomes.py",
             'UNEXPECTED_OUTCOMES: frozenset[Outcome] = frozenset({"fail", "error", "xpass"})',
             'UNEXPECTED_OUTCOMES: frozenset[Outcome] = frozenset({"fail", "error"})',
             ("tests/unit/test_unexpected_order.py",)),
    Mutation("symbols: an error ranked worse than a failure", "reports/symbols.py",
             '"fail": OutcomeLook("#cf222e", "f", "{n} failed", 0),\n'
             '    "error": OutcomeLook("#8250df", "e", "{n} errors", 1),',
             '"fail": OutcomeLook("#cf222e", "f", "{n} failed", 1),\n'
             '    "error": OutcomeLook("#8250df", "e", "{n} errors", 0),',
             ("tests/unit/test_unexpected_order.py",)),
    Mutation("outcomes: the live bar says every skip", "record/outcomes.py",
             'QUIET: frozenset[Outcome] = frozenset({"pass", "xfail", "skip"})',
             'QUIET: frozenset[Outcome] = frozenset({"pass", "xfail"})',
             ("tests/unit/test_progress_log.py",)),
    # A GPU's servers (issue 81), made again by a reviewer.
    Mutation("gpu slots: a server that died while idle not started again",
             "orchestrator/executors/gpus.py",
             "if self.process is not None and self.process.poll() is None:\n            return",
             "if self.process is not None:\n            return",
             ("tests/unit/test_gpu_pool.py",)),
    Mutation("process memory: the first process the GPU lists taken for this one",
             "stages/device/process_memory.py", "if process.pid == pid:", "if True:",
             ("tests/unit/test_process_memory.py",)),
    Mutation("process memory: a process NVML gives no figure for read as holding nothing",
             "stages/device/process_memory.py",
             "return None if used is None else int(used)", "return int(used or 0)",
             ("tests/unit/test_process_memory.py",)),
    # A build case's build kept in the cache (issue 82, item 8), made again by a reviewer.
    Mutation("build cache: a build the run stopped kept", "orchestrator/build_cache.py",
             'if not self.enabled or stage.stage != "compile" or stage.accident \\\n'
             "                or stage.status not in KEPT_STATUSES:",
             'if not self.enabled or stage.stage != "compile":',
             ("tests/unit/test_build_cache_entries.py",)),
    Mutation("build cache: a built tree's links followed", "orchestrator/build_cache.py",
             "shutil.copytree(tree, staging / BUILD_SOURCE, symlinks=True)",
             "shutil.copytree(tree, staging / BUILD_SOURCE)",
             ("tests/unit/test_build_cache_entries.py",)),
    Mutation("compile cache: a kept finding written over by a later look-up",
             "orchestrator/compile_cache.py",
             "        if stage is None or name in stage.details:\n            return False\n",
             "        if stage is None:\n            return False\n",
             ("tests/unit/test_compile_cache_findings.py",)),
    Mutation("CCCL: an earlier run's could-not-look kept beside this run's finding",
             "providers/first_release.py",
             "details = {k: v for k, v in stages[0].details.items() if k != SINCE_RELEASE_UNKNOWN}",
             "details = dict(stages[0].details)", FIRST),
    Mutation("verdict: CUDA's rule taken for a refusal the driver did not confirm",
             "record/verdict.py",
             'or prediction.get("predicted") != "refused" or not prediction.get("agrees"):',
             'or prediction.get("predicted") != "refused":', ("tests/unit/test_verdict.py",)),
)


def survives(mutation: Mutation, work: Path, lane: bool = False) -> bool:
    """Whether the tests pass with the mutation made in a copy of the package at `work`:
    its own tests, or with `lane` the whole unit lane (is any test there catching it?)."""
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
    tests = ("tests/unit", "-n", "2") if lane else mutation.tests
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           *tests], cwd=REPO, env=env, capture_output=True, text=True)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="name the mutations and stop")
    parser.add_argument("--only", metavar="TEXT",
                        help="only the mutations whose name holds TEXT (case-insensitive)")
    parser.add_argument("--lane", action="store_true",
                        help="run the whole unit lane (tests/unit, 2 workers) on each mutation, "
                             "not only its own tests")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or args.only.lower() in m.name.lower()]
    if args.list:
        print("\n".join(m.name for m in chosen))
        return 0
    if not chosen:
        print(f"no mutation's name holds {args.only!r}", file=sys.stderr)
        return 2
    survived = []
    with tempfile.TemporaryDirectory(prefix="cudamatrix-mutations-") as folder:
        for number, mutation in enumerate(chosen, 1):
            lived = survives(mutation, Path(folder), args.lane)
            print(f"[{number}/{len(chosen)}] {mutation.name}: "
                  f"{'SURVIVED (no test failed)' if lived else 'caught'}", flush=True)
            if lived:
                survived.append(mutation.name)
    print(f"{len(chosen) - len(survived)} caught, {len(survived)} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
