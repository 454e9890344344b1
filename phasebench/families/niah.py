"""The ``niah`` family: running prose, one needle sentence, then the question.

The needle reads "The special magic number for KEY is VALUE." and sits inside the prose; the
anchor is the first token of KEY. KEY is a made-up word drawn per base item from syllables (and
checked absent from the header and the haystack), VALUE a random seven-digit number.

Haystack, by default: sentences rendered from the jinja2 shapes in
``generators/niah/sentences.yaml`` over the lexicon in ``generators/niah/lexicon.yaml``. One
pool of distinct sentences per config, encoded once; each base item draws its own random
sequence from it. Every sentence is a body piece starting with a space, so pieces join into
running prose and no token spans two of them (the engine proves this with ``check_seams``).

With ``spec.haystack`` (``--haystack FILE``) the prose is the user's text instead, cut after
sentence ends (long sentences also between words) at seams the tokenizer is checked not to merge
across, repeated as often as the length needs; each base item reads it from its own random start.

The engine's filler between the pieces it moves (see ``needle.py``) is an inline asterism
``" * * *"``: a section break in prose, measured to grow by one token per ``" *"``.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2.meta
import numpy as np
import yaml

from phasebench import templates
from phasebench.errors import AssemblyError, SpecError
from phasebench.families import needle as engine
from phasebench.rng import derive_rng
from phasebench.tokenization import PhaseTokenizer

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

#: Inline section-break filler, in order of preference (the first that grows by exactly one
#: token per unit on the tokenizer is used).
FILLER_UNITS = (" *", " .", " -", " ~", " the")
#: Longest haystack-file piece, in characters, before it is also cut between words.
MAX_PIECE_CHARS = 400
_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr",
           "gl", "kr", "pl", "st", "tr", "sk", "th", "sh")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODAS = ("", "", "", "n", "r", "l", "x", "m", "s", "k")
_SENTENCE_END = re.compile(r"(?<=[.!?]) (?=\S)|(?<=[.!?][\"')\]]) (?=\S)")
_WORD_START = re.compile(r" (?=\S)")
_ARTICLE = re.compile(r"\b([Aa]) (?=[aeiou])")
_LOWER_RUN = re.compile("[a-z]+")


# -- built-in prose -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def lexicon() -> dict[str, tuple[str, ...]]:
    """Word lists by category (``generators/niah/lexicon.yaml``)."""
    path = templates.generators_dir() / "niah" / "lexicon.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {str(k): tuple(str(w) for w in v) for k, v in data.items()}


@functools.lru_cache(maxsize=1)
def _sentence_shapes() -> tuple[tuple[jinja2.Template, tuple[tuple[str, str], ...]], ...]:
    """Compiled sentence templates, each with its slots as (variable, lexicon category)."""
    env = templates.environment()
    path = templates.generators_dir() / "niah" / "sentences.yaml"
    words = lexicon()
    shapes = []
    for source in yaml.safe_load(path.read_text(encoding="utf-8")):
        names = sorted(jinja2.meta.find_undeclared_variables(env.parse(source)))
        slots = tuple((n, re.sub(r"_[bc]$", "", n)) for n in names)
        missing = [c for _, c in slots if c not in words]
        if missing:
            raise AssemblyError(f"sentence shape {source!r} uses unknown categories {missing}")
        shapes.append((env.from_string(source), slots))
    return tuple(shapes)


def prose_pool(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct sentences, each with a leading space, in a random order."""
    shapes, words = _sentence_shapes(), lexicon()
    width = max(len(slots) for _, slots in shapes)
    seen: dict[str, None] = {}
    for _ in range(64):  # each round yields mostly new sentences; the bound is never reached
        m = size - len(seen)
        if m <= 0:
            break
        kinds = rng.integers(0, len(shapes), m)
        draws = rng.random((m, width))
        for kind, u in zip(kinds, draws, strict=True):
            template, slots = shapes[kind]
            values = {
                name: words[cat][int(x * len(words[cat]))]
                for (name, cat), x in zip(slots, u, strict=False)
            }
            text = _ARTICLE.sub(r"\1n ", template.render(values))
            seen.setdefault(" " + text[:1].upper() + text[1:], None)
    if len(seen) < size:
        raise AssemblyError(f"the sentence shapes yield fewer than {size} distinct sentences")
    return list(seen)[:size]


