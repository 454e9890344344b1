"""The paired needle engine shared by the ``kv`` and ``niah`` families.

A prompt is a sequence of pieces whose seams the tokenizer cannot merge across (checked with
:func:`~phasebench.tokenization.check_seams`; the header opens the prompt and is counted at the
text's start, every other piece as it encodes inside a prompt)::

    header | body[:split] | filler(a + extra + delta) | lead | keyed | filler(a + P-1-delta)
           | body[split:] | filler(slack) | question

``keyed`` starts with the needle's key, so the anchor is its first token. Token positions are sums
of piece counts (the fast path); every chunk re-encodes one whole prompt on the exact path, and
``verify`` re-encodes all of them.

A family is this engine configured, not copied (:func:`needle_family`): it supplies a
:class:`NeedleContent` (the header, a pool of body pieces and a way to draw needles), how its
needle and question read for a key and value, and what its manifest says; the engine does the
planning, the seam and exact-path checks, the row and config verification. Everything random
comes from streams derived from (seed, family, length, ...).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from phasebench.errors import AssemblyError, SpecError
from phasebench.families import Family
from phasebench.placement import (
    EXTRA_MULTIPLES,
    TOLERANCE,
    assign_residues,
    axis_balance,
    stratified_depths,
)
from phasebench.prefill import PromptPieces
from phasebench.rng import derive_rng
from phasebench.tokenization import FillerTable, PhaseTokenizer, build_filler_table, check_seams

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

MAX_NEEDLE_DRAWS = 1000


@dataclass(frozen=True)
class Needle:
    lead: str  # text of the needle before its key ("" when the key opens the needle)
    keyed: str  # the rest of the needle, starting with the key (maybe after one space)
    key: str
    answer: str
    question: str


@dataclass(frozen=True)
class NeedleContent:
    """What a family contributes; pure data plus two deterministic samplers."""

    header: str
    pool: Sequence[str]  # body pieces
    draw_needle: Callable[[np.random.Generator], Needle]
    draw_body: Callable[[np.random.Generator, int], np.ndarray]  # (rng, size) -> pool indices
    filler_units: Sequence[str] = (".", "pad", "x", "the", "-", "a")
    filler_sep: str = " "  # a filler line is sep.join([unit] * n) + end (measured per tokenizer)
    filler_end: str = "\n"
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ItemPlan:
    base_id: int
    needle: Needle
    body: np.ndarray  # pool indices in prompt order
    split: int  # body pieces before the needle
    y: int  # anchor index with extra = delta = 0
    leftover: int  # tokens for extra + slack


@dataclass
class NeedlePlan:
    spec: SplitSpec
    tok: PhaseTokenizer
    content: NeedleContent
    filler: FillerTable
    pad: int  # minimum filler before/after the needle (a)
    slack_min: int
    question_tokens: int
    question_index: int
    items: list[ItemPlan]
    extra: np.ndarray
    residue: np.ndarray
    pool_counts: np.ndarray | None = None  # tokens of each body piece inside a prompt

    @property
    def n_units(self) -> int:
        return len(self.items)

    @property
    def rows_per_unit(self) -> int:
        return self.spec.renderings

    def renderings(self, b: int) -> list[tuple[int, int]]:
        """``(delta, extra_length)`` of every rendering of item ``b``, in row order: the needle
        moved ``delta`` tokens (needle axis) and ``extra_length`` filler tokens added after it
        (length axis), each axis over the spec's residues."""
        spec, P = self.spec, self.spec.modulus
        wanted = set(spec.residues)
        x = int(self.items[b].y + self.extra[b])
        deltas = (
            [0] if spec.length_phases == "only" else [d for d in range(P) if (x + d) % P in wanted]
        )
        lengths = (
            [0]
            if not spec.length_phases
            else [e for e in range(P) if (spec.length + e) % P in wanted]
        )
        pairs = [(d, e) for d in deltas for e in lengths]
        return sorted(pairs, key=lambda de: ((x + de[0]) % P, (spec.length + de[1]) % P))

    def anchors(self) -> tuple[np.ndarray, np.ndarray]:
        """Anchor index and phase of every row, in row order."""
        P = self.spec.modulus
        x = np.array([it.y for it in self.items]) + self.extra
        anchors = np.array([x[b] + d for b in range(len(x)) for d, _ in self.renderings(b)])
        return anchors, anchors % P

    def length_phases(self) -> np.ndarray:
        """The length phase (total length mod P) of every row, in row order."""
        L, P = self.spec.length, self.spec.modulus
        rows = [(L + e) % P for b in range(len(self.items)) for _, e in self.renderings(b)]
        return np.array(rows)

    def balance(self) -> dict:
        """Matched statistics of the varied axes: the needle phase's at the top level (the
        length phase's when only that axis runs) and, with the length axis, ``length_phase``."""
        return axis_balance(self.spec, *self.anchors(), self.length_phases())

    def render(self, base_ids: Sequence[int]) -> Iterator[dict]:
        for b in base_ids:
            yield from _render_item(self, b)

    def prompt_pieces(self) -> PromptPieces:
        """Every row's prompt as its pieces, for the manifest's prefill figures."""
        return prompt_pieces(self)


