"""Issue 80, item 2: a cell's verdict was decided in 7 modules and drawn in 10; each a place
a change to one rule missed the others. Now each thing has one home, by construction: the
walk below fails where a module outside it

- sets an outcome as a verdict (`outcome="pass"` into a record, `outcome = "fail"`, a
  `Verdict("xfail", ...)`, `{"outcome": "error"}`): record/verdict.py decides them;
- writes a grouping of outcomes (a tuple, set, list or frozenset of them: `in ("fail",
  "error")`): record/outcomes.py names them;
- maps an outcome, or what a cell did, to a symbol, a colour, a word or a rank (a dict
  literal keyed by them): reports/symbols.py is the one table every report reads;
- tests one of the verdict's rules: an outcome against a grouping (`outcome in FAILING`:
  whether attempts are flaky, whether a cell runs again, a new failure or a fix against a
  baseline, whether any cell fails the run), the --fail-on word (`fail_on == "never"`) or
  the number of retries against a count (`len(attempts) < retries`): record/verdict.py and
  the rules it keeps below the record (record/verdict_rules.py) decide them; a module that
  draws a record (a report, the progress line and bar) reads a grouping only to show it.

Then the walk's own check: each way around it, planted, caught."""

from __future__ import annotations

import ast
from pathlib import Path

import cudamatrix
from cudamatrix.record import outcomes
from cudamatrix.record.outcomes import OUTCOMES
from cudamatrix.reports.symbols import HAPPENINGS

# The package imported (a mutated copy's, under tests/mutations.py), not the file tree's.
PACKAGE = Path(cudamatrix.__file__).resolve().parent
VERDICT_HOME = "record/verdict.py"
GROUPING_HOME = "record/outcomes.py"
TABLE_HOME = "reports/symbols.py"
RULES_HOMES = frozenset({VERDICT_HOME, "record/verdict_rules.py"})
# The modules that draw a record: which outcomes they show as failing, keep quiet or mark
# is no verdict (a module below reports/ in the tree, or one of the two progress lines).
DRAWN_IN = ("reports/", "orchestrator/progress.py", "commands/progress_bar.py")
_OUTCOMES = frozenset(OUTCOMES)
_DRAWN = _OUTCOMES | frozenset(HAPPENINGS)
# outcomes.py's groupings by name (FAILING, UNEXPECTED_OUTCOMES, ...), read from it.
GROUPINGS = frozenset(name for name, value in vars(outcomes).items()
                      if isinstance(value, frozenset) and value and value <= _OUTCOMES)


def _word(node: ast.AST | None, words: frozenset[str] = _OUTCOMES) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) \
        and node.value in words


def _names(target: ast.AST) -> list[str]:
    """The names an assignment's target binds (`outcome`, `self.outcome`, `a, outcome`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Attribute):
        return [target.attr]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _names(element)]
    return []


def _holds_outcome(value: ast.AST) -> bool:
    return any(_word(node) for node in ast.walk(value))


def verdicts_set(tree: ast.AST) -> list[tuple[int, str]]:
    """Each place an outcome literal is set as a verdict."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else (
                node.func.id if isinstance(node.func, ast.Name) else "")
            # What a case expects is no verdict: Expectation(outcome="pass").
            if called != "Expectation" and any(k.arg == "outcome" and _word(k.value)
                                               for k in node.keywords):
                found.append((node.lineno, "outcome=<an outcome> in a call"))
            if called == "Verdict" and node.args and _word(node.args[0]):
                found.append((node.lineno, "a Verdict made"))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("outcome" in _names(t) for t in targets) and _holds_outcome(node.value):
                found.append((node.lineno, "outcome = <an outcome>"))
        elif isinstance(node, ast.Dict) and any(
                _word(key, frozenset({"outcome"})) and _word(value)
                for key, value in zip(node.keys, node.values, strict=True)):
            found.append((node.lineno, '{"outcome": <an outcome>}'))
    return found


def _is_literal_type(node: ast.Subscript) -> bool:
    return isinstance(node.value, ast.Name | ast.Attribute) and (
        getattr(node.value, "id", None) == "Literal" or getattr(node.value, "attr", "") ==
        "Literal")


