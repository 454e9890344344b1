"""Exact one-token shifts of a user's prompt.

A shift of k tokens inserts padding at ``{{shift}}`` and is *exact* when the whole prompt,
encoded as the backend encodes it, is the prompt without padding with tokens spliced in at the
marker and nothing else changed: the ids before the marker are the same, the ids after it are the
same ids moved by exactly k. In the paired design (``{{balance}}``) padding goes in at both
markers, k more tokens at the first and k fewer at the second, so every id after the second
marker stays where it was and only the key passage moves.

Exactness is decided by ids, never by characters (``====`` can be one token, and a padding line
can merge with the text around the marker). For each padding style the lengths that grow the
padding by exactly one token are *measured* on the whole prompt, in batches, for this tokenizer,
this chat template and this BOS behaviour: for every wanted count the shortest longer padding
whose whole-prompt encoding is an exact splice of that many tokens. Every final rendering is then
encoded whole once more and checked (:func:`_check_splice`), and a style that cannot be inserted
exactly at this marker is left out with its reason.

The styles are the ``code`` family's four padding blocks (a docstring of ``=``, comment banners of
``-``, ``#`` and ``*``), phasebench's filler line (the unit :func:`build_filler_table` finds for
this tokenizer, repeated), and a filler line the user gives (``custom``), so that one style's
content cannot explain a result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from phasebench.errors import AssemblyError
from phasebench.families import code
from phasebench.probe.prompt import BALANCE, QUESTION, SHIFT, ProbeError, ProbePrompt
from phasebench.specs import DEFAULT_MODULUS
from phasebench.tokenization import PhaseTokenizer, build_filler_table

FILLER = "filler"
CUSTOM = "custom"
STYLE_NAMES = (*code.STYLE_NAMES, FILLER, CUSTOM)
DEFAULT_STYLES = code.STYLE_NAMES
#: Padding lengths (characters, or filler units) tried per tokenizer call.
WINDOW = 64
#: Longest padding searched, in characters or units.
MAX_PAD = 1 << 13
#: A style whose first exact padding is not found within this many lengths cannot be inserted
#: at this marker at all (its first character merges with the text around it).
FIRST_WITHIN = 4 * WINDOW


@dataclass(frozen=True)
class Frame:
    """What surrounds the prompt in the sequence the model receives: a chat template's text
    before and after the user message (empty without one), and whether the tokenizer's special
    tokens (a BOS) are added when the whole is encoded (not when the template already starts
    with the BOS, as lm-eval's ``hf`` backend decides)."""

    head: str = ""
    tail: str = ""
    special: bool = True
    chat: bool = False
    system: str | None = None

    def wrap(self, content: str) -> str:
        return self.head + content + self.tail


def _plain_frame() -> Frame:
    return Frame()


def chat_frame(tok: PhaseTokenizer, system: str | None = None) -> Frame:
    """The tokenizer's chat template around one user message (and ``system``), rendered with
    the generation prompt, as lm-eval's backends apply it."""
    from phasebench.lmeval.data import chat_template_frame

    head, tail, special = chat_template_frame(tok, system)
    return Frame(head, tail, special, chat=True, system=system)


def _encode(tok: PhaseTokenizer, frame: Frame, contents: Sequence[str]) -> list[list[int]]:
    """Ids of the whole sequence around each user message, encoded as the backend encodes it."""
    return encode_texts(tok, frame, [frame.wrap(c) for c in contents])


def encode_texts(tok: PhaseTokenizer, frame: Frame, texts: Sequence[str]) -> list[list[int]]:
    """Ids of each whole sequence text (template included), as the backend encodes it."""
    enc = tok.hf(list(texts), add_special_tokens=frame.special)
    return [list(ids) for ids in enc["input_ids"]]


def _pad_text(style: str, n: int, tok: PhaseTokenizer, custom: str | None) -> str:
    if style in code.STYLE_NAMES:
        return code.pad_block(style, n)
    if style == FILLER:
        unit = _filler_unit(tok)
        return unit.sep.join([unit.unit] * n) + unit.end
    if style == CUSTOM:
        if not custom:
            raise ProbeError("the 'custom' padding style needs the filler line (--filler TEXT)")
        return (custom * (n // len(custom) + 1))[:n]
    raise ProbeError(f"unknown padding style {style!r}; choose from {', '.join(STYLE_NAMES)}")


def _filler_unit(tok: PhaseTokenizer):
    try:
        return build_filler_table(tok, 8)
    except AssemblyError as exc:
        raise ProbeError(str(exc)) from None


@dataclass(frozen=True)
class Reference:
    """The prompt without padding, encoded whole, and where its markers fall in its ids."""

    content: str
    ids: tuple[int, ...]
    #: Character offset in ``content`` of each marker's position, and the token index there.
    chars: dict[str, int]
    tokens: dict[str, int]


def reference(tok: PhaseTokenizer, frame: Frame, prompt: ProbePrompt) -> Reference:
    """Encode the prompt without padding and find the token index at each marker; refuse a
    marker inside a token (the tokenizer merges the text on both sides, so no padding there
    can be an exact shift)."""
    content = prompt.plain
    chars = {SHIFT: len(prompt.before)}
    if prompt.paired:
        chars[BALANCE] = len(prompt.before) + len(prompt.key)
    if prompt.question_char >= 0:
        chars[QUESTION] = prompt.question_char
    text = frame.wrap(content)
    enc = tok.hf(text, add_special_tokens=frame.special, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    tokens = {}
    for marker, c in chars.items():
        at = len(frame.head) + c
        inside = [(s, e) for s, e in offsets if s < at < e]
        if inside:
            s, e = inside[0]
            raise ProbeError(
                f"the {marker} marker splits the token {text[s:e]!r}, which the tokenizer "
                f"encodes as one piece across the marker, so no padding there is an exact "
                f"shift; move {marker} to a token boundary (the start of a line is one)"
            )
        # the first text token at or after the marker (special tokens before it, a BOS, count)
        tokens[marker] = next(
            (i for i, (s, e) in enumerate(offsets) if e > s and s >= at),
            max((i + 1 for i, (s, e) in enumerate(offsets) if e > s), default=len(ids)),
        )
    return Reference(content, tuple(ids), chars, tokens)


def _splice_count(ref: Reference, ids: Sequence[int], at: int) -> int | None:
    """``len(X)`` if ``ids`` is exactly ``ref.ids[:at] + X + ref.ids[at:]`` with X not empty,
    else None."""
    r = ref.ids
    n = len(ids) - len(r)
    if n < 1 or tuple(ids[:at]) != r[:at] or tuple(ids[at + n :]) != r[at:]:
        return None
    return n


def _check_splice(ref: Reference, ids: Sequence[int], pads: Sequence[int]) -> bool:
    """Whether ``ids`` is the reference with ``pads[0]`` tokens spliced in at ``{{shift}}`` (and
    ``pads[1]`` at ``{{balance}}``) and every reference id unchanged, in order."""
    r = ref.ids
    a = ref.tokens[SHIFT]
    if len(ids) != len(r) + sum(pads):
        return False
    if tuple(ids[:a]) != r[:a]:
        return False
    if len(pads) == 1:
        return tuple(ids[a + pads[0] :]) == r[a:]
    b = ref.tokens[BALANCE]
    start = a + pads[0]
    if tuple(ids[start : start + b - a]) != r[a:b]:
        return False
    return tuple(ids[start + b - a + pads[1] :]) == r[b:]


@dataclass(frozen=True)
class PadTable:
    """Padding lengths (characters or units) whose insertion at one marker is an exact splice of
    ``first``, ``first + 1``, ... tokens (measured on the whole prompt)."""

    style: str
    marker: str
    first: int
    sizes: tuple[int, ...]


def _measure_pads(
    tok: PhaseTokenizer,
    frame: Frame,
    ref: Reference,
    style: str,
    marker: str,
    n_counts: int,
    custom: str | None = None,
) -> PadTable:
    """For ``n_counts`` consecutive token counts, a padding (each longer than the last) that,
    inserted at ``marker`` alone, makes the whole prompt an exact splice of that many tokens.

    Every candidate is judged on the whole prompt's encoding. Long runs of one character encode
    slowly (DeepSeek-V4 spends about 57 ``=`` on a token), so after the first count the search
    steps over lengths at about one token's worth of characters, bisects where the count reaches
    the next value, and falls back to trying every length when that lands on a length that is
    not exact: which length is found may depend on the stepping, whether it is exact never does.
    """
    at_char, at = ref.chars[marker], ref.tokens[marker]
    content = ref.content
    seen: dict[int, tuple[int, bool]] = {}

    def measure(ns: Sequence[int]) -> list[tuple[int, bool]]:
        todo = [n for n in dict.fromkeys(ns) if n not in seen]
        texts = [
            content[:at_char] + _pad_text(style, n, tok, custom) + content[at_char:] for n in todo
        ]
        for n, ids in zip(todo, _encode(tok, frame, texts) if todo else [], strict=True):
            seen[n] = (len(ids) - len(ref.ids), _splice_count(ref, ids, at) is not None)
        return [seen[n] for n in ns]

    def scan(lo: int, hi: int, want: int | None) -> int | None:
        """The first length in lo..hi whose padding is exact (with ``want`` tokens)."""
        while lo <= hi:
            window = list(range(lo, min(lo + WINDOW, hi + 1)))
            for n, (count, exact) in zip(window, measure(window), strict=True):
                if exact and count >= 1 and (want is None or count == want):
                    return n
            lo = window[-1] + 1
        return None

    found = scan(1, FIRST_WITHIN, None)
    if found is None:
        raise ProbeError(
            f"the {style} padding merges with the text around {marker} on tokenizer "
            f"{tok.name!r}, so it cannot be inserted exactly there"
        )
    first = seen[found][0]
    sizes = [found]
    while len(sizes) < n_counts:
        want, lo = first + len(sizes), sizes[-1] + 1
        step = max(1, sizes[-1] // (first + len(sizes) - 1))
        hit = _bracket(measure, lo, want, step)
        if hit is not None and seen[hit] == (want, True):
            sizes.append(hit)
            continue
        n = scan(lo, MAX_PAD, want)
        if n is None:
            raise ProbeError(
                f"the {style} padding at {marker} does not reach {first + n_counts - 1} tokens "
                f"one token at a time within {MAX_PAD} characters on tokenizer {tok.name!r}"
            )
        sizes.append(n)
    return PadTable(style, marker, first, tuple(sizes))


def _bracket(
    measure: Callable[[Sequence[int]], list[tuple[int, bool]]], lo: int, want: int, step: int
) -> int | None:
    """The smallest length from ``lo`` whose token count reaches ``want``, if the count grows
    with the length: stepping by ``step`` (16 steps per call), then bisecting."""
    prev = lo - 1
    while prev < MAX_PAD:
        grid = [min(prev + step * (j + 1), MAX_PAD) for j in range(16)]
        counts = [c for c, _ in measure(grid)]
        reached = next((i for i, c in enumerate(counts) if c >= want), None)
        if reached is None:
            prev = grid[-1]
            continue
        left, right = (grid[reached - 1] if reached else prev), grid[reached]
        while right - left > 1:  # count(left) < want <= count(right)
            mid = (left + right) // 2
            if measure([mid])[0][0] >= want:
                right = mid
            else:
                left = mid
        return right
    return None


@dataclass(frozen=True)
class Rendering:
    """One shifted prompt: ``content`` is the user message (the prompt with padding), ``text``
    the whole sequence's text (``content`` inside the chat template, if any)."""

    style: str
    shift: int
    round: int
    content: str
    text: str
    n_tokens: int
    anchor: int  # index of the key passage's first token in the sequence the model receives
    phase: int
    pad_tokens: tuple[int, ...]
    question_char: int  # in ``content``; -1 without {{question}}
    question_index: int  # token index of the question's first token; -1 without

    def to_dict(self) -> dict[str, Any]:
        return {
            "style": self.style,
            "shift": self.shift,
            "round": self.round,
            "n_tokens": self.n_tokens,
            "anchor": self.anchor,
            "phase": self.phase,
            "pad_tokens": list(self.pad_tokens),
        }


@dataclass(frozen=True)
class ShiftPlan:
    """Every rendering of the probe, each re-encoded whole and checked exact."""

    prompt: ProbePrompt
    modulus: int
    rounds: int
    frame: Frame
    ref: Reference
    renderings: tuple[Rendering, ...]
    styles: tuple[str, ...]
    refused: dict[str, str] = field(default_factory=dict)
    choices: tuple[str, ...] = ()

    @property
    def n_shifts(self) -> int:
        return self.modulus * self.rounds

    @property
    def longest(self) -> int:
        return max(r.n_tokens for r in self.renderings)


#: The most shifts per padding style (``rounds * modulus``): each is one whole-sequence encoding
#: and one model call per style, so a probe stays minutes, not hours.
MAX_SHIFTS = 4096


def check_limits(modulus: int, rounds: int, custom: str | None = None) -> None:
    """Refuse, before any work, a probe beyond its limits (a modulus above the largest a split
    may have, more than :data:`MAX_SHIFTS` shifts per style) or an empty ``--filler``."""
    from phasebench.specs import MAX_MODULUS

    if modulus < 2:
        raise ProbeError(f"'--modulus' must be >= 2 (got {modulus})")
    if modulus > MAX_MODULUS:
        raise ProbeError(
            f"'--modulus' {modulus} is above {MAX_MODULUS}, the largest phase modulus a split "
            f"may have"
        )
    if rounds < 1:
        raise ProbeError(f"'--rounds' must be >= 1 (got {rounds})")
    if rounds * modulus > MAX_SHIFTS:
        raise ProbeError(
            f"'--rounds' {rounds} x '--modulus' {modulus} is {rounds * modulus} shifts per "
            f"style; the limit is {MAX_SHIFTS} (lower --rounds)"
        )
    if custom is not None and not custom.strip():
        raise ProbeError("'--filler' needs a line of text (got an empty one)")


def plan_shifts(
    tok: PhaseTokenizer,
    prompt: ProbePrompt,
    *,
    modulus: int = DEFAULT_MODULUS,
    rounds: int = 4,
    styles: Sequence[str] = DEFAULT_STYLES,
    custom: str | None = None,
    frame: Frame | None = None,
    choices: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> ShiftPlan:
    """Shifts k = 0 .. rounds * modulus - 1 of ``prompt`` in every usable style, each encoded
    whole and checked to be an exact splice; with ``choices``, each checked to add exactly one
    token after every rendering (as lm-eval scores a continuation)."""
    check_limits(modulus, rounds, custom)
    unknown = [s for s in styles if s not in STYLE_NAMES]
    if unknown or not styles:
        raise ProbeError(
            f"unknown padding style(s) {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(STYLE_NAMES)}"
        )
    if CUSTOM in styles and not custom:
        raise ProbeError("the 'custom' padding style needs the filler line (--filler TEXT)")
    frame = frame or _plain_frame()
    ref = reference(tok, frame, prompt)
    n = modulus * rounds
    markers = (SHIFT, BALANCE) if prompt.paired else (SHIFT,)
    renderings: list[Rendering] = []
    used, refused = [], {}
    for style in dict.fromkeys(styles):
        if progress:
            progress(style)
        try:
            tables = [_measure_pads(tok, frame, ref, style, m, n, custom) for m in markers]
            renderings.extend(_render(tok, frame, ref, prompt, tables, modulus, custom))
        except ProbeError as exc:
            refused[style] = str(exc)
            continue
        used.append(style)
    if not used:
        reasons = "; ".join(refused.values())
        raise ProbeError(
            f"no padding style can be inserted exactly at {SHIFT} ({reasons}); put the marker "
            f"on its own line, or give your own filler line with --filler TEXT --styles custom"
        )
    plan = ShiftPlan(prompt, modulus, rounds, frame, ref, tuple(renderings), tuple(used), refused)
    if choices:
        _check_choices(tok, plan, choices)
        plan = ShiftPlan(**{**plan.__dict__, "choices": tuple(choices)})
    return plan


def _render(
    tok: PhaseTokenizer,
    frame: Frame,
    ref: Reference,
    prompt: ProbePrompt,
    tables: Sequence[PadTable],
    modulus: int,
    custom: str | None,
) -> list[Rendering]:
    n = len(tables[0].sizes)
    out_content, pads = [], []
    for k in range(n):
        sizes = [tables[0].sizes[k]]
        counts = [tables[0].first + k]
        if len(tables) == 2:  # paired: k more at {{shift}}, k fewer at {{balance}}
            sizes.append(tables[1].sizes[n - 1 - k])
            counts.append(tables[1].first + n - 1 - k)
        texts = [_pad_text(tables[0].style, s, tok, custom) for s in sizes]
        content = prompt.before + texts[0] + prompt.key
        if len(texts) == 2:
            content += texts[1]
        content += prompt.after
        out_content.append((content, texts))
        pads.append(tuple(counts))
    encoded = _encode(tok, frame, [c for c, _ in out_content])
    out = []
    a = ref.tokens[SHIFT]
    for k, ((content, texts), ids, counts) in enumerate(
        zip(out_content, encoded, pads, strict=True)
    ):
        if not _check_splice(ref, ids, counts):
            raise ProbeError(
                f"the {tables[0].style} padding of shift {k} does not re-encode as an exact "
                f"splice of {list(counts)} tokens in the whole prompt"
            )
        q_char = q_index = -1
        if QUESTION in ref.chars:
            q_char = ref.chars[QUESTION] + len(texts[0])
            q_index = ref.tokens[QUESTION] + counts[0]
            if len(texts) == 2 and ref.chars[QUESTION] >= ref.chars[BALANCE]:
                q_char += len(texts[1])
                q_index += counts[1]
        anchor = a + counts[0]
        out.append(
            Rendering(
                style=tables[0].style,
                shift=k,
                round=k // modulus,
                content=content,
                text=frame.wrap(content),
                n_tokens=len(ids),
                anchor=anchor,
                phase=anchor % modulus,
                pad_tokens=tuple(counts),
                question_char=q_char,
                question_index=q_index,
            )
        )
    return out


def _check_choices(tok: PhaseTokenizer, plan: ShiftPlan, choices: Sequence[str]) -> None:
    """Each choice must add exactly one token after every rendering, the prompt's own ids
    unchanged (lm-eval scores the continuation's tokens; a two-token choice would compare sums
    of different lengths, and a merge would move the prompt's last token)."""
    if len(choices) != 2 or not all(choices) or choices[0] == choices[1]:
        raise ProbeError(
            f"--choices takes two different, non-empty candidates, the right one first, e.g. "
            f"--choices 8,32 (got {list(choices)})"
        )
    texts = [r.text for r in plan.renderings]
    base = encode_texts(tok, plan.frame, texts)
    for choice in choices:
        whole = encode_texts(tok, plan.frame, [t + choice for t in texts])
        for r, ids, w in zip(plan.renderings, base, whole, strict=True):
            if len(w) != len(ids) + 1 or w[: len(ids)] != ids:
                raise ProbeError(
                    f"the choice {choice!r} is {len(w) - len(ids)} tokens after the prompt "
                    f"(shift {r.shift}, {r.style}) or merges with its last token; give choices "
                    f"that are one token each right after the prompt (e.g. without a leading "
                    f"space when the prompt ends in one)"
                )


def check_question_cut(tok: PhaseTokenizer, plan: ShiftPlan) -> None:
    """For backends that encode the context before ``{{question}}`` on its own (kvpress): the
    context alone must encode to the first ``question_index`` ids of every whole rendering."""
    if QUESTION not in plan.ref.chars:
        raise ProbeError(f"mark where the question starts with {QUESTION}")
    heads = [r.text[: len(plan.frame.head) + r.question_char] for r in plan.renderings]
    wholes = encode_texts(tok, plan.frame, [r.text for r in plan.renderings])
    for r, head, whole in zip(plan.renderings, encode_texts(tok, plan.frame, heads), wholes,
                              strict=True):  # fmt: skip
        if len(head) != r.question_index or whole[: len(head)] != head:
            raise ProbeError(
                f"the context before {QUESTION} encodes differently alone than inside the "
                f"whole prompt (shift {r.shift}, {r.style}): a token spans the cut; move "
                f"{QUESTION} to just after the last sentence of the context, before any blank "
                f"line"
            )
