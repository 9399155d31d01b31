"""Rehearse a GitHub Actions caller of cudamatrix's reusable workflow on one machine: the
reusable workflow's own jobs (plan -> every shard of the plan's matrix -> merge), their
`run:` steps executed by bash with the inputs, contexts and files GitHub would give them.

What GitHub's own actions do is done here in their place: checkout copies the repository,
the caches point at this machine's caches (as a restored cache would), upload and download
move the artifacts between jobs' folders. Expressions are evaluated by a small parser of
GitHub's expression language (the operators and functions the workflow uses; anything else
is an error, so the rehearsal cannot silently read a step differently from GitHub).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
REUSABLE = REPO / ".github" / "workflows" / "cudamatrix.yml"

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|"
                    r"(?P<op>==|!=|&&|\|\||[!(),])|(?P<name>[A-Za-z_][\w.\-*]*))")


class Expression:
    """GitHub's expression syntax, as far as the workflows here use it."""

    def __init__(self, text: str, context: dict[str, Any]) -> None:
        self.tokens: list[tuple[str, str]] = []
        at = 0
        while at < len(text.rstrip()):
            match = _TOKEN.match(text, at)
            if not match:
                raise ValueError(f"cannot read expression {text!r} at {at}")
            kind = next(k for k, v in match.groupdict().items() if v is not None)
            self.tokens.append((kind, match[kind]))
            at = match.end()
        self.context = context
        self.at = 0

    def value(self) -> Any:
        result = self._or()
        if self.at != len(self.tokens):
            raise ValueError(f"unread tokens {self.tokens[self.at:]}")
        return result

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _take(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.at += 1
            return True
        return False

    def _or(self) -> Any:
        left = self._and()
        while self._take("||"):
            right = self._and()
            left = left if truthy(left) else right
        return left

    def _and(self) -> Any:
        left = self._compare()
        while self._take("&&"):
            right = self._compare()
            left = right if truthy(left) else left
        return left

    def _compare(self) -> Any:
        left = self._unary()
        for op in ("==", "!="):
            if self._take(op):
                equal = loose_equal(left, self._unary())
                return equal if op == "==" else not equal
        return left

    def _unary(self) -> Any:
        if self._take("!"):
            return not truthy(self._unary())
        if self._take("("):
            inner = self._or()
            assert self._take(")"), "missing )"
            return inner
        kind, text = self.tokens[self.at]
        self.at += 1
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if self._take("("):
            args = []
            if not self._take(")"):
                args.append(self._or())
                while self._take(","):
                    args.append(self._or())
                assert self._take(")"), "missing )"
            return call(text, args)
        return lookup(self.context, text)


def call(name: str, args: list[Any]) -> Any:
    if name in ("cancelled",):
        return False
    if name in ("success", "always"):
        return True
    if name == "fromJSON":
        return json.loads(args[0])
    if name == "format":
        return re.sub(r"\{(\d+)\}", lambda m: text_of(args[1 + int(m[1])]), args[0])
    if name == "hashFiles":
        return "rehearsal"
    raise ValueError(f"function {name}() is not rehearsed")


def lookup(context: dict[str, Any], dotted: str) -> Any:
    value: Any = context
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def truthy(value: Any) -> bool:
    return value not in (None, False, 0, "", 0.0)


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return float(value)
    if value is None or value == "":
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def loose_equal(a: Any, b: Any) -> bool:
    if type(a) is type(b) or (isinstance(a, str) and isinstance(b, str)):
        return bool(a.lower() == b.lower()) if isinstance(a, str) else bool(a == b)
    return _number(a) == _number(b)


def text_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def evaluate(template: Any, context: dict[str, Any]) -> Any:
    """A workflow value with its ${{ }} filled in; a whole-value expression keeps its type."""
    if not isinstance(template, str):
        return template
    whole = re.fullmatch(r"\$\{\{(.*?)\}\}", template.strip(), re.S)
    if whole and "${{" not in whole[1]:
        return Expression(whole[1], context).value()
    return re.sub(r"\$\{\{(.*?)\}\}",
                  lambda m: text_of(Expression(m[1], context).value()), template, flags=re.S)


def condition(text: Any, context: dict[str, Any]) -> bool:
    if text is None:
        return True
    if isinstance(text, bool):
        return text
    inner = str(text).strip()
    if inner.startswith("${{"):
        inner = inner[3:-2]
    return truthy(Expression(inner, context).value())


def _outputs(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT / $GITHUB_ENV: name=value lines and name<<DELIMITER blocks."""
    found: dict[str, str] = {}
    lines = path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            found[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, _, value = line.partition("=")
        found[name] = value
        i += 1
    return found


@dataclass
class Rehearsal:
    """One rehearsal's folders: the repository the caller lives in, where jobs run, where
    artifacts go, and the caches a restored actions/cache would give."""

    repository: Path
    work: Path
    event: str = "pull_request"
    python: str = sys.executable
    caches: dict[str, Path] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    # Which run of the workflow this is (github.run_attempt): a re-run of failed jobs is 2.
    attempt: int = 1
    # A job's run step that fails after its command (a runner lost mid-job), by job label.
    sabotage: set[str] = field(default_factory=set)
    secrets: dict[str, str] = field(default_factory=dict)
    # The cache service: every key saved, and each key's outcome (GitHub refuses a key that
    # exists, as upload-artifact v4 refuses an artifact name a run already has).
    saved_caches: list[str] = field(default_factory=list)
    # Each job's outcome, by label (shard-0, shard-1, ...): what a re-run re-runs.
    job_outcomes: dict[str, bool] = field(default_factory=dict)
    _caller: tuple[Path, dict[str, Any] | None, dict[str, Any] | None] | None = None
    _merge_outputs: dict[str, str] = field(default_factory=dict)
    _needs: dict[str, Any] = field(default_factory=dict)

    def github(self) -> dict[str, Any]:
        event: dict[str, Any] = {"repository": {"default_branch": "main"}}
        if self.event == "pull_request":
            event["pull_request"] = {"number": 1, "head": {"repo": {"full_name": "me/lib"}}}
        return {"event_name": self.event, "repository": "me/lib", "repository_owner": "me",
                "ref": "refs/heads/main", "event": event, "token": "rehearsal",
                "workflow": "CUDA matrix", "run_attempt": str(self.attempt), "run_id": "7",
                "server_url": "https://github.com"}

    def rerun_failed(self) -> Path:
        """GitHub's "Re-run failed jobs": the next attempt runs the jobs that failed and
        those that need them, beside the artifacts every attempt so far uploaded."""
        assert self._caller is not None, "run_caller first"
        self.attempt += 1
        self.sabotage = set()
        failed = {label for label, ok in self.job_outcomes.items() if not ok}
        return self.run_caller(*self._caller, only=failed)

    def run_caller(self, caller: Path, overrides: dict[str, Any] | None = None,
                   dispatch: dict[str, Any] | None = None, only: set[str] | None = None
                   ) -> Path:
        """Every job of the reusable workflow the caller's job uses (with `only`, the jobs of
        those labels and every job that needs one, as a re-run); the merged site."""
        self._caller = (caller, overrides, dispatch)
        document = yaml.safe_load(caller.read_text())
        (job,) = [j for j in document["jobs"].values() if "uses" in j]
        uses = job["uses"]
        if not (uses.startswith("./.github/workflows/cudamatrix.yml")
                or re.fullmatch(r"[\w.-]+/[\w.-]+/\.github/workflows/cudamatrix\.yml@\S+", uses)):
            raise ValueError(f"{caller}: uses {uses}, not cudamatrix's reusable workflow")
        reusable = yaml.safe_load(REUSABLE.read_text())
        declared = reusable[True]["workflow_call"]["inputs"]  # YAML reads `on:` as True
        caller_context = {"github": self.github(), "inputs": dispatch or {}}
        given = {k: evaluate(v, caller_context) for k, v in (job.get("with") or {}).items()}
        unknown = set(given) - set(declared)
        if unknown:
            raise ValueError(f"{caller}: with: {sorted(unknown)} are no inputs of {REUSABLE}")
        inputs = {name: spec.get("default") for name, spec in declared.items()}
        for name, value in given.items():
            if value not in (None, "") or declared[name].get("type") != "string":
                inputs[name] = value
        inputs.update(overrides or {})
        context: dict[str, Any] = {"github": self.github(), "inputs": inputs, "needs": {},
                                   "secrets": self.secrets}
        context["env"] = {k: text_of(evaluate(v, context))
                          for k, v in (reusable.get("env") or {}).items()}
        jobs = reusable["jobs"]
        for name in ("plan", "gate", "shard", "merge", "pages"):
            spec = jobs[name]
            if not condition(spec.get("if"), context):
                self.results[name] = "skipped"
                continue
            failed = any(self.results.get(n) == "failure" for n in spec.get("needs", [])
                         if isinstance(spec.get("needs"), list))
            if failed and "if" not in spec:
                self.results[name] = "skipped"
                continue
            if name == "pages":
                self.results[name] = "would deploy"
                continue
            strategy = spec.get("strategy", {}).get("matrix")
            runs = [None] if strategy is None else evaluate(strategy, context)["include"]
            outcomes, outputs, ran = [], {}, False
            for index, entry in enumerate(runs):
                label = f"{name}-{index}"
                if only is not None and label not in only and name != "merge":
                    outcomes.append(self.job_outcomes[label])  # kept, as GitHub keeps it
                    continue
                ok, outputs = self._job(label, spec, context, entry)
                self.job_outcomes[label] = ok
                outcomes.append(ok)
                ran = True
            self.results[name] = "success" if all(outcomes) else "failure"
            if not ran and name in self._needs:  # a job not re-run keeps its outputs
                context["needs"][name] = self._needs[name]
                continue
            context["needs"][name] = self._needs[name] = {"outputs": {
                k: text_of(evaluate(v, {**context, "steps": outputs}))
                for k, v in (spec.get("outputs") or {}).items()}, "result": self.results[name]}
            if name == "merge":
                self._merge_outputs = context["needs"][name]["outputs"]
        return self.work / self._folder("merge-0") / "site"

    def _folder(self, label: str) -> str:
        """A job's folder: one per attempt, as each attempt is a fresh runner."""
        return label if self.attempt == 1 else f"{label}.attempt-{self.attempt}"

    def outputs(self) -> dict[str, str]:
        """The reusable workflow's `outputs`, as a caller's later job reads them."""
        reusable = yaml.safe_load(REUSABLE.read_text())
        declared = reusable[True]["workflow_call"].get("outputs") or {}
        merge = {"outputs": self._merge_outputs}
        return {name: text_of(evaluate(spec["value"], {"jobs": {"merge": merge}}))
                for name, spec in declared.items()}

    def _job(self, label: str, spec: dict[str, Any], context: dict[str, Any],
             matrix: dict[str, Any] | None) -> tuple[bool, dict[str, Any]]:
        workspace = self.work / self._folder(label)
        temp = self.work / f"{self._folder(label)}.temp"
        shutil.copytree(self.repository, workspace, symlinks=True,
                        ignore=shutil.ignore_patterns(".git"))
        temp.mkdir()
        job_env: dict[str, str] = {}
        steps: dict[str, Any] = {}
        context = {**context, "matrix": matrix or {}, "runner": {"temp": str(temp),
                                                                  "os": "Linux"},
                   "steps": steps}
        ok = True
        for step in spec["steps"]:
            local = {**context, "env": {**context["env"], **job_env}}
            wanted = step.get("if")
            if wanted is None and not ok:
                continue
            if not condition(wanted, local):
                continue
            env = {k: text_of(evaluate(v, local)) for k, v in (step.get("env") or {}).items()}
            if "run" in step:
                script = step["run"] + ("\nexit 1" if label in self.sabotage
                                        and step.get("name") == "Run the shard" else "")
                done, outputs, exported = self._run(script, workspace, temp,
                                                    {**local["env"], **env})
                job_env.update(exported)
            else:
                done, outputs = self._action(step, local, workspace, temp)
            if "id" in step:
                steps[step["id"]] = {"outputs": outputs}
            if not done and not step.get("continue-on-error"):
                ok = False
        return ok, steps

    def _run(self, script: str, workspace: Path, temp: Path, env: dict[str, str]
             ) -> tuple[bool, dict[str, str], dict[str, str]]:
        output, exported = temp / "output", temp / "env"
        output.write_text("")
        exported.write_text("")
        bin_dir = Path(self.python).parent
        variables = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env,
                     "GITHUB_OUTPUT": str(output), "GITHUB_ENV": str(exported),
                     "GITHUB_STEP_SUMMARY": str(temp / "summary.md"), "RUNNER_TEMP": str(temp),
                     "GITHUB_REPOSITORY": "me/lib", "GITHUB_REPOSITORY_OWNER": "me",
                     "GITHUB_EVENT_NAME": self.event, "GITHUB_ACTIONS": "true", "CI": "true",
                     # The rehearsal's runner has no container engine: a step never reaches
                     # (or drops the images of) the engine of the machine it runs on.
                     "DOCKER_HOST": f"unix://{temp}/no-docker.sock"}
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=workspace,
                              env=variables, capture_output=True, text=True, check=False)
        self.log.append(f"$ {script.strip()[:200]}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
                        f"(exit {done.returncode})")
        return done.returncode == 0, _outputs(output), _outputs(exported)

    def _action(self, step: dict[str, Any], context: dict[str, Any], workspace: Path,
                temp: Path) -> tuple[bool, dict[str, str]]:
        action = step["uses"].split("@")[0]
        given = {k: text_of(evaluate(v, context)) for k, v in (step.get("with") or {}).items()}
        artifacts = self.work / "artifacts"
        if action == "actions/setup-python":  # python is ours
            return True, {"python-path": self.python}
        if action in ("actions/checkout", "actions/deploy-pages"):
            return True, {}  # the job's folder is a copy of the repository
        if action in ("actions/cache", "actions/cache/restore"):
            # A restored cache: this machine's own caches, matched by the newest saved key
            # that starts with the key or a restore key, as GitHub matches them.
            for line in given["path"].split():
                name = Path(line).name
                if name in self.caches:
                    Path(line).symlink_to(self.caches[name])
            wanted = [given["key"], *given.get("restore-keys", "").split()]
            matched = next((key for prefix in wanted for key in reversed(self.saved_caches)
                            if key.startswith(prefix)), "")
            return True, {"cache-primary-key": given["key"], "cache-matched-key": matched,
                          "cache-hit": text_of(matched == given["key"])}
        if action == "actions/cache/save":
            if given["key"] in self.saved_caches:
                self.log.append(f"cache key {given['key']} exists: not saved (a warning)")
            else:
                self.saved_caches.append(given["key"])
            return True, {}
        if action == "actions/upload-artifact":
            paths = [workspace / p for p in given["path"].split()]
            present = [p for p in paths if p.exists()]
            if not present:
                return given.get("if-no-files-found") != "error", {}
            root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in present]))
            target = artifacts / given["name"]
            if target.exists() and given.get("overwrite") != "true":
                # upload-artifact v4: one name once per workflow run, whatever the attempt.
                self.log.append(f"upload-artifact: an artifact named {given['name']} exists")
                return False, {}
            for path in present:
                destination = target / path.relative_to(root)
                if path.is_dir():
                    shutil.copytree(path, destination, dirs_exist_ok=True)
                else:
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, destination)
            return True, {}
        if action == "actions/download-artifact":
            into = workspace / given["path"]
            into.mkdir(parents=True, exist_ok=True)
            for artifact in sorted(artifacts.iterdir()) if artifacts.exists() else []:
                if fnmatch(artifact.name, given["pattern"]):
                    shutil.copytree(artifact, into / artifact.name)
            return True, {}
        if action in ("EnricoMi/publish-unit-test-result-action",
                      "actions/upload-pages-artifact"):
            return (workspace / given.get("files", given.get("path", ""))).exists(), {}
        raise ValueError(f"action {action} is not rehearsed")