def groupings(tree: ast.AST) -> list[tuple[int, str]]:
    """Each tuple, list or set literal of two or more outcomes (a frozenset's or set's
    argument among them); `Literal[...]` types are not groupings."""
    literal_types = {id(n.slice) for n in ast.walk(tree)
                     if isinstance(n, ast.Subscript) and _is_literal_type(n)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set) and id(node) not in literal_types \
                and len(node.elts) >= 2 and all(_word(e) for e in node.elts):
            found.append((node.lineno, "a grouping of outcomes"))
    return found


def symbol_maps(tree: ast.AST) -> list[tuple[int, str]]:
    """Each dict literal that maps two or more outcomes, or things a cell did, to a value
    written there (a symbol, a colour, a word, a rank)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            mapped = [key for key, value in zip(node.keys, node.values, strict=True)
                      if _word(key, _DRAWN) and isinstance(value, ast.Constant)]
            if len(mapped) >= 2:
                found.append((node.lineno, "an outcome mapped to what it is drawn as"))
    return found


def _identifiers(node: ast.AST) -> set[str]:
    """The names a piece of code reads: its names, attributes and string constants (a
    `getattr(args, "fail_on")` reads fail_on too)."""
    found: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            found.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            found.add(inner.attr)
        elif isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            found.add(inner.value)
    return found


def _grouping_names(tree: ast.AST) -> set[str]:
    """outcomes.py's groupings as this module may name them: their own names, a name
    imported `as` another, or one bound to a grouping (`UNEXPECTED = UNEXPECTED_OUTCOMES`)."""
    names = set(GROUPINGS)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {alias.asname for alias in node.names
                      if alias.name in GROUPINGS and alias.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name | ast.Attribute) \
                and (_identifiers(node.value) & names):
            names |= {name for target in node.targets for name in _names(target)}
    return names


def rules_tested(tree: ast.AST, drawn: bool = False) -> list[tuple[int, str]]:
    """Each place one of the verdict's rules is tested: an outcome against a grouping
    (unless the module `drawn` draws a record), the --fail-on word, or the number of
    retries against a count (an option's bound, `retries < 0`, is no verdict)."""
    groupings_here = _grouping_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        read = [_identifiers(operand) for operand in operands]
        if not drawn and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops) and any(
                isinstance(c, ast.Name | ast.Attribute) and (_identifiers(c) & groupings_here)
                for c in node.comparators):
            found.append((node.lineno, "an outcome tested against a grouping"))
        elif any(any("fail_on" in name for name in names) for names in read):
            found.append((node.lineno, "the --fail-on word tested"))
        elif any(any(name.endswith("retries") for name in names) for names in read) and \
                not any(isinstance(operand, ast.Constant) for operand in operands):
            found.append((node.lineno, "the number of retries tested against a count"))
    return found


def _modules() -> dict[str, ast.AST]:
    """The tool's modules (the known-bug corpus's scripts are the code under test)."""
    return {str(path.relative_to(PACKAGE)): ast.parse(path.read_text(), str(path))
            for path in sorted(PACKAGE.rglob("*.py")) if "data" not in path.parts}


def test_verdicts_are_set_in_verdict_py_alone() -> None:
    modules = _modules()
    elsewhere = [f"{name}:{line}: {what}" for name, tree in modules.items()
                 if name != VERDICT_HOME for line, what in verdicts_set(tree)]
    assert elsewhere == [], f"decide the outcome in {VERDICT_HOME}"
    assert verdicts_set(modules[VERDICT_HOME])  # the walk still sees its home


def test_outcome_groupings_are_named_in_outcomes_py_alone() -> None:
    modules = _modules()
    elsewhere = [f"{name}:{line}: {what}" for name, tree in modules.items()
                 if name != GROUPING_HOME for line, what in groupings(tree)]
    assert elsewhere == [], f"name the grouping in {GROUPING_HOME}"
    assert groupings(modules[GROUPING_HOME])


def test_every_report_draws_outcomes_from_the_one_table() -> None:
    modules = _modules()
    elsewhere = [f"{name}:{line}: {what}" for name, tree in modules.items()
                 if name != TABLE_HOME for line, what in symbol_maps(tree)]
    assert elsewhere == [], f"draw it from {TABLE_HOME}"


