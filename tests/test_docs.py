"""Every output the README and docs show is produced or checked here, so none can go stale.

A block of shown output is marked by an HTML comment on a line of its own before it (blank
lines between allowed), which says how it is checked:

- ``<!-- checked: output CMD -->`` before a fenced block: ``CMD`` runs from the repository root
  (``&&`` chains commands; ``{tmp}`` is a fresh temporary folder; ``phasebench`` and ``python``
  are this interpreter's) and the block must be an excerpt of what it prints: every run of lines
  between ``...`` lines appears, in order, exactly (trailing spaces aside). For a report that
  needs an expensive run (the demo), commit the run's ``report.json`` and mark the block
  ``output phasebench report FILE``: the report re-renders a saved JSON without recomputing.
- ``<!-- checked: numbers FILE TASK -->`` before a markdown table: ``FILE`` is a committed
  ``phasebench report --json`` file, and every cell of a row (the first cell names a run, alone
  or as the end of its name, e.g. ``mean-w8s4`` for ``phasebench-ref-mean-w8s4``) must be that
  run's ``TASK`` entry at the precision shown (see :data:`COLUMNS`).
- ``<!-- checked: power -->`` before a markdown table of ``phasebench power`` answers.
- ``<!-- checked: knobs -->`` before a markdown table: the task metadata knobs as declared in
  :mod:`phasebench.lmeval.metadata`.
- ``<!-- checked: next -->`` before a fenced block: the demo's closing commands
  (:func:`phasebench.demo.next_commands`).
- ``<!-- checked: results FILE -->`` before a markdown table of measured figures: ``FILE`` is a
  committed benchmark output (``benchmarks/results/...``), and every number of a row must be one
  the file prints, at the precision shown, in the file's header or in the block of the
  configuration the row's first cell names (``kv_131072``). A figure has one home: the table
  that carries this marker; other documents point to it.

Besides the marked blocks: every ``phasebench power ... # -> N base items`` comment in a
command block is recomputed, every ``from phasebench... import`` / ``from support... import`` in
a documented Python snippet must resolve, the prompt counts the docs state for the CI runs of a
real model are the test's own, and every repository path named in backticks exists.
"""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- checked: (?P<kind>[a-z]+)(?: (?P<arg>.*?))? -->$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclass(frozen=True)
class Shown:
    """One marked block: where it is, its marker and its lines (fence lines excluded)."""

    path: Path
    line: int
    kind: str
    arg: str
    lines: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(text: str) -> list[tuple[int, str, list[str]]]:
    """``(first line number, language, lines)`` of every fenced block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].rstrip() != "```":
                j += 1
            out.append((i + 1, m["lang"], lines[i + 1 : j]))
            i = j
        i += 1
    return out


def marked(paths: list[Path]) -> list[Shown]:
    """Every marked block of ``paths``: the fenced block or markdown table after a marker."""
    found = []
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            m = MARKER.match(line.strip())
            if not m:
                continue
            start = n + 1
            while start < len(lines) and not lines[start].strip():
                start += 1
            if start < len(lines) and FENCE.match(lines[start]):
                end = start + 1
                while end < len(lines) and lines[end].rstrip() != "```":
                    end += 1
                body = lines[start + 1 : end]
            else:
                end = start
                while end < len(lines) and lines[end].lstrip().startswith("|"):
                    end += 1
                body = lines[start:end]
            assert body, f"{path.relative_to(ROOT)}:{n + 1}: a marker with nothing after it"
            found.append(Shown(path, n + 1, m["kind"], (m["arg"] or "").strip(), tuple(body)))
    return found


# -- output of a command -------------------------------------------------------------------------


def run_commands(command: str, tmp: Path) -> str:
    """What ``command`` prints (stdout then stderr), run from the repository root."""
    printed = []
    for part in command.replace("{tmp}", str(tmp)).split("&&"):
        argv = shlex.split(part)
        if argv[0] == "phasebench":
            argv = [sys.executable, "-m", "phasebench", *argv[1:]]
        elif argv[0] == "python":
            argv = [sys.executable, *argv[1:]]
        else:
            raise AssertionError(f"only phasebench and python commands are run (got {argv[0]})")
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{part.strip()} failed: {done.stderr[-2000:]}"
        printed.append(done.stdout + done.stderr)
    return "\n".join(printed)


def excerpt_problem(shown: list[str], printed: str) -> str | None:
    """Why ``shown`` is not an excerpt of ``printed`` (None when it is): each run of lines
    between ``...`` lines must appear in order, line for line, and an excerpt that does not
    end with ``...`` ends where the printed block does (a blank line or the end of the output:
    an excerpt once stopped at the ``acc`` row of a table whose ``ci`` and ``n`` rows follow)."""
    have = [line.rstrip() for line in printed.splitlines()]
    chunks: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line.rstrip())
    at = 0
    for chunk in (c for c in chunks if c):
        for i in range(at, len(have) - len(chunk) + 1):
            if have[i : i + len(chunk)] == chunk:
                at = i + len(chunk)
                break
        else:
            first = next((line for line in chunk if line not in have), chunk[0])
            return f"not printed (or not in this order): {first!r}"
    if chunks[-1] and at < len(have) and have[at].strip():
        return (
            f"ends inside a printed block, which goes on with {have[at]!r}: show the block to "
            "its end or end the excerpt with ..."
        )
    return None


# -- numbers of a markdown table -----------------------------------------------------------------

#: Column header -> (how the cell is read, the report entry's key).
COLUMNS = {
    "average": ("percent", "acc"),
    "lowest": ("percent", "lowest_phase"),
    "lowest phase": ("percent", "lowest_phase"),
    "worst phase": ("percent", "worst_phase_crossfit"),
    "worst x-fit": ("percent", "worst_phase_crossfit"),
    "best": ("percent", "best_phase"),
    "gap": ("percent_ci", "gap"),
    "gap [95% ci]": ("percent_ci", "gap"),
    "p": ("p", "p_value"),
    "period": ("period", "dominant_period"),
    "phase effect": ("effect", "significant"),
    "per phase 0..7": ("phases", "per_phase"),
}
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _same(shown: str, value: float | None, scale: float = 100.0) -> bool:
    """``value`` printed at the precision of ``shown`` is ``shown``."""
    if value is None:
        return False
    decimals = len(shown.partition(".")[2])
    return f"{scale * value:.{decimals}f}" == shown


def cell_problem(header: str, cell: str, entry: dict[str, Any], finding: bool) -> str | None:
    rule = COLUMNS.get(header.lower())
    if rule is None:
        return f"no rule for the column {header!r}: add it to tests/test_docs.py COLUMNS"
    how, key = rule
    text = cell.replace("*", "").replace("`", "").strip()
    value = entry.get(key)
    numbers = NUMBER.findall(text)
    if how == "percent":
        ok = len(numbers) == 1 and _same(numbers[0], value)
    elif how == "percent_ci":
        ok = bool(numbers) and _same(numbers[0], value)
        if ok and len(numbers) == 3:
            lo, hi = entry.get(f"{key}_ci") or (None, None)
            ok = _same(numbers[1], lo) and _same(numbers[2], hi)
        ok = ok and len(numbers) in (1, 3)
    elif how == "p":
        if text.startswith("<"):
            ok = value is not None and value < float(numbers[0])
        else:
            ok = len(numbers) == 1 and _same(numbers[0], value, scale=1.0)
    elif how == "period":  # "4", or "4 or 2" where the data are consistent with both
        shown = entry.get("consistent_periods") if len(numbers) > 1 else [value]
        ok = (value is None) if text in ("-", "none") else numbers == [str(v) for v in shown or []]
    elif how == "effect":
        expected = ("finding" if finding else "yes") if value else "no"
        ok = text == expected
    else:  # phases
        accs = [r["acc"] for r in value or []]
        ok = len(numbers) == len(accs) and all(
            _same(s, a) for s, a in zip(numbers, accs, strict=True)
        )
    return None if ok else f"{header} {cell.strip()!r} is not the report's ({key}: {value!r})"


def table_problems(lines: tuple[str, ...], report: dict[str, Any], task: str) -> list[str]:
    """Every cell of a markdown table that is not what ``report`` holds for ``task``."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    header, body = rows[0], [r for r in rows[2:] if r]
    entries = {}
    for name, run in report["runs"].items():
        by_length = run["tasks"].get(task) or {}
        if len(by_length) == 1:
            entries[name] = next(iter(by_length.values()))
    significant = [e for e in entries.values() if e.get("significant")]
    largest = max(significant, key=lambda e: e["gap"], default=None)
    problems = []
    for row in body:
        label = row[0].replace("`", "").replace("*", "").strip()
        match = [n for n in entries if n == label or n.endswith(f"-{label}")]
        if len(match) != 1:
            problems.append(f"row {label!r}: {len(match)} runs of {task} match it")
            continue
        entry = entries[match[0]]
        for head, cell in zip(header[1:], row[1:], strict=True):
            problem = cell_problem(head, cell, entry, entry is largest)
            if problem:
                problems.append(f"row {label!r}: {problem}")
    return problems


