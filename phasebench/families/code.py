"""The ``code`` family: the published code-completion probe, phase-balanced.

A prompt is a Python file that ends exactly at a completion point whose right answer is one token
(``T.Cast(FP`` -> ``8``) and whose distractor is another (``32``)::

    padding block | item definitions | unrelated code (about L tokens; none when L = 0) | item use

Seams are placed where no pre-tokenizer joins across them: the padding block ends with one newline
and the definitions open with a letter; every other piece ends with a letter or digit, and blank
lines open the next one (a whitespace run split over a seam tokenizes differently alone than
joined on GPT-2-style tokenizers; DeepSeek's glues newlines to punctuation). Only the
padding block changes between the rows of one (item, padding style) unit: a docstring of
``=`` or a comment banner of ``-``, ``#`` or ``*``, swept over 16 lengths that grow by exactly one
token per step. The step is measured on this tokenizer (``========`` can be one token, so a
character is not a token), the seams between the blocks are proved additive with
:func:`~phasebench.tokenization.check_seams`, and whole prompts are re-encoded on the exact path.

Items come from the item templates under ``generators/code/<template>/`` (``defs.j2``, ``use.j2``),
with identifiers and constants drawn per item. An item whose right answer or distractor is not a
single token in the context of its prompt, or that repeats an earlier item, is redrawn from the
next stream of the same item (after :data:`NARROW_AFTER` failures with single-digit answers only,
for tokenizers that split numbers into digits); the manifest reports how many were.

Phase: the anchor is the first answer token, at index ``length`` (the prompt's token count). The 16
consecutive lengths of a unit cover every phase equally often for any modulus dividing 16, and
each unit's first padding length is shifted by up to ``4 * modulus - 1`` tokens so that every
phase group has the same anchor mean and standard deviation
(:func:`~phasebench.placement.assign_residues`).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import yaml

from phasebench import templates
from phasebench.errors import AssemblyError, SpecError
from phasebench.families import Family
from phasebench.placement import TOLERANCE, assign_residues, phase_stats
from phasebench.rng import derive_rng
from phasebench.specs import SplitSpec
from phasebench.tokenization import PhaseTokenizer, check_seams

#: Item templates under ``generators/code/``; item ``i`` uses ``TEMPLATES[i % 4]``.
TEMPLATES = ("cast", "bits", "block", "heads")
#: Padding styles: (name, line prefix, repeated character, opening, closing).
STYLES = (
    ("docstring_eq", "", "=", '"""\n', '\n"""\n'),
    ("comment_dash", "# ", "-", "", "\n"),
    ("comment_hash", "", "#", "", "\n"),
    ("comment_star", "# ", "*", "", "\n"),
)
STYLE_NAMES = tuple(s[0] for s in STYLES)
#: Padding lengths per unit, one token apart.
SWEEP = 16
#: Streams tried per item before its item template is declared unusable for the tokenizer.
MAX_ATTEMPTS = 64
#: From this attempt on, an item draws single-digit answers only (``FP8`` vs ``FP4``, 8 heads vs
#: 2): tokenizers that split numbers into digits (Llama, SmolLM2) cannot score ``32`` as one token.
NARROW_AFTER = 8
#: Longest padding block searched, in characters.
MAX_PAD_CHARS = 1 << 13
#: Padding lengths measured per tokenizer call.
PAD_WINDOW = 64

#: Rows one code item renders to (padding styles x padding lengths), and the tokens a prompt holds
#: besides its ``length`` of unrelated code (the item and its padding, rounded up), for the
#: budget estimate made before anything is planned.
ROWS_PER_ITEM = len(STYLES) * SWEEP
ITEM_TOKENS = 1024

EXTRA_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("item_id", pa.string()),
    ("pad_style", pa.string()),
    ("pad_tokens", pa.int64()),
    ("config_length", pa.int64()),
)


# -- padding ------------------------------------------------------------------------------------


def pad_block(style: str, n_chars: int) -> str:
    """The padding block of ``style``: one line of ``n_chars`` repeated characters (as in the
    published probe; wrapping would add several tokens at once and break the one-token steps)."""
    _, prefix, char, opening, closing = STYLES[STYLE_NAMES.index(style)]
    return opening + prefix + char * n_chars + closing


@dataclass(frozen=True)
class PadTable:
    """Character counts whose block encodes to ``first``, ``first + 1``, ... tokens (measured),
    each longer than the previous one."""

    style: str
    first: int
    chars: tuple[int, ...]

    def block(self, tokens: int) -> str:
        i = tokens - self.first
        if not 0 <= i < len(self.chars):
            raise AssemblyError(
                f"no {self.style} padding of {tokens} tokens (table covers {self.first}.."
                f"{self.first + len(self.chars) - 1})"
            )
        return pad_block(self.style, self.chars[i])


_PAD_TABLES: dict[tuple[str, str], PadTable] = {}


def build_pad_table(tok: PhaseTokenizer, style: str, n_tokens: int) -> PadTable:
    """Measure block token counts for growing character counts and keep, from the shortest
    block on, the first longer block that has exactly one token more, ``n_tokens`` times.

    Counts are measured in windows of :data:`PAD_WINDOW` lengths; long runs of one character
    encode slowly, so tables are kept per tokenizer fingerprint and extended on demand (a pure
    cache: the table is a function of the tokenizer and the style)."""
    key = (tok.fingerprint, style)
    table = _PAD_TABLES.get(key)
    if table is None:
        table = PadTable(style, int(tok.count([pad_block(style, 1)], at_start=True)[0]), (1,))
    chars = list(table.chars)
    lo = chars[-1] + 1  # the shortest length not measured yet past the last kept one
    while len(chars) < n_tokens:
        want = table.first + len(chars)
        found = None
        while found is None and lo <= MAX_PAD_CHARS:
            lengths = np.arange(lo, lo + PAD_WINDOW)
            counts = tok.count([pad_block(style, int(n)) for n in lengths], at_start=True)
            hits = np.nonzero(counts == want)[0]
            if len(hits):
                found = int(lengths[hits[0]])
            else:
                lo += PAD_WINDOW
        if found is None:
            raise AssemblyError(
                f"tokenizer {tok.name!r}: no {style} padding of {want} tokens within "
                f"{MAX_PAD_CHARS} characters, so the padding cannot grow one token per step"
            )
        chars.append(found)
        lo = found + 1
    if len(chars) > len(table.chars):
        table = PadTable(style, table.first, tuple(chars))
        _PAD_TABLES[key] = table
    return PadTable(style, table.first, table.chars[:n_tokens])


# -- items --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def names() -> dict[str, tuple[str, ...]]:
    """Identifier parts (``generators/code/names.yaml``)."""
    path = templates.generators_dir() / "code" / "names.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {str(k): tuple(str(w) for w in v) for k, v in data.items()}


def _pick(rng: np.random.Generator, options: Sequence, k: int | None = None):
    if k is None:
        return options[int(rng.integers(len(options)))]
    return [options[int(i)] for i in rng.choice(len(options), size=k, replace=False)]


def _draw_cast(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    pairs = [(8, 4), (4, 8)] if narrow else [(8, 32), (8, 16), (16, 32)]
    right, distractor = _pick(rng, pairs)
    dtypes = {
        4: ("float4_e2m1fn",),
        8: ("float8_e4m3fn", "float8_e5m2"),
        16: ("float16", "bfloat16"),
        32: ("float32",),
    }
    a, out, acc = _pick(rng, n["tensor"], 3)
    return {
        "right": right,
        "distractor": distractor,
        "dtype_right": _pick(rng, dtypes[right]),
        "dtype_distractor": _pick(rng, dtypes[distractor]),
        "out_dtype": _pick(rng, ["out_dtype", "store_dtype", "dst_dtype", "q_dtype"]),
        "acc_dtype": _pick(rng, ["accum_dtype", "acc_dtype", "compute_dtype"]),
        "kernel": f"{_pick(rng, n['verb'])}_{_pick(rng, n['op'])}",
        "a": a,
        "out": out,
        "acc": f"{acc}_frag",
        "m": _pick(rng, [1024, 2048, 4096, 8192]),
        "k": _pick(rng, [512, 1024, 2048, 7168]),
        "bm": _pick(rng, [32, 64, 128]),
        "bn": _pick(rng, [64, 128, 256]),
        "threads": _pick(rng, [128, 256]),
    }


def _draw_bits(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    right, distractor = _pick(rng, [2, 4, 8] if narrow else [4, 8, 16, 32], 2)
    prefix, other = _pick(rng, ["WEIGHT", "ACT", "KV", "GRAD", "SCALE", "INDEX", "CODE"], 2)
    x, q = _pick(rng, n["word"], 2)
    return {
        "right": right,
        "distractor": distractor,
        "prefix": prefix,
        "other": other,
        "other_use": _pick(rng, ["debug dumps", "legacy checkpoints", "reference path"]),
        "fn": f"quantize_{_pick(rng, n['word'])}",
        "x": x,
        "q": q,
        "scale": _pick(rng, ["scale", "step", "delta", "unit"]),
    }


BLOCK_NAMES = (
    ("BLOCK_M", "BLOCK_N"),
    ("BLOCK_ROWS", "BLOCK_COLS"),
    ("TILE_M", "TILE_N"),
    ("BLOCK_SIZE_M", "BLOCK_SIZE_N"),
    ("BM", "BN"),
    ("BLOCK_Q", "BLOCK_KV"),
)


def _draw_block(rng: np.random.Generator, narrow: bool) -> dict:
    """Asks a tile size (16..256), or, narrowed, the warp count against the stage count."""
    n = names()
    bm_val, bn_val = _pick(rng, [16, 32, 64, 128, 256], 2)
    warps = _pick(rng, [2, 4, 8])  # a power of two; the stage count is any other small number
    stages = _pick(rng, [n for n in (2, 3, 4, 5) if n != warps])
    pair = _pick(rng, BLOCK_NAMES)
    bm, bn = pair if rng.random() < 0.5 else pair[::-1]
    return {
        "right": warps if narrow else bm_val,
        "distractor": stages if narrow else bn_val,
        "asks": "warps" if narrow else "bm",
        "bm": bm,
        "bn": bn,
        "bm_val": bm_val,
        "bn_val": bn_val,
        "warps": warps,
        "stages": stages,
        "gpu": _pick(rng, n["gpu"]),
        "fn": f"{_pick(rng, n['verb'])}_{_pick(rng, n['op'])}_config",
    }


KV_CLASSES = ("KVCache", "PagedKVCache", "StaticCache")
Q_CLASSES = ("QueryBuffer", "ScoreBuffer")


def _draw_heads(rng: np.random.Generator, narrow: bool) -> dict:
    n = names()
    heads = 8 if narrow else _pick(rng, [16, 32, 64])
    kv_heads = _pick(rng, [1, 2, 4] if narrow else [1, 2, 4, 8])
    head_dim = _pick(rng, [64, 128])
    asks_kv = rng.random() < 0.5
    return {
        "right": kv_heads if asks_kv else heads,
        "distractor": heads if asks_kv else kv_heads,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "hidden": heads * head_dim,
        "model": _pick(rng, n["model"]) + _pick(rng, ["", "2", "Lite", "Mini", "X"]),
        "fn": f"make_{_pick(rng, ['cache', 'buffer', 'state', 'slots'])}",
        "what": "key/value cache" if asks_kv else "query buffer",
        "cls": _pick(rng, KV_CLASSES if asks_kv else Q_CLASSES),
        "kwarg": "num_kv_heads" if asks_kv else "num_heads",
    }


_DRAW = {"cast": _draw_cast, "bits": _draw_bits, "block": _draw_block, "heads": _draw_heads}


@dataclass(frozen=True)
class Item:
    index: int
    template: str
    defs: str  # definitions the answer depends on
    use: str  # the code that ends exactly at the completion point
    right: str
    distractor: str
    attempts: int  # streams drawn (1 = no replacement)

    @property
    def item_id(self) -> str:
        return f"{self.template}-{self.index:04d}"


def render_item(template: str, values: dict) -> tuple[str, str]:
    return (
        templates.render(f"code/{template}/defs.j2", **values),
        templates.render(f"code/{template}/use.j2", **values),
    )


def single_token_continuation(tok: PhaseTokenizer, context: str, continuation: str) -> bool:
    """Whether ``context + continuation`` encodes as ``context``'s tokens plus exactly one."""
    base, whole = tok.piece_ids([context, context + continuation])
    return len(whole) == len(base) + 1 and whole[: len(base)] == base


