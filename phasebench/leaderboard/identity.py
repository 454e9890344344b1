"""One entry per model, decided without accounts.

**Identity.** Two entries are the same when their canonical keys are equal: the model id
Unicode-normalised (NFKC) and case-folded, the revision, the variant (one configuration of the
weights, such as a KV-cache press; none for most entries), the precision, whether a chat template
was applied, the serving stack (engine, version and flags; none for a run on lm-eval's own
backend), and the task versions (:func:`identity_key`). ``Tiny-Random-Llama`` and
``tiny-random-llama`` at one revision are one model.

**Who was there first** keeps its place; every later copy is refused (rule ``duplicate``).
"First" is decided from history the copier cannot rewrite, in this order:

1. being on the earlier board (``leaderboard build`` reads the site it replaces, or
   ``--previous``): a published entry is never displaced by a new copy;
2. the order in which the maintainers' branch received the entries (:class:`History`), when the
   submissions folder is a git work tree: along the first-parent history of the checked-out
   branch (``git log --first-parent``: main's own commits and the merges into it, never the
   commits of a merged branch), the commit that introduced each entry's ``submission.yaml``;
   the entry introduced by the earliest such commit came first, and a committed entry comes
   before one not committed yet. A branch forked before the original and merged after it
   arrives at its merge, after the original, however its own commits are ordered or dated
   and whatever files of the original it re-adds;
3. nothing else: a **tie** (none of the above tells them apart: neither committed, both
   arrived in one commit, no git) is refused on both sides (rule ``duplicate``, each naming
   the other).

Why nothing else: a copy differs from its original only in what the copier chose (the model id's
letter case, the folder name, the contact, and any field of its results, its run date
included), so for any rule that reads the two entries alone (the run dates, the alphabetical
order of the ids, which one "looks canonical", which one's results spell the model as its
``submission.yaml`` does, a hash of the files) the copier can make a copy that wins it. Where
there is no history, refusing both means a copy can at most hold an entry back until a
maintainer removes the copy's folder, never take its place. The board's submissions live in
git, so there a copy always loses. The report names the entry that was kept and why.

**Supersedes.** ``supersedes: <revision>`` retires the entries of the same canonical model at
that revision, with the same variant, precision, chat-template setting and serving engine, only
when the new entry gives the same contact (case-folded) and its run is later than theirs.
Without accounts, "the same submitter" can only mean "the same contact": a third party who
copies the contact can still claim it, and again the pull-request review (who may change
which folder) is what stops them. A retired entry is never deleted: the report and the site
list it as superseded, by whom.
"""

from __future__ import annotations

import json
import os
import subprocess
import unicodedata
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from phasebench.errors import SubmissionsError
from phasebench.leaderboard.collect import Problem

__all__ = [
    "arrival",
    "canonical_model",
    "History",
    "drop_superseded_and_duplicates",
    "identity_key",
    "incumbents_from",
    "serving_key",
]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().strip()


def canonical_model(model: str) -> str:
    """The model id as identity sees it: NFKC-normalised and case-folded."""
    return _fold(model)


def identity_key(sub: Any) -> tuple:
    """The canonical key of an entry (see the module docstring)."""
    return (
        canonical_model(sub.meta["model"]),
        str(sub.meta["revision"]).lower(),
        sub.meta.get("variant"),
        sub.meta["precision"],
        bool(sub.meta["chat_template"]),
        serving_key(sub.meta.get("serving")),
        tuple(sorted(sub.task_versions.items())),
    )


def serving_key(serving: Any) -> tuple | None:
    """The serving stack as identity sees it: engine and version case-folded, flags as a set."""
    if not serving:
        return None
    flags = tuple(sorted({_fold(str(f)) for f in serving.get("flags") or []}))
    return (_fold(str(serving["engine"])), _fold(str(serving["version"])), flags)


def _engine(sub: Any) -> str | None:
    serving = sub.meta.get("serving")
    return _fold(str(serving["engine"])) if serving else None


def arrival(sub: Any, incumbents: Collection[str] = ()) -> tuple:
    """Sort key of "who was there first" (see the module docstring); entries with equal keys
    tie. The folder name comes last only to make the order of the report fixed: it never
    decides who is first."""
    return (*_precedence(sub, incumbents), _fold(sub.name), sub.name)