# -- the checks ----------------------------------------------------------------------------------

SHOWN = marked(DOCS)


def _ids(kind: str) -> list[Shown]:
    return [s for s in SHOWN if s.kind == kind]


def test_every_marker_is_known():
    kinds = {"output", "numbers", "power", "knobs", "next", "results"}
    assert {s.kind for s in SHOWN} <= kinds, SHOWN
    assert _ids("output") and _ids("power"), "the markers went missing from the docs"
    assert _ids("knobs") and _ids("next"), "the markers went missing from the docs"
    assert _ids("results"), "the markers went missing from the docs"


def test_shown_knobs_are_the_declared_ones():
    """Tables marked ``knobs`` are the task metadata knobs as declared (the declaration
    ``phasebench eval --help`` prints and the tasks check keys against)."""
    from phasebench.lmeval.metadata import markdown_table

    for shown in _ids("knobs"):
        assert "\n".join(shown.lines) == markdown_table(), (
            f"{shown.where}: regenerate it with "
            "python -c 'from phasebench.lmeval.metadata import markdown_table as t; print(t())'"
        )


def test_shown_next_steps_are_what_the_demo_prints():
    """A ``bash`` block marked ``next`` is the demo's closing commands for its default
    folder, each after its ``# what`` line, as ``phasebench demo`` prints them."""
    from phasebench.demo import next_commands

    expected = [line for what, command in next_commands("phasebench-demo")
                for line in (f"# {what}", command)]  # fmt: skip
    for shown in _ids("next"):
        assert list(shown.lines) == expected, shown.where


NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> list[str]:
    return [m.group().replace(",", "") for m in NUMBER.finditer(text)]


def results_problems(lines: tuple[str, ...], printed: str) -> list[str]:
    """Why a table marked ``results`` is not the benchmark output ``printed``: each number of
    a row must be one the output prints, rounded to the decimals shown, in its header (the
    lines before the first configuration) or in the block of the row's configuration (the
    first cell's first backticked name, a line of its own in the output followed by ``:``)."""
    blocks: dict[str, list[str]] = {"": []}
    name = ""
    for line in printed.splitlines():
        head = re.match(r"^(\w+):", line)
        if head and not line.startswith(" "):
            name = head.group(1)
            blocks[name] = []
        blocks[name].append(line)
    problems = []
    for row in lines[2:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        config = re.search(r"`([^`]+)`", cells[0])
        key = config.group(1) if config else ""
        if key not in blocks or not key:
            problems.append(f"row {cells[0]!r}: no configuration {key!r} in the output")
            continue
        have = [float(n) for n in _numbers("\n".join(blocks[""] + blocks[key]))]
        for cell in cells:
            for shown in _numbers(cell.replace(key, "")):
                places = len(shown.split(".")[1]) if "." in shown else 0
                if not any(round(v, places) == float(shown) for v in have):
                    problems.append(f"row {key}: {shown} (in {cell!r}) is not in the output")
    return problems


@pytest.mark.parametrize("shown", _ids("results"), ids=lambda s: s.where)
def test_shown_results_are_the_committed_benchmark_output(shown):
    path = ROOT / shown.arg
    assert path.is_file() and "benchmarks/results/" in shown.arg, f"{shown.where}: {shown.arg}"
    problems = results_problems(shown.lines, path.read_text(encoding="utf-8"))
    assert not problems, f"{shown.where}: " + "; ".join(problems)


def test_the_results_check_sees_a_wrong_figure():
    printed = "# n-base 256\nkv_131072: 2048 prompts\n  generate 8.2 s wall 251.2 prompts/s\n"
    table = ("| config | prompts | wall | prompts/s |", "|---|---|---|---|",
             "| `kv_131072`, n_base 256 | 2,048 | 8.2 s | 251 |")  # fmt: skip
    assert results_problems(table, printed) == []
    wrong = (*table[:2], "| `kv_131072`, n_base 256 | 2,048 | 8.3 s | 251 |")
    assert results_problems(wrong, printed) == [
        "row kv_131072: 8.3 (in '8.3 s') is not in the output"
    ]
    other = (*table[:2], "| `niah_131072` | 2,048 | 8.2 s | 251 |")
    assert results_problems(other, printed)


#: Fenced blocks without a language that are not marked: (document, start of the first line) ->
#: why no test reruns them. Text, trees and diagrams are no command's output; the rest are runs
#: too expensive for the suite, whose inputs the document states. A new unmarked block fails
#: :func:`test_every_output_block_is_checked_or_excused` until it is marked or listed here.
NOT_RERUN = {
    ("README.md", "$ phasebench probe"): "SmolLM2 probe, 128 model calls (docs/probe.md)",
    ("README.md", "Below is a long text."): "a shortened prompt, not a command's output",
    ("README.md", "balance (anchor mean"): "niah at 8,192 tokens x 256 base items (minutes)",
    ("README.md", "phasebench/        the package"): "the layout, not a command's output",
    ("docs/architecture.md", "SplitSpec ──>"): "a diagram",
    ("docs/families.md", "Below is a long text."): "a shortened prompt, not a command's output",
    ("docs/families.md", "balance (anchor mean"): "niah at 8,192 tokens x 256 base items",
    ("docs/hub.md", "README.md  "): "the folder layout",
    ("docs/leaderboard.md", "leaderboard/submissions/"): "the folder layout",
    ("docs/probe.md", "per phase (mod 8), mean margin:"): "SmolLM2 probe run (stated above it)",
    ("docs/probe.md", "per phase (mod 8), mean correct:"): "kvpress probe, 7 CPU minutes",
    ("docs/reference.md", "phasebench reference sweep"): "5 CPU minutes; the commands only",
    ("docs/serving.md", "  prefix cache  warm vs cold"): "the faulty loopback server's run; "
    "tests/test_prefix_cache.py asserts its counts and p",
    ("docs/tasks.md", "phasebench: error: phasebench_kv"): "an error line; the test of the "
    "truncation guard (tests/lmeval/test_tasks_lmeval.py) asserts its text",
}


def test_every_output_block_is_checked_or_excused():
    """Every fenced block without a language is marked (checked against a run or a committed
    report) or listed in :data:`NOT_RERUN` with the reason; nothing listed has gone away."""
    marked_at = {(s.path, s.line) for s in SHOWN}
    used, unexcused = set(), []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for line, lang, body in fenced_blocks("\n".join(lines)):
            if lang:
                continue
            k = line - 2
            while k >= 0 and not lines[k].strip():
                k -= 1
            if (path, k + 1) in marked_at:
                continue
            name = str(path.relative_to(ROOT))
            first = body[0] if body else ""
            key = next((k for k in NOT_RERUN if k[0] == name and first.startswith(k[1])), None)
            if key is None:
                unexcused.append(f"{name}:{line}: {first[:60]!r}")
            else:
                used.add(key)
    assert not unexcused, "mark these blocks or list them in NOT_RERUN:\n" + "\n".join(unexcused)
    assert set(NOT_RERUN) <= used, sorted(set(NOT_RERUN) - used)


#: Documents whose repository paths are checked (the leaderboard's own README too).
PATH_DOCS = [*DOCS, ROOT / "leaderboard" / "README.md", ROOT / "tasks" / "README.md"]
#: Where a repository path starts.
TOP_LEVEL = ("phasebench/", "tests/", "docs/", "benchmarks/", "examples/", "leaderboard/",
             "tasks/", "generators/", "data_cards/", ".ci/")  # fmt: skip
TICKED = re.compile(r"`([^`\s]+)`")
#: Hub model ids that read like repository paths (the shipped random fixture's org is phasebench).
MODEL_IDS = {"phasebench/tiny-random-llama"}


def named_paths(text: str) -> list[str]:
    """Repository paths named in backticks (``tests/support/models.py``, ``docs/stats.md``;
    a test id's ``::name`` dropped), placeholders (``<...>``, ``*``, ``{...}``, ``...``) left
    out."""
    found = []
    for m in TICKED.finditer(text):
        token = m[1].rstrip(".,:;)")
        if not token.startswith(TOP_LEVEL) or token in MODEL_IDS:
            continue
        if any(c in token for c in "<>*{}$|") or "..." in token:
            continue
        found.append(token.split("::")[0])
    return found


def test_every_repository_path_the_docs_name_exists():
    """Three docs named test files that had moved to ``tests/support/``."""
    missing, seen = [], 0
    for path in PATH_DOCS:
        for name in named_paths(path.read_text(encoding="utf-8")):
            seen += 1
            if not (ROOT / name).exists():
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert seen > 50 and not missing, missing


def test_the_path_check_finds_a_moved_file():
    text = "see `tests/support/models.py`, `tests/more_tokenizers.py` and `docs/<name>.md`"
    assert named_paths(text) == ["tests/support/models.py", "tests/more_tokenizers.py"]


@pytest.mark.slow
@pytest.mark.parametrize("shown", _ids("output"), ids=lambda s: s.where)
def test_shown_output_is_what_the_command_prints(shown, tmp_path):
    printed = run_commands(shown.arg, tmp_path)
    problem = excerpt_problem(list(shown.lines), printed)
    assert problem is None, f"{shown.where}: {problem}\n--- printed:\n{printed}"


def test_shown_numbers_are_the_committed_reports():
    """Tables marked ``numbers FILE TASK`` (none until a demo report is committed: the
    checker itself is tested below). A report is read as ``phasebench report`` reads one, so
    a committed report of an earlier format is read with the names of today
    (``docs/figures/demo-report.json`` is format 2, where the lowest phase was ``worst_phase``)."""
    from phasebench.report import load_runs

    for shown in _ids("numbers"):
        file, _, task = shown.arg.partition(" ")
        _, (report,) = load_runs([ROOT / file])
        problems = table_problems(shown.lines, report, task.strip())
        assert not problems, f"{shown.where} (against {file}):\n" + "\n".join(problems)


def test_shown_power_tables_are_what_power_answers():
    from phasebench.stats import power_n_base

    for shown in _ids("power"):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in shown.lines]
        header = [h.lower() for h in rows[0]]
        assert header[:3] == ["average accuracy", "gap (points)", "base items"], shown.where
        for acc, gap, n in (r[:3] for r in rows[2:]):
            got = power_n_base(float(acc), float(gap) / 100, 8)
            assert got == int(n), f"{shown.where}: acc {acc}, gap {gap}: {got}, shown {n}"