def draw_items(spec: SplitSpec, tok: PhaseTokenizer) -> tuple[list[Item], Counter]:
    """``spec.n_base`` distinct items whose answers are single tokens in context; failing or
    repeated draws are replaced by the item's next stream. Items do not depend on the length."""
    items: list[Item] = []
    seen: set[str] = set()
    reasons: Counter = Counter()
    for i in range(spec.n_base):
        template = TEMPLATES[i % len(TEMPLATES)]
        for attempt in range(MAX_ATTEMPTS):
            narrow = attempt >= NARROW_AFTER
            values = _DRAW[template](derive_rng(spec.seed, "code", "item", i, attempt), narrow)
            defs, use = render_item(template, values)
            right, distractor = str(values["right"]), str(values["distractor"])
            if defs + use in seen:
                reasons["duplicate"] += 1
                continue
            if not (
                single_token_continuation(tok, use, right)
                and single_token_continuation(tok, use, distractor)
            ):
                reasons[f"multi_token_answer:{template}"] += 1
                continue
            seen.add(defs + use)
            items.append(Item(i, template, defs, use, right, distractor, attempt + 1))
            break
        else:
            raise AssemblyError(
                f"tokenizer {tok.name!r}: no '{template}' code item with single-token answers in "
                f"{MAX_ATTEMPTS} draws"
            )
    return items, reasons