def pool_size(length: int) -> int:
    """Enough sentences for any tokenizer that spends at least four tokens on a sentence."""
    return length // 4 + 1024


# -- a user's haystack file ---------------------------------------------------------------------


def read_haystack(path: str) -> tuple[str, str]:
    """The text of ``--haystack FILE`` and its SHA-256, or a clear error."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise SpecError(f"'haystack' file {path!r} does not exist; give a UTF-8 text file")
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"'haystack' file {path!r} is not UTF-8 text") from None
    if len(text.split()) < 20:
        raise SpecError(f"'haystack' file {path!r} holds too little text (< 20 words)")
    return text, "sha256:" + hashlib.sha256(data).hexdigest()


def cut_text(text: str) -> list[str]:
    """Cut running text into pieces that each start with one space before a non-space: after
    sentence ends, and pieces longer than :data:`MAX_PIECE_CHARS` also between words."""
    text = " " + text.replace("\r\n", "\n").strip()
    pieces: list[str] = []
    for sentence in _split_at(text, _SENTENCE_END):
        if len(sentence) <= MAX_PIECE_CHARS:
            pieces.append(sentence)
            continue
        chunk = ""
        for word in _split_at(sentence, _WORD_START):
            if chunk and len(chunk) + len(word) > MAX_PIECE_CHARS:
                pieces.append(chunk)
                chunk = ""
            chunk += word
        pieces.append(chunk)
    return pieces


def _split_at(text: str, pattern: re.Pattern) -> list[str]:
    """Split ``text`` before the space each match of ``pattern`` consumes (the space is kept
    at the start of the following part)."""
    cuts = [m.start() for m in pattern.finditer(text)]
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def merge_seams(tok: PhaseTokenizer, pieces: list[str]) -> list[str]:
    """Join neighbours whose seam the tokenizer merges across (wrap-around seam included, as
    the text repeats), until every seam is additive. Bounded: each round removes a piece."""
    pieces = list(pieces)
    while len(pieces) > 1:
        pairs = [a + b for a, b in zip(pieces, pieces[1:] + pieces[:1], strict=True)]
        alone = tok.piece_ids(pieces)
        joined = tok.piece_ids(pairs)
        n = len(pieces)
        bad = [i for i in range(n) if alone[i] + alone[(i + 1) % n] != joined[i]]
        if not bad:
            return pieces
        merged: list[str] = []
        skip = set()
        for i in range(n):
            if i in skip:
                continue
            if i in bad and i + 1 < n:
                merged.append(pieces[i] + pieces[i + 1])
                skip.add(i + 1)
            else:
                merged.append(pieces[i])
        if len(merged) == n:  # only the wrap-around seam merges: end the text with a space-free cut
            raise AssemblyError(
                f"tokenizer {tok.name!r} merges the end of the haystack file with its start"
            )
        pieces = merged
    raise AssemblyError("the haystack file cannot be cut into pieces for this tokenizer")


# -- needles ------------------------------------------------------------------------------------


def key_word(rng: np.random.Generator) -> str:
    """A made-up three-syllable word, e.g. ``velmorax``."""
    parts = []
    for _ in range(3):
        parts.append(_ONSETS[rng.integers(len(_ONSETS))])
        parts.append(_VOWELS[rng.integers(len(_VOWELS))])
        parts.append(_CODAS[rng.integers(len(_CODAS))])
    return "".join(parts)


class KeySearch:
    """``key in KeySearch(text)`` is ``key in text``, fast for keys of lowercase letters.

    Such a key occurs in the text exactly where it occurs inside one of the text's runs of
    lowercase letters, so it is searched for among the distinct runs, one per line: a few
    thousand words instead of the whole pool text of a 128K config, searched once for every
    needle drawn. Any other key is searched for in the text itself."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.runs = "\n".join(dict.fromkeys(_LOWER_RUN.findall(text)))

    def __contains__(self, key: str) -> bool:
        if key and _LOWER_RUN.fullmatch(key):
            return key in self.runs
        return key in self.text