POWER_COMMENT = re.compile(
    r"phasebench power --acc (?P<acc>[\d.]+) --gap (?P<gap>[\d.]+) --modulus (?P<m>\d+)"
    r"\s+# -> (?P<n>\d+) base items"
)


def test_power_answers_in_command_comments():
    from phasebench.stats import power_n_base

    seen = 0
    for path in DOCS:
        for m in POWER_COMMENT.finditer(path.read_text(encoding="utf-8")):
            seen += 1
            got = power_n_base(float(m["acc"]), float(m["gap"]), int(m["m"]))
            assert got == int(m["n"]), f"{path.name}: {m[0]!r} answers {got}"
    assert seen


FROM_IMPORT = re.compile(r"from (?P<module>(?:phasebench|support)[\w.]*) import (?P<names>[\w, ]+)")


def test_documented_python_imports_resolve():
    """Python snippets (fenced ``python`` blocks and ``python -c`` in command blocks) import
    names that exist: a recipe once imported ``make_tiny_llama`` from a module without it."""
    sys.path.insert(0, str(ROOT / "tests"))
    checked = []
    try:
        for path in DOCS:
            for line, lang, lines in fenced_blocks(path.read_text(encoding="utf-8")):
                if lang not in ("python", "bash", "sh", ""):
                    continue
                for m in FROM_IMPORT.finditer("\n".join(lines)):
                    module = importlib.import_module(m["module"])
                    for name in (n.strip() for n in m["names"].split(",")):
                        where = f"{path.relative_to(ROOT)}:{line}"
                        assert hasattr(module, name), f"{where}: {m['module']} has no {name}"
                        checked.append((m["module"], name))
    finally:
        sys.path.remove(str(ROOT / "tests"))
    assert ("support.models", "make_tiny_llama") in checked