def test_the_verdicts_rules_are_tested_in_its_modules_alone() -> None:
    """Flaky attempts, a retry, a cell against a baseline and --fail-on: each decided in
    record/verdict.py or the rules it keeps in record/verdict_rules.py, where results.py,
    baseline.py, publishing.py and cell_runner.py once each decided their own."""
    modules = _modules()
    elsewhere = [f"{name}:{line}: {what}" for name, tree in modules.items()
                 if name not in RULES_HOMES
                 for line, what in rules_tested(tree, drawn=name.startswith(DRAWN_IN))]
    assert elsewhere == [], f"decide it in {' or '.join(sorted(RULES_HOMES))}"
    assert rules_tested(modules["record/verdict_rules.py"])  # the walk still sees its home


def test_the_walk_finds_each_way_around_the_homes() -> None:
    """The walk's own check: each bypass planted, caught on its line."""
    verdicts = "\n".join([
        "CellResult(cell=c, outcome='error', stage='compile')",
        "outcome = 'pass'",
        "outcome, reason = 'fail', 'does not load'",
        "self.outcome: Outcome = 'xfail'",
        "Verdict('skip', 'load', '', '', '')",
        "verdict.Verdict('xpass', 'load', '', '', '')",
        "said = {'outcome': 'error', 'stage': 'load'}",
        "replace(result, outcome='fail')",
        "outcome = 'fail' if broken else 'pass'",
    ])
    assert {line for line, _ in verdicts_set(ast.parse(verdicts))} == set(range(1, 10))
    assert verdicts_set(ast.parse(
        "StageResult('compile', 'error', said)\noutcome = result.outcome\n"
        "stage = 'pass'\nCellResult(outcome=verdict.outcome)\n"
        "Expectation(outcome='pass')")) == []

    grouped = "\n".join([
        "FAILING = frozenset({'fail', 'error'})",
        "x = r.outcome in ('fail', 'error')",
        "y = r.outcome not in ['pass', 'xfail', 'skip']",
        "WORKING = {'pass', 'xfail', 'xpass'}",
    ])
    assert {line for line, _ in groupings(ast.parse(grouped))} == {1, 2, 3, 4}
    assert groupings(ast.parse(
        "Outcome = Literal['pass', 'fail']\nENDS = ('error', 'timeout', 'crashed')\n"
        "x = r.outcome == 'skip'")) == []

    drawn = "\n".join([
        "GLYPHS = {'runs': '●', 'loads': '◑'}",
        "COLOURS = {'pass': '#2da44e', 'fail': '#cf222e'}",
        "order = {'fail': 0, 'error': 1, 'xpass': 2}",
        "codes = {'pass': 'p', 'skip': 's', '': '-'}",
    ])
    assert {line for line, _ in symbol_maps(ast.parse(drawn))} == {1, 2, 3, 4}
    assert symbol_maps(ast.parse(
        "x = {'run': 'runs', 'load': 'loads'}\ny = {'pass': counts['pass']}")) == []

    ruled = "\n".join([
        "from .outcomes import FAILING as BAD",
        "flaky = any(o in AS_EXPECTED for o, _ in said)",
        "again = result.outcome in outcomes.UNEXPECTED_OUTCOMES",
        "again = len(attempts) < self.options.retries",
        "new = after in FAILING and before not in FAILING",
        "code = 1 if any(r.outcome in BAD for r in results) else 0",
        "never = fail_on_of(args) != 'never'",
        "new = getattr(args, 'fail_on', None) == 'new'",
        "SHOWN = WORKING",
        "fixed = after in SHOWN",
    ])
    assert {line for line, _ in rules_tested(ast.parse(ruled))} == {2, 3, 4, 5, 6, 7, 8, 10}
    assert rules_tested(ast.parse(
        "fail_on = fail_on_of(args)\ncode = exit_status(fail_on, outcomes, None)\n"
        "checked = self.retries < 0\nx = r.outcome == 'skip'\ny = r.flaky\n"
        "z = stage in GPU_STAGES")) == []
    # A report draws a grouping (its failing cells listed): that decides nothing.
    assert rules_tested(ast.parse("failing = [r for r in results if r.outcome in FAILING]"),
                        drawn=True) == []