# -- unrelated code -----------------------------------------------------------------------------

FILLER_SHAPES = ("function", "klass", "table", "loop", "parse", "guard")


def filler_pool(rng: np.random.Generator, size: int) -> list[str]:
    """``size`` distinct snippets of unrelated Python (``generators/code/filler/``)."""
    n = names()
    seen: dict[str, None] = {}
    for _ in range(64):  # bounded; each round yields mostly new snippets
        if len(seen) >= size:
            break
        for _ in range(size - len(seen)):
            w = _pick(rng, n["word"], 4)
            noun = _pick(rng, n["noun"])
            values = {
                "fn": f"{_pick(rng, n['verb'])}_{w[0]}_{noun}",
                "cls": w[0].title().replace("_", "") + noun.title(),
                "const": f"{w[1]}_{noun}".upper(),
                "noun": noun,
                "w1": w[0],
                "w2": w[1],
                "w3": w[2],
                "w4": w[3],
                "n1": int(rng.integers(2, 1000)),
                "n2": int(rng.integers(2, 1000)),
                "n3": int(rng.integers(2, 1000)),
            }
            shape = _pick(rng, FILLER_SHAPES)
            seen.setdefault(templates.render(f"code/filler/{shape}.j2", **values), None)
    return list(seen)[:size]