def _precedence(sub: Any, incumbents: Collection[str]) -> tuple:
    """Only the earlier board; the run's recorded date is submitted data and never counts."""
    return (sub.name not in incumbents,)


def _why_first(first: Any, incumbents: Collection[str], by_history: str | None = None) -> str:
    if first.name in incumbents:
        return "it is on the earlier board"
    return f"the maintainers' branch received it first, in commit {str(by_history)[:12]}"


#: Seconds one git command may take before the history is taken as unknown.
GIT_TIMEOUT = 30


class History:
    """The git history of a submissions folder as the maintainers' branch received it: along
    the first-parent history of the checked-out branch, the commit that introduced each
    submission's ``submission.yaml``. Read only where two entries are one (duplicates are
    rare), with git's own plumbing, bounded in time, and with nothing of the repository's
    configuration that could run a command; where the folder is not in a git work tree, or git
    is missing or fails, the history is unknown (never guessed)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._mainline: dict[str, int] | None = None

    def _git(self, *args: str) -> subprocess.CompletedProcess | None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        git = ["git", "--literal-pathspecs", "-c", "core.fsmonitor=false", "-C", str(self.root)]
        try:
            return subprocess.run(
                [*git, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT, env=env
            )
        except (OSError, subprocess.SubprocessError):
            return None

    def mainline(self) -> dict[str, int]:
        """``{commit: its place}`` along the first-parent history of ``HEAD``, oldest first
        (empty where the history is unknown)."""
        if self._mainline is None:
            done = self._git("rev-list", "--first-parent", "--reverse", "HEAD")
            ok = done is not None and done.returncode == 0
            self._mainline = {c: i for i, c in enumerate(done.stdout.split())} if ok else {}
        return self._mainline

    def added(self, name: str) -> str | None:
        """The first-parent commit that introduced ``name``/submission.yaml (a merge is read
        against its first parent, so a merged branch's files arrive at the merge; the earliest,
        if it was introduced more than once), None where it is not committed on this branch or
        the history is unknown."""
        done = self._git(
            "log", "--first-parent", "--diff-merges=first-parent", "--no-renames",
            "--diff-filter=A", "--format=%H", "--", f"{name}/submission.yaml",
        )  # fmt: skip
        if done is None or done.returncode != 0:
            return None
        places = self.mainline()
        commits = [c for c in done.stdout.split() if c in places]
        return min(commits, key=places.__getitem__) if commits else None

    def first(self, group: Sequence[Any]) -> tuple[Any, str] | None:
        """``(entry, commit)`` of the one entry of ``group`` the branch received first (the
        others introduced by later first-parent commits, or not committed yet); None when no
        entry is alone in front (none committed, two introduced by one commit)."""
        places = self.mainline()
        added = {sub.name: self.added(sub.name) for sub in group}
        arrived = sorted(
            (places[commit], sub.name, commit)
            for sub in group
            if (commit := added[sub.name]) is not None
        )
        if not arrived or (len(arrived) > 1 and arrived[0][0] == arrived[1][0]):
            return None
        _, name, commit = arrived[0]
        return next(sub for sub in group if sub.name == name), commit


def _supersede_problem(new: Any, old: Any) -> str | None:
    """Why ``new`` may not retire ``old`` (None if it may)."""
    if _fold(str(new.meta.get("contact", ""))) != _fold(str(old.meta.get("contact", ""))):
        return (
            f"it would retire {old.name}, which gives another contact; only the same submitter "
            f"(the same contact) may replace an entry; ask the maintainers otherwise"
        )
    if new.recorded is None or old.recorded is None or not new.recorded > old.recorded:
        return f"its run is not later than the run of {old.name}, which it would retire"
    return None


def drop_superseded_and_duplicates(
    accepted: Sequence[Any], incumbents: Collection[str] = (), history: History | None = None
) -> tuple[list[Any], list[tuple[str, str]], list[tuple[str, list[Problem]]]]:
    """Split accepted submissions into those kept, ``(superseded, by)`` pairs and refusals
    (rules ``duplicate`` and ``supersedes``), all in name order. ``history``: the submissions
    folder's git history, which decides between entries none of which is on the earlier
    board."""
    order = sorted(accepted, key=lambda s: arrival(s, incumbents))
    groups: dict[tuple, list[Any]] = {}
    for sub in order:
        groups.setdefault(identity_key(sub), []).append(sub)
    same = "the same model, revision, variant, precision, chat template and task versions as"
    kept: list[Any] = []
    refused: list[tuple[str, list[Problem]]] = []

    def refuse(sub: Any, message: str) -> None:
        refused.append((sub.name, [Problem("duplicate", f"{sub.name}/submission.yaml", message)]))

    for group in groups.values():
        by_history = None
        if len(group) > 1 and history is not None and not any(s.name in incumbents for s in group):
            by_history = history.first(group)
        if by_history is not None:
            holder, commit = by_history
            kept.append(holder)
            for sub in group:
                if sub is not holder:
                    refuse(sub, f"{same} {holder.name}, which keeps its place "
                                f"({_why_first(holder, incumbents, commit)})")  # fmt: skip
            continue
        head = _precedence(group[0], incumbents)
        tied = [s for s in group if _precedence(s, incumbents) == head]
        if len(tied) > 1:
            for sub in group:
                others = ", ".join(o.name for o in tied if o is not sub)
                refuse(
                    sub,
                    f"{same} {others}"
                    + (
                        ", and neither came first (not on an earlier board, not received one "
                        "after the other by the maintainers' git branch): a tie is never broken "
                        "by anything a copier chooses (a run date included), so neither is "
                        "published until the maintainers remove the copy"
                        if sub in tied
                        else ", which tie for first place"
                    ),
                )
            continue
        holder, *later = group
        kept.append(holder)
        for sub in later:
            refuse(sub, f"{same} {holder.name}, which keeps its place "
                        f"({_why_first(holder, incumbents)})")  # fmt: skip

    superseded: list[tuple[str, str]] = []
    retired: set[str] = set()
    for sub in list(kept):  # in arrival order: a chain of revisions retires in turn
        target = sub.meta.get("supersedes")
        if not target or sub.name in retired:
            continue
        olds = [
            o
            for o in kept
            if o is not sub
            and o.name not in retired
            and canonical_model(o.meta["model"]) == canonical_model(sub.meta["model"])
            and str(o.meta["revision"]).lower() == str(target).lower()
            and o.meta.get("variant") == sub.meta.get("variant")
            and o.meta["precision"] == sub.meta["precision"]
            and bool(o.meta["chat_template"]) == bool(sub.meta["chat_template"])
            and _engine(o) == _engine(sub)
        ]
        problems = [p for p in (_supersede_problem(sub, o) for o in olds) if p]
        if problems:
            retired.add(sub.name)
            refused.append(
                (sub.name, [Problem("supersedes", f"{sub.name}/submission.yaml", problems[0])])
            )
            continue
        for old in olds:
            retired.add(old.name)
            superseded.append((old.name, sub.name))
    kept = sorted((s for s in kept if s.name not in retired), key=lambda s: s.name)
    return kept, sorted(superseded), sorted(refused, key=lambda item: item[0])


#: Largest ``leaderboard.json`` read for the entries of an earlier board.
MAX_BOARD_BYTES = 256 * 1024 * 1024


def incumbents_from(path: Path | str) -> set[str]:
    """The submissions an earlier board published (its ``rejections.accepted``): ``path`` is a
    ``leaderboard.json`` or the site folder holding one. A missing file is an empty board; an
    unreadable one is a :class:`SubmissionsError` (never guessed at)."""
    path = Path(path)
    if path.is_dir():
        path = path / "leaderboard.json"
    if not path.exists():
        return set()
    if not path.is_file() or path.stat().st_size > MAX_BOARD_BYTES:
        raise SubmissionsError(f"{str(path)!r} is not an earlier leaderboard.json")
    try:
        board = json.loads(path.read_bytes().decode("utf-8"))
        names = board["rejections"]["accepted"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, RecursionError):
        raise SubmissionsError(
            f"{str(path)!r} is not a leaderboard.json made by phasebench (no rejections.accepted)"
        ) from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SubmissionsError(f"{str(path)!r}: rejections.accepted is not a list of names")
    return set(names)