def check_spec(spec: SplitSpec, tok: PhaseTokenizer | None = None) -> None:
    """The spec's own rules, checked without a tokenizer (``phasebench eval`` does so before
    it loads one): ``n_base`` a multiple of the modulus and at least twice it."""
    P = spec.modulus
    if spec.n_base % P or spec.n_base < 2 * P:
        raise SpecError(
            f"'n_base' must be a multiple of 'modulus' and at least twice it, so that every phase "
            f"group gets the same count and matched position statistics (modulus {P}, "
            f"got n_base {spec.n_base}; try {max(2 * P, -(-spec.n_base // P) * P)})"
        )


def _question_tokens(tok: PhaseTokenizer, spec: SplitSpec, content: NeedleContent) -> int:
    """The question length every prompt of the config will have: the most common one among
    probe needles (drawn from their own stream), smallest on ties."""
    rng = derive_rng(spec.seed, spec.family, spec.length, "question-probe")
    probes = [content.draw_needle(rng).question for _ in range(64)]
    values, counts = np.unique(tok.count(probes), return_counts=True)
    return int(values[np.argmax(counts)])


def key_token_offset(tok: PhaseTokenizer, needle: Needle) -> int:
    """Index, among the tokens of ``needle.keyed`` inside a prompt, of the token holding the key's
    first character: 0 when the key opens ``keyed`` or its leading space joins the key's first
    token (byte-level BPE), 1 when a tokenizer makes that space a token of its own (``▁``)."""
    char = needle.keyed.index(needle.key)
    offsets = tok.piece_offsets(needle.keyed)
    for i, (start, end) in enumerate(offsets):
        if start <= char < end:
            return i
    raise AssemblyError(f"no token of the needle {needle.keyed!r} holds its key's first character")