def filler_pool_size(length: int) -> int:
    """Snippets enough for any tokenizer that spends at least 16 tokens on one."""
    return length // 16 + 64 if length else 0


# -- plan ---------------------------------------------------------------------------------------


@dataclass
class CodePlan:
    """Everything needed to render any unit (item x padding style) without re-encoding."""

    spec: SplitSpec
    tok: PhaseTokenizer
    items: list[Item]
    replacements: Counter
    pads: dict[str, PadTable]
    pool: list[str]
    pool_counts: np.ndarray
    item_filler: list[np.ndarray]  # pool indices after each item's definitions
    item_tokens: np.ndarray  # tokens of defs + filler + use per item
    extra: np.ndarray  # per unit: padding tokens added to the style's shortest block

    @property
    def rows_per_unit(self) -> int:
        return SWEEP

    @property
    def n_units(self) -> int:
        return len(self.items) * len(STYLE_NAMES)

    def unit(self, u: int) -> tuple[Item, str]:
        return self.items[u // len(STYLE_NAMES)], STYLE_NAMES[u % len(STYLE_NAMES)]

    def first_pad(self) -> np.ndarray:
        """Padding tokens of each unit's first row."""
        firsts = np.array([self.pads[s].first for s in STYLE_NAMES])
        return np.tile(firsts, len(self.items)) + self.extra

    def first_length(self) -> np.ndarray:
        """Prompt tokens of each unit's first row."""
        base = np.repeat(self.item_tokens, len(STYLE_NAMES)) + self.tok.n_prefix
        return base + self.first_pad()

    def anchors(self) -> tuple[np.ndarray, np.ndarray]:
        anchors = (self.first_length()[:, None] + np.arange(SWEEP)[None, :]).ravel()
        return anchors, anchors % self.spec.modulus

    def balance(self) -> dict:
        anchors, phases = self.anchors()
        return phase_stats(anchors, phases, self.spec.modulus)

    def render(self, unit_ids: Sequence[int]) -> Iterator[dict]:
        spec, tok = self.spec, self.tok
        lengths, pads = self.first_length(), self.first_pad()
        for u in unit_ids:
            item, style = self.unit(u)
            body = (
                item.defs + "".join(self.pool[j] for j in self.item_filler[item.index]) + item.use
            )
            for step in range(SWEEP):
                pad_tokens = int(pads[u]) + step
                prompt = self.pads[style].block(pad_tokens) + body
                length = int(lengths[u]) + step
                yield {
                    "id": f"code-{spec.length}-b{item.index:05d}-{style}-t{pad_tokens:03d}",
                    "family": "code",
                    "length": length,
                    "phase_modulus": spec.modulus,
                    "phase": length % spec.modulus,
                    "base_id": item.index,
                    "anchor_index": length,
                    "question_index": -1,
                    "needle_key": "",
                    "prompt": prompt,
                    "answer": item.right,
                    "choices": [item.right, item.distractor],
                    "depth": 1.0,
                    "tokenizer": tok.name,
                    "tokenizer_fingerprint": tok.fingerprint,
                    "seed": spec.seed,
                    "key_char": -1,
                    "question_char": -1,
                    "item_id": item.item_id,
                    "pad_style": style,
                    "pad_tokens": pad_tokens,
                    "config_length": spec.length,
                }


def check_spec(spec: SplitSpec, tok: PhaseTokenizer | None = None) -> None:
    P, units = spec.modulus, spec.n_base * len(STYLE_NAMES)
    if SWEEP % P:
        raise SpecError(
            f"'modulus' must divide {SWEEP} for the code family, so that its {SWEEP} padding "
            f"lengths cover every phase equally often (got {P}; use 2, 4, 8 or 16)"
        )
    if units % P or units < 2 * P:
        step = P // np.gcd(P, len(STYLE_NAMES))
        fix = max(-(-2 * P // len(STYLE_NAMES)), -(-spec.n_base // step) * step)
        raise SpecError(
            f"'n_base' (code items) times {len(STYLE_NAMES)} padding styles must be a multiple of "
            f"'modulus' and at least twice it (modulus {P}, got n_base {spec.n_base}; try {fix})"
        )
    if spec.haystack:
        raise SpecError("'haystack' applies to the niah family only; drop --haystack for code")
    if tok is not None and tok.suffix_ids:
        raise SpecError(
            f"tokenizer {tok.name!r} appends special tokens after the text, so a prompt cannot "
            f"end at the completion point; use a tokenizer (or --tokenizer-arg) without them"
        )


def plan(spec: SplitSpec, tok: PhaseTokenizer) -> CodePlan:
    """Draw items, measure padding tables, lay out unrelated code and balance phases."""
    check_spec(spec, tok)
    P, L = spec.modulus, spec.length
    items, replacements = draw_items(spec, tok)
    pool = filler_pool(derive_rng(spec.seed, "code", L, "filler-pool"), filler_pool_size(L))
    pool_counts = tok.count(pool) if pool else np.zeros(0, dtype=np.int64)
    if L and pool_counts.sum() < L:
        raise AssemblyError(f"the unrelated-code pool holds fewer than {L} tokens")
    item_filler, item_tokens = [], []
    for item in items:
        if L:
            order = derive_rng(spec.seed, "code", L, "filler", item.index).permutation(len(pool))
            cum = np.cumsum(pool_counts[order])
            chosen = order[: int(np.searchsorted(cum, L, side="right"))]
        else:
            chosen = np.zeros(0, dtype=np.int64)
        item_filler.append(chosen)
        defs_n, use_n = tok.count([item.defs, item.use])
        item_tokens.append(int(defs_n + use_n + pool_counts[chosen].sum()))
    item_tokens_arr = np.array(item_tokens, dtype=np.int64)
    shortest = np.array([build_pad_table(tok, s, 1).first for s in STYLE_NAMES])
    y = np.repeat(item_tokens_arr, len(STYLE_NAMES)) + tok.n_prefix + np.tile(shortest, len(items))
    assignment = assign_residues(y, P, derive_rng(spec.seed, "code", L, "residues"))
    if assignment.deviation > TOLERANCE:
        raise AssemblyError(
            f"could not match anchor statistics across phases within {TOLERANCE} tokens "
            f"(best {assignment.deviation:.2f}); use more items (--n-base)"
        )
    # measure each style's padding only as far as this config's sweeps reach
    reach = assignment.extra.reshape(len(items), len(STYLE_NAMES)).max(axis=0) + SWEEP
    pads = {s: build_pad_table(tok, s, int(n)) for s, n in zip(STYLE_NAMES, reach, strict=True)}
    return CodePlan(
        spec=spec,
        tok=tok,
        items=items,
        replacements=replacements,
        pads=pads,
        pool=pool,
        pool_counts=pool_counts,
        item_filler=item_filler,
        item_tokens=item_tokens_arr,
        extra=assignment.extra,
    )


def seam_samples(p: CodePlan) -> list[list[str]]:
    """Real piece sequences covering every kind of seam inside a prompt, for
    :func:`check_seams`: each item's definitions, unrelated code and use (also with either answer
    appended), and the pool in chunks (the padding block opens a prompt:
    :func:`opening_samples`)."""
    seqs: list[list[str]] = []
    for item in p.items:
        filler = [p.pool[j] for j in p.item_filler[item.index]]
        edge = filler[:2] + filler[-2:] if len(filler) > 4 else filler
        for end in (item.use, item.use + item.right, item.use + item.distractor):
            seqs.append([item.defs, *edge, end])
    for start in range(0, min(len(p.pool), 64 * 64), 64):
        seqs.append(p.pool[start : start + 64])
    return [[piece for piece in seq if piece] for seq in seqs]


def opening_samples(p: CodePlan) -> list[list[str]]:
    """Every padding length of every style, opening a prompt before each item template's
    definitions, for :func:`check_seams`."""
    seqs: list[list[str]] = []
    firsts = {}
    for item in p.items:
        firsts.setdefault(item.template, item)
    for table in p.pads.values():
        for t in range(table.first, table.first + len(table.chars)):
            for item in firsts.values():
                seqs.append([table.block(t), item.defs])
    return seqs


def exact_check(p: CodePlan, row: dict) -> None:
    """Re-encode one whole prompt (and prompt + each choice) and compare every claim."""
    problems = verify_row(p.tok, row)
    if problems:
        raise AssemblyError(f"exact re-encoding of {row['id']} disagrees: {problems[0]}")


def prepare(spec: SplitSpec, tok: PhaseTokenizer) -> CodePlan:
    """Plan the config, check every seam kind on real pieces and one prompt on the exact path."""
    p = plan(spec, tok)
    check_seams(tok, seam_samples(p), "code", opening=opening_samples(p))
    exact_check(p, next(p.render([0])))
    return p


def verify_row(tok: PhaseTokenizer, row: dict) -> list[str]:
    """Exact-path checks of one code row: the prompt's token count is its length and anchor,
    and each choice appended to the prompt adds exactly one token (as lm-eval scores it)."""
    problems = []
    prompt = row["prompt"]
    if prompt != prompt.rstrip():
        problems.append("prompt ends with whitespace (lm-eval would move it into the choices)")
    ids = tok.encode(prompt)
    if len(ids) != row["length"] or row["anchor_index"] != row["length"]:
        problems.append(
            f"prompt encodes to {len(ids)} tokens, row claims length {row['length']} and "
            f"anchor {row['anchor_index']}"
        )
    if row["answer"] != row["choices"][0]:
        problems.append("answer is not the first choice")
    for choice in row["choices"]:
        whole = tok.encode(prompt + choice)
        if len(whole) != len(ids) + 1 or whole[: len(ids)] != ids:
            problems.append(f"choice {choice!r} is not a single token after the prompt")
    return problems


def verify_config(spec: SplitSpec, meta: dict) -> list[str]:
    """Config-level claims: every (item, style) unit holds 16 rows whose padding and prompt
    lengths grow by exactly one token per step (lengths are re-encoded by :func:`verify_row`),
    every phase appears equally often in each unit, and the layout fields are consistent."""
    problems = []
    P = spec.modulus
    if set(meta["config_length"]) != {spec.length}:
        problems.append(f"config_length differs from the spec's length {spec.length}")
    if set(meta["question_index"]) != {-1} or set(meta["needle_key"]) != {""}:
        problems.append("code rows must have question_index -1 and an empty needle_key")
    if any(a != n for a, n in zip(meta["anchor_index"], meta["length"], strict=True)):
        problems.append("anchor_index != length (the answer's first token follows the prompt)")
    units: dict[tuple[int, str], list[int]] = defaultdict(list)
    for i, key in enumerate(zip(meta["base_id"], meta["pad_style"], strict=True)):
        units[key].append(i)
    items = {b for b, _ in units}
    if len(items) != spec.n_base:
        problems.append(f"{len(items)} code items, spec asks for {spec.n_base}")
    for (b, style), idx in sorted(units.items()):
        idx = sorted(idx, key=lambda i: meta["pad_tokens"][i])
        pads = np.array([meta["pad_tokens"][i] for i in idx])
        lengths = np.array([meta["length"][i] for i in idx])
        where = f"item {b} style {style}"
        if len(idx) != SWEEP:
            problems.append(f"{where}: {len(idx)} rows, expected {SWEEP}")
        if np.any(np.diff(pads) != 1) or np.any(np.diff(lengths) != 1):
            problems.append(f"{where}: padding does not grow by exactly one token per step")
        if len(set(lengths - pads)) != 1:
            problems.append(f"{where}: something other than the padding changes the length")
        if (
            len({meta["answer"][i] for i in idx}) != 1
            or len({meta["item_id"][i] for i in idx}) != 1
        ):
            problems.append(f"{where}: answer or item_id differs between its rows")
        counts = np.bincount(lengths % P, minlength=P)
        if len(idx) == SWEEP and np.any(counts != SWEEP // P):
            problems.append(f"{where}: phases not covered equally ({counts.tolist()})")
    return problems


def describe(p: CodePlan) -> dict:
    per_template = Counter(item.template for item in p.items)
    pairs = Counter(f"{item.right}/{item.distractor}" for item in p.items)
    anchors, _ = p.anchors()
    filler = [int(p.pool_counts[f].sum()) for f in p.item_filler]
    return {
        "items": len(p.items),
        "items_per_template": dict(sorted(per_template.items())),
        "replacements": int(sum(p.replacements.values())),
        "replacement_reasons": dict(sorted(p.replacements.items())),
        "answer_pairs": dict(sorted(pairs.items())),
        "pad_styles": {
            s: {
                "first_tokens": t.first,
                "chars_per_token_count": list(t.chars),
            }
            for s, t in p.pads.items()
        },
        "pad_tokens_min": int(p.first_pad().min()),
        "pad_tokens_max": int(p.first_pad().max()) + SWEEP - 1,
        "sweep": SWEEP,
        "unrelated_code_tokens_mean": round(float(np.mean(filler)), 2),
        "prompt_tokens_min": int(anchors.min()),
        "prompt_tokens_max": int(anchors.max()),
    }


FAMILY = Family(
    name="code",
    prepare=prepare,
    exact_check=exact_check,
    verify_row=verify_row,
    verify_config=verify_config,
    describe=describe,
    output_type="multiple_choice",
    extra_fields=EXTRA_FIELDS,
    default_n_base=64,
    unit_fields=("item_id", "pad_style"),
    rows_per_item=ROWS_PER_ITEM,
    extra_prompt_tokens=ITEM_TOKENS,
    min_length=0,
    default_lengths=(0,),
    anchor_is_answer=True,
    no_phase_axes="sweeps its prompt length already (its anchor is the prompt's last token)",
    hub_task_category="text-generation",
    hub_tag="code-completion",
    languages=("en", "code"),
)