def content(spec: SplitSpec, tok: PhaseTokenizer) -> engine.NeedleContent:
    header = templates.render("niah/header.j2")
    info: dict = {}
    if spec.haystack:
        text, digest = read_haystack(spec.haystack)
        pieces = merge_seams(tok, cut_text(text))
        tokens = int(tok.count(pieces).sum())
        reps = -(-(spec.length + tokens) // max(tokens, 1))
        pool = pieces * reps
        info = {
            "haystack": "file",
            "haystack_file": Path(spec.haystack).name,
            "haystack_sha256": digest,
            "haystack_pieces": len(pieces),
            "haystack_tokens": tokens,
            "haystack_repeats_in_pool": reps,
        }
        n_text = len(pieces)

        def draw_body(r: np.random.Generator, n: int) -> np.ndarray:
            start = int(r.integers(0, n_text))  # read the text in order from a random start
            return (start + np.arange(min(n, len(pool) - start))) % len(pool)

    else:
        pool = prose_pool(
            derive_rng(spec.seed, "niah", spec.length, "pool"), pool_size(spec.length)
        )
        info = {"haystack": "procedural", "sentence_shapes": len(_sentence_shapes())}

        def draw_body(r: np.random.Generator, n: int) -> np.ndarray:
            return r.choice(len(pool), size=min(n, len(pool)), replace=False)

    lead = templates.render("niah/needle.j2", part="lead", key="", value="")
    searched = KeySearch(header + lead + "".join(dict.fromkeys(pool)))

    def draw_needle(r: np.random.Generator) -> engine.Needle:
        for _ in range(engine.MAX_NEEDLE_DRAWS):
            key = key_word(r)
            if key not in searched:
                break
        else:
            raise AssemblyError("every drawn needle key occurs in the haystack")
        return needle(key, str(int(r.integers(1_000_000, 10_000_000))))

    return engine.NeedleContent(
        header=header,
        pool=pool,
        draw_needle=draw_needle,
        draw_body=draw_body,
        filler_units=FILLER_UNITS,
        filler_sep="",
        filler_end="",
        info=info,
    )


def needle(key: str, value: str) -> engine.Needle:
    """The needle sentence for ``key`` and its ``value``, and the question asking for it."""
    return engine.Needle(
        lead=templates.render("niah/needle.j2", part="lead", key=key, value=value),
        keyed=templates.render("niah/needle.j2", part="keyed", key=key, value=value),
        key=key,
        answer=value,
        question=templates.render("niah/question.j2", key=key),
    )


def distinct_ngram_share(ids: list[int], n: int = 4) -> float:
    """Share of distinct token n-grams among all n-grams: 1.0 never repeats, near 0 loops."""
    if len(ids) < n:
        return 1.0
    grams = np.lib.stride_tricks.sliding_window_view(np.asarray(ids, dtype=np.int64), n)
    return float(len(np.unique(grams, axis=0)) / len(grams))


def describe(plan: engine.NeedlePlan) -> dict:
    pool = plan.content.pool
    first = plan.items[0]
    body_ids = [i for ids in plan.tok.piece_ids([pool[j] for j in first.body]) for i in ids]
    pieces = [len(it.body) for it in plan.items]
    P = plan.spec.modulus
    filler = [2 * plan.pad + P - 1 + it.leftover for it in plan.items]
    return {
        **plan.content.info,
        "filler_unit": plan.filler.unit,
        "body_pieces_per_prompt_mean": round(float(np.mean(pieces)), 2),
        "filler_tokens_per_prompt_mean": round(float(np.mean(filler)), 2),
        "filler_tokens_per_prompt_max": int(np.max(filler)),
        "haystack_distinct_4gram_share": round(distinct_ngram_share(body_ids), 4),
        "example_needle": first.needle.lead + first.needle.keyed,
    }


FAMILY = engine.needle_family(
    "niah",
    content=content,
    needle=needle,
    describe=describe,
    takes_haystack=True,
    hub_tag="needle-in-a-haystack",
)
#: Plan a config (:func:`phasebench.families.needle.prepare` on niah's content).
prepare = FAMILY.prepare