def test_the_ci_prompt_counts_the_docs_state_are_the_tests():
    """docs/tasks.md states how many prompts SmolLM2 answers in CI: the demo's next eval as it
    prints it (kv) and the crossed niah run of tests/families/test_length_phases.py."""
    import json
    import shlex

    from phasebench.demo import next_commands
    from phasebench.specs import DEFAULT_MODULUS

    argv = shlex.split(next_commands("out")[1][1])
    metadata = json.loads(argv[argv.index("--metadata") + 1])
    (length,) = metadata["max_seq_lengths"]
    text = " ".join((ROOT / "docs" / "tasks.md").read_text(encoding="utf-8").split())
    stated = f"kv as the demo's next eval prints it ({metadata['n_base']} base items x "
    modulus = metadata.get("phase_modulus", DEFAULT_MODULUS)
    stated += f"{modulus} phases at {length} tokens"
    assert stated in text, f"docs/tasks.md should say {stated!r}"
    source = (ROOT / "tests" / "families" / "test_length_phases.py").read_text(encoding="utf-8")
    assert '"max_seq_lengths": [256], "n_base": 4, "phase_modulus": modulus' in source
    assert "niah with both axes crossed at 256 tokens (4 base items x 2 x 2 phases" in text


# -- the checker itself ---------------------------------------------------------------------------


