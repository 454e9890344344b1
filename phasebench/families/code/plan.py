"""The layout of a ``code`` config: its items, padding tables and unrelated code planned once, so
that any (item, padding style) unit renders without re-encoding; its row columns and its
manifest facts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from phasebench.errors import AssemblyError, SpecError
from phasebench.families.code.filler import filler_pool, filler_pool_size
from phasebench.families.code.items import Item, draw_items
from phasebench.families.code.padding import STYLE_NAMES, SWEEP, PadTable, build_pad_table
from phasebench.placement import TOLERANCE, assign_residues, phase_stats
from phasebench.prefill import PromptPieces
from phasebench.rng import derive_rng
from phasebench.tokenization import PhaseTokenizer

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

#: Columns a code row adds to :data:`phasebench.rows.ROW_FIELDS`.
EXTRA_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("item_id", pa.string()),
    ("pad_style", pa.string()),
    ("pad_tokens", pa.int64()),
    ("config_length", pa.int64()),
)


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

    def prompt_pieces(self) -> PromptPieces:
        """Every row's prompt as its pieces, for the manifest's prefill figures."""
        return prompt_pieces(self)

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
                    "tokenizer": tok.portable_name,
                    "tokenizer_fingerprint": tok.fingerprint,
                    "seed": spec.seed,
                    "key_char": -1,
                    "question_char": -1,
                    "item_id": item.item_id,
                    "pad_style": style,
                    "pad_tokens": pad_tokens,
                    "config_length": spec.length,
                }


def prompt_pieces(p: CodePlan) -> PromptPieces:
    """The pieces of every row, in row order, as :meth:`CodePlan.render` joins them: the
    padding block opens the prompt, then the item's definitions, its unrelated code and its use
    (``tests/test_prefill.py`` checks that they join to the rows' prompts)."""
    texts = list(p.pool)
    index: dict[tuple[bool, str], int] = {}

    def piece(text: str, opening: bool = False) -> int:
        if (opening, text) not in index:
            index[opening, text] = len(texts)
            texts.append(text)
        return index[opening, text]

    pads = p.first_pad()
    rows: list[tuple[int, int, np.ndarray]] = []
    for u in range(p.n_units):
        item, style = p.unit(u)
        body = np.concatenate(
            [[piece(item.defs)], p.item_filler[item.index], [piece(item.use)]]
        ).astype(np.int64)
        for step in range(SWEEP):
            rows.append((item.index, piece(p.pads[style].block(int(pads[u]) + step), True), body))
    opening = frozenset(i for (first, _), i in index.items() if first)

    def row(i: int) -> np.ndarray:
        _, block, body = rows[i]
        return np.concatenate([[block], body])

    return PromptPieces(texts, opening, row, [b for b, _, _ in rows], p.pool_counts)


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