def plan(spec: SplitSpec, tok: PhaseTokenizer, content: NeedleContent) -> NeedlePlan:
    """Lay out every base item of ``spec``: cheap (token counts of pool pieces only)."""
    check_spec(spec)
    P, L = spec.modulus, spec.length
    pool_counts = tok.count(content.pool)
    if len(pool_counts) == 0 or pool_counts.min() < 1:
        raise AssemblyError("every body piece must encode to at least one token")
    max_piece = int(pool_counts.max())
    probe_filler = build_filler_table(
        tok, 4, content.filler_units, content.filler_sep, content.filler_end
    )
    pad = probe_filler.min_tokens
    slack_min = pad
    need = max(pad + P * EXTRA_MULTIPLES + P, slack_min + P * EXTRA_MULTIPLES + max_piece + 1)
    filler = build_filler_table(
        tok, need + 1, content.filler_units, content.filler_sep, content.filler_end
    )
    header_tokens = int(tok.count([content.header], at_start=True)[0])
    q_tokens = _question_tokens(tok, spec, content)
    question_index = L - len(tok.suffix_ids) - q_tokens
    window = P * EXTRA_MULTIPLES + slack_min  # leftover lies in [window, window + max_piece)

    depths = stratified_depths(spec.n_base, derive_rng(spec.seed, spec.family, L, "depths"))
    items: list[ItemPlan] = []
    for b in range(spec.n_base):
        rng = derive_rng(spec.seed, spec.family, L, "base", b)
        for _ in range(MAX_NEEDLE_DRAWS):
            needle = content.draw_needle(rng)
            lead_n, keyed_n, q_n = tok.count([needle.lead, needle.keyed, needle.question])
            if q_n == q_tokens:
                break
        else:
            raise AssemblyError(
                f"no needle whose question encodes to {q_tokens} tokens in {MAX_NEEDLE_DRAWS} draws"
            )
        fixed = tok.n_special + header_tokens + q_tokens + lead_n + keyed_n + 2 * pad + (P - 1)
        budget = L - fixed - window
        if budget < 0:
            raise SpecError(
                f"'length' {L} is too short for the {spec.family} template with this tokenizer "
                f"(needs at least {fixed + window} tokens)"
            )
        size = min(len(content.pool), int(budget / max(1.0, pool_counts.min())) + 2)
        body = content.draw_body(rng, size)
        cum = np.cumsum(pool_counts[body])
        m = int(np.searchsorted(cum, budget, side="right"))
        if m == len(body) and m < len(content.pool):
            raise AssemblyError("body sampler returned too few pieces")  # a family bug
        body = body[:m]
        used = int(cum[m - 1]) if m else 0
        split = int(np.searchsorted(cum[:m], depths[b] * used, side="right")) if m else 0
        before = int(cum[split - 1]) if split else 0
        y = tok.n_prefix + header_tokens + before + pad + lead_n + key_token_offset(tok, needle)
        items.append(ItemPlan(b, needle, body, split, y, L - fixed - used))
    y = np.array([it.y for it in items])
    assignment = assign_residues(y, P, derive_rng(spec.seed, spec.family, L, "residues"))
    if assignment.deviation > TOLERANCE:
        raise AssemblyError(
            f"could not match anchor statistics across phases within {TOLERANCE} tokens "
            f"(best {assignment.deviation:.2f}); use more base items"
        )
    return NeedlePlan(
        spec=spec,
        tok=tok,
        content=content,
        filler=filler,
        pad=pad,
        slack_min=slack_min,
        question_tokens=q_tokens,
        question_index=question_index,
        items=items,
        extra=assignment.extra,
        residue=assignment.residue,
        pool_counts=pool_counts,
    )


def _render_item(plan: NeedlePlan, b: int) -> Iterator[dict]:
    spec, tok, content, filler = plan.spec, plan.tok, plan.content, plan.filler
    P, L = spec.modulus, spec.length
    item = plan.items[b]
    extra = int(plan.extra[b])
    pool = content.pool
    body = item.body.tolist()  # Python ints: indexing the pool with them is several times faster
    before = "".join([content.header, *[pool[i] for i in body[: item.split]]])
    after = [pool[i] for i in body[item.split :]]
    tail = "".join([*after, filler.line(item.leftover - extra), item.needle.question])
    x = int(item.y + extra)
    for delta, more in plan.renderings(b):
        head = before + filler.line(plan.pad + extra + delta) + item.needle.lead
        after_needle = filler.line(plan.pad + P - 1 - delta + more)
        prompt = "".join([head, item.needle.keyed, after_needle, tail])
        key_char = len(head) + item.needle.keyed.index(item.needle.key)
        if prompt.find(item.needle.key) != key_char:
            raise AssemblyError(f"needle key {item.needle.key!r} occurs before the needle")
        anchor = x + delta
        row = {
            "id": f"{spec.family}-{L}-b{b:05d}-p{anchor % P}",
            "family": spec.family,
            "length": L + more,
            "phase_modulus": P,
            "phase": anchor % P,
            "base_id": b,
            "anchor_index": anchor,
            "question_index": plan.question_index + more,
            "needle_key": item.needle.key,
            "prompt": prompt,
            "answer": item.needle.answer,
            "choices": [],
            "depth": anchor / (L + more),
            "tokenizer": tok.portable_name,
            "tokenizer_fingerprint": tok.fingerprint,
            "seed": spec.seed,
            "key_char": key_char,
            "question_char": len(prompt) - len(item.needle.question),
        }
        if spec.length_phases:
            row["id"] += f"-l{(L + more) % P}"
            row["config_length"] = L
            row["length_phase"] = (L + more) % P
        yield row