def _report(acc: float, worst: float, p: float, period: int | None) -> dict[str, Any]:
    entry = {"acc": acc, "lowest_phase": worst, "gap": 0.156, "gap_ci": [0.041, 0.272],
             "p_value": p, "dominant_period": period, "significant": p <= 0.05}  # fmt: skip
    return {"runs": {"phasebench-ref-mean-w8s4": {"tasks": {"phasebench_kv": {"512": entry}}}}}


def test_the_table_check_finds_a_stale_number():
    table = (
        "| model | average | lowest | gap [95% CI] | p | period | phase effect |",
        "|---|---|---|---|---|---|---|",
        "| `mean-w8s4` | 77.1 | 68.0 | **15.6** [4.1, 27.2] | **< 0.001** | **4** | **finding** |",
    )
    assert table_problems(table, _report(0.771, 0.68, 0.000999, 4), "phasebench_kv") == []
    stale = table_problems(table, _report(0.770, 0.68, 0.002, None), "phasebench_kv")
    assert len(stale) == 3 and "average" in stale[0] and "p" in stale[1], stale
    renamed = (table[0].replace("lowest", "floor"), *table[1:])
    odd = table_problems(renamed, _report(0.771, 0.68, 0.000999, 4), "phasebench_kv")
    assert any("no rule for the column 'floor'" in p for p in odd), odd


def test_the_excerpt_check_finds_a_changed_line():
    printed = "a\nb  \nc\nd\n\ne\n"
    assert excerpt_problem(["b", "c", "d"], printed) is None
    assert excerpt_problem(["a", "...", "e"], printed) is None
    assert excerpt_problem(["b", "c", "..."], printed) is None
    assert excerpt_problem(["c", "...", "a"], printed) is not None
    assert "'x'" in excerpt_problem(["b", "x"], printed)
    # an excerpt that stops inside a block says where the block goes on
    assert "goes on with 'd'" in excerpt_problem(["b", "c"], printed)


def test_markers_are_read_before_fences_and_tables(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- checked: output phasebench --version -->\n\n```\nphasebench 0\n```\n"
        "<!-- checked: power -->\n| average accuracy | gap (points) | base items |\n|---|---|---|\n"
        "| 0.90 | 10 | 256 |\n\nafter\n",
        encoding="utf-8",
    )
    a, b = marked([doc])
    assert (a.kind, a.arg, a.lines) == ("output", "phasebench --version", ("phasebench 0",))
    assert (b.kind, len(b.lines)) == ("power", 3)


#: Output options whose value is a path the command writes.
OUTPUT_OPTION = re.compile(r"--(?:out|output_path|json|plots)[ =]\[?([^\s\]]+)")
#: Tracked folders a README command writes into on purpose (a submission joins the repository).
WRITES_TRACKED = ("leaderboard/",)


def test_the_readmes_own_outputs_are_ignored_by_git():
    """Every folder or file a README command writes in the clone (``--out my-site``,
    ``--output_path my-run``, ``--json report.json``, ...) is ignored by git, so following the
    README leaves ``git status`` clean. Before, ``my-run``, ``my-board``, ``my-site`` and
    ``my-probe`` were not."""
    text = (ROOT / "README.md").read_text()
    commands = [line for _, lang, lines in fenced_blocks(text) if lang == "bash" for line in lines]
    paths = {m[1].rstrip("/") for line in commands for m in OUTPUT_OPTION.finditer(line)}
    paths = {p for p in paths if not p.startswith(WRITES_TRACKED) and p.upper() != p}
    assert {"my-run", "my-board/HuggingFaceTB__SmolLM2-135M-Instruct", "my-site"} <= {
        p if not p.startswith("my-board/") else p.rsplit("/", 1)[0] for p in paths
    }, paths
    for path in sorted(paths):
        probe = f"{path}/any-file"
        proc = subprocess.run(["git", "check-ignore", "-q", probe], cwd=ROOT, check=False)
        assert proc.returncode == 0, f"{path} (README) is not ignored by git"