def prompt_pieces(plan: NeedlePlan) -> PromptPieces:
    """The pieces of every row, in row order, as :func:`_render_item` joins them (the header
    opens the prompt; ``tests/test_prefill.py`` checks that they join to the rows' prompts)."""
    content, filler, P = plan.content, plan.filler, plan.spec.modulus
    texts = list(content.pool)
    index: dict[str, int] = {}

    def piece(text: str) -> int:
        if text not in index:
            index[text] = len(texts)
            texts.append(text)
        return index[text]

    header = len(texts)
    texts.append(content.header)
    rows: list[tuple[int, list[int]]] = []
    ends: list[tuple[int, int]] = []
    for item in plan.items:
        extra, needle = int(plan.extra[item.base_id]), item.needle
        ends.append((piece(filler.line(item.leftover - extra)), piece(needle.question)))
        for delta, more in plan.renderings(item.base_id):
            middle = [
                piece(filler.line(plan.pad + extra + delta)),
                piece(needle.lead),
                piece(needle.keyed),
                piece(filler.line(plan.pad + P - 1 - delta + more)),
            ]
            rows.append((item.base_id, middle))

    def row(i: int) -> np.ndarray:
        b, middle = rows[i]
        item = plan.items[b]
        return np.concatenate(
            [[header], item.body[: item.split], middle, item.body[item.split :], ends[b]]
        ).astype(np.int64)

    return PromptPieces(texts, frozenset({header}), row, [b for b, _ in rows], plan.pool_counts)


def _needle_runs(plan: NeedlePlan, n_items: int, head: Sequence[str]):
    """For the first items, at the first and the last phase: ``head``, the two body pieces
    before the needle, the filler before it, the needle, and the filler and body after it (the
    last two in a separate list, since an opening sequence stops at the needle)."""
    filler, P, pool = plan.filler, plan.spec.modulus, plan.content.pool
    for item in plan.items[:n_items]:
        body = [pool[i] for i in item.body]
        s, extra = item.split, int(plan.extra[item.base_id])
        for delta in (0, P - 1):
            before = [*head, *body[max(0, s - 2) : s]]
            before += [filler.line(plan.pad + extra + delta), item.needle.lead, item.needle.keyed]
            after = [filler.line(plan.pad + P - 1 - delta), *body[s : s + 2]]
            yield before, after


def seam_samples(plan: NeedlePlan, n_items: int = 2) -> list[list[str]]:
    """Real piece sequences covering every kind of seam inside a prompt, for
    :func:`check_seams` (the seams after the header: :func:`opening_samples`)."""
    filler, pool = plan.filler, plan.content.pool
    seqs: list[list[str]] = []
    seqs += [before + after for before, after in _needle_runs(plan, n_items, head=())]
    for item in plan.items[:n_items]:
        tail = [pool[i] for i in item.body[-2:]]
        extra = int(plan.extra[item.base_id])
        seqs.append([*tail, filler.line(item.leftover - extra), item.needle.question])
    # every filler length between body pieces
    a, b = pool[0], pool[min(1, len(pool) - 1)]
    for k in range(filler.min_tokens, filler.max_tokens + 1):
        seqs.append([a, filler.line(k), b])
    # the pool in chunks, so that many real body/body seams are tested
    step = 64
    for start in range(0, min(len(pool), 64 * step), step):
        seqs.append(list(pool[start : start + step]))
    return [[p for p in seq if p] for seq in seqs]


def opening_samples(plan: NeedlePlan, n_items: int = 2) -> list[list[str]]:
    """Real piece sequences that open a prompt (the header, then what follows it), for
    :func:`check_seams`."""
    header = plan.content.header
    seqs = [before for before, _ in _needle_runs(plan, n_items, head=(header,))]
    seqs += [[header, *[plan.content.pool[i] for i in item.body[:64]]]
             for item in plan.items[:n_items]]  # fmt: skip
    return [[p for p in seq if p] for seq in seqs]


def exact_check(plan: NeedlePlan, row: dict) -> None:
    """Re-encode one whole prompt on the exact path and compare every claim."""
    tok = plan.tok
    n, (anchor, question) = tok.token_index_at(
        row["prompt"], [row["key_char"], row["question_char"]]
    )
    if (n, anchor, question) != (row["length"], row["anchor_index"], row["question_index"]):
        raise AssemblyError(
            f"exact re-encoding of {row['id']} disagrees with the fast path: length {n} vs "
            f"{row['length']}, anchor {anchor} vs {row['anchor_index']}, question {question} vs "
            f"{row['question_index']}"
        )


def prepare(spec: SplitSpec, tok: PhaseTokenizer, content: NeedleContent) -> NeedlePlan:
    """Plan, check every seam kind on real pieces, and check one prompt on the exact path."""
    p = plan(spec, tok, content)
    check_seams(tok, seam_samples(p), spec.family, opening=opening_samples(p))
    exact_check(p, next(p.render([0])))
    return p


def verify_row(tok: PhaseTokenizer, row: dict) -> list[str]:
    """Exact-path checks of one kv/niah row, independent of the fast path; problems found."""
    problems = []
    prompt, key = row["prompt"], row["needle_key"]
    if prompt.find(key) != row["key_char"]:
        problems.append(
            f"needle key {key!r} first occurs at char {prompt.find(key)}, "
            f"not at the needle (char {row['key_char']})"
        )
    n, (anchor, question) = tok.token_index_at(prompt, [row["key_char"], row["question_char"]])
    for name, got in (("length", n), ("anchor_index", anchor), ("question_index", question)):
        if got != row[name]:
            problems.append(f"{name} is {got} on re-encoding, row claims {row[name]}")
    return problems


def needle_problems(row: dict, needle: Needle) -> list[str]:
    """What a row claims about its needle, checked in the prompt text (independent of any
    hash, so a prompt edited with its hashes recomputed is still caught): the needle's key
    occurs exactly once before the question, the needle at ``key_char`` reads exactly as
    ``needle`` (so the value stated for the key is the row's answer), and the question that
    ends the prompt asks for that key. ``needle`` is the family's rendering of the row's key
    and answer."""
    problems = []
    prompt, key = row["prompt"], row["needle_key"]
    question_at = row["question_char"]
    context = prompt[:question_at] if 0 <= question_at <= len(prompt) else prompt
    if context.count(key) != 1:
        problems.append(
            f"needle key {key!r} occurs {context.count(key)} times before the question, not once"
        )
    start = row["key_char"] - needle.keyed.index(needle.key)
    found = prompt[max(0, start) : max(0, start) + len(needle.keyed)]
    if start < 0 or found != needle.keyed or not prompt[:start].endswith(needle.lead):
        problems.append(
            f"the needle reads {found!r}, not {needle.keyed!r}: the prompt does not give the "
            f"answer {row['answer']!r} for its key"
        )
    if prompt[question_at:] != needle.question:
        problems.append(f"the question does not ask for the needle's key {key!r}")
    return problems


def verify_config(spec: SplitSpec, meta: dict) -> list[str]:
    """Config-level claims of a kv/niah config: every prompt has the spec's length (with the
    length axis: ``length + e`` for its length phase, ``e`` in 0..P-1), the question starts at
    one token index (plus ``e``), and every base item is rendered exactly once at every phase
    of each varied axis (the spec's subset of residues) with one answer, key and question
    index, its anchor fixed across length phases."""
    problems = []
    P, L = spec.modulus, spec.length
    lengths = np.array(meta["length"])
    more = lengths - L
    if spec.length_phases:
        if np.any((more < 0) | (more >= P)) or set(meta["config_length"]) != {L}:
            problems.append(f"prompt lengths are not {L}..{L + P - 1} in a config of {L}")
        if np.any(lengths % P != np.array(meta["length_phase"])):
            problems.append("some rows have length_phase != length mod modulus")
    elif set(meta["length"]) != {L}:
        problems.append(f"not every prompt is {L} tokens long")
    questions = np.array(meta["question_index"]) - more
    if len(set(questions.tolist())) != 1:
        problems.append("the question does not start at the same token index in every prompt")
    groups: dict[int, list[int]] = defaultdict(list)
    for i, b in enumerate(meta["base_id"]):
        groups[b].append(i)
    if len(groups) != spec.n_base:
        problems.append(f"{len(groups)} base items, spec asks for {spec.n_base}")
    residues = list(spec.residues)
    for b, idx in groups.items():
        needle = residues
        if spec.length_phases == "only":
            needle = sorted({meta["phase"][i] for i in idx})
            if len(needle) != 1:
                problems.append(f"base item {b}: its needle moves between length phases")
        ends = residues if spec.length_phases else [L % P]
        cells = sorted((meta["phase"][i], int(lengths[i] % P)) for i in idx)
        if cells != sorted((r, e) for r in needle for e in ends):
            problems.append(f"base item {b} is not rendered exactly once at every phase")
        for col in ("answer", "needle_key"):
            if len({meta[col][i] for i in idx}) != 1:
                problems.append(f"base item {b}: {col} differs between its phase renderings")
        if len({int(questions[i]) for i in idx}) != 1 or (
            not spec.length_phases and len({meta["length"][i] for i in idx}) != 1
        ):
            problems.append(f"base item {b}: question_index differs between its renderings")
        by_needle: dict[int, set[int]] = defaultdict(set)
        for i in idx:
            by_needle[meta["phase"][i]].add(meta["anchor_index"][i])
        if any(len(a) != 1 for a in by_needle.values()):
            problems.append(f"base item {b}: the anchor moves with the length phase")
    return problems


def needle_family(
    name: str,
    content: Callable[[SplitSpec, PhaseTokenizer], NeedleContent],
    needle: Callable[[str, str], Needle],
    describe: Callable[[NeedlePlan], dict],
    **facts: Any,
) -> Family:
    """A needle family's :class:`~phasebench.families.Family`: ``content(spec, tok)`` is what
    its prompts are made of; ``needle(key, value)`` how its needle and question read (every
    verified row's needle is read back against it); ``describe(plan)`` the facts its manifest
    adds; ``facts`` the rest of its record (its Hub tag, ``takes_haystack``, ...). Planning,
    the spec's own rules, the exact-path checks and the config checks are the engine's, and
    so is the Hub task: a question answered by a span of the prompt (extractive QA)."""

    def prepare_config(spec: SplitSpec, tok: PhaseTokenizer) -> NeedlePlan:
        """Plan the config and check its seams and one whole prompt on the exact path."""
        return prepare(spec, tok, content(spec, tok))

    def verify_needle_row(tok: PhaseTokenizer, row: dict) -> list[str]:
        """The engine's exact-path checks, and the needle read back from the prompt: the
        needle for the row's key states the row's answer, and the question asks for that key."""
        return verify_row(tok, row) + needle_problems(row, needle(row["needle_key"], row["answer"]))

    for declared in (prepare_config, verify_needle_row):
        declared.__module__ = content.__module__  # where the family is declared (``register``)
    return Family(
        name=name,
        prepare=prepare_config,
        exact_check=exact_check,
        verify_row=verify_needle_row,
        verify_config=verify_config,
        describe=describe,
        check_spec=check_spec,
        **{"hub_task_category": "question-answering", "hub_task_id": "extractive-qa", **facts},
    )
