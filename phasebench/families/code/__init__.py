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

The family is a package by job: :mod:`~phasebench.families.code.padding` (the padding blocks and
their measured one-token steps), :mod:`~phasebench.families.code.items` (items from the item
templates), :mod:`~phasebench.families.code.filler` (the pool of unrelated code),
:mod:`~phasebench.families.code.plan` (the layout, rendering and manifest facts) and
:mod:`~phasebench.families.code.checks` (seams, the exact path, ``verify``'s checks); this module
declares the family and keeps every name importable from ``phasebench.families.code``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from phasebench.families import Family
from phasebench.families.code.checks import (
    exact_check,
    opening_samples,
    seam_samples,
    verify_config,
    verify_row,
)
from phasebench.families.code.filler import FILLER_SHAPES, filler_pool, filler_pool_size
from phasebench.families.code.items import (
    _DRAW as _DRAW,  # the item drawers by template (tests draw items for other tokenizers)
)
from phasebench.families.code.items import (
    BLOCK_NAMES,
    KV_CLASSES,
    MAX_ATTEMPTS,
    NARROW_AFTER,
    Q_CLASSES,
    TEMPLATES,
    Item,
    draw_items,
    names,
    render_item,
    single_token_continuation,
)
from phasebench.families.code.padding import (
    MAX_PAD_CHARS,
    PAD_WINDOW,
    STYLE_NAMES,
    STYLES,
    SWEEP,
    PadTable,
    build_pad_table,
    pad_block,
)
from phasebench.families.code.plan import EXTRA_FIELDS, CodePlan, check_spec, describe, plan
from phasebench.tokenization import PhaseTokenizer, check_seams

if TYPE_CHECKING:  # annotations only: a family reads nothing of specs when it runs
    from phasebench.specs import SplitSpec

__all__ = [
    "BLOCK_NAMES",
    "EXTRA_FIELDS",
    "FAMILY",
    "FILLER_SHAPES",
    "ITEM_TOKENS",
    "KV_CLASSES",
    "MAX_ATTEMPTS",
    "MAX_PAD_CHARS",
    "NARROW_AFTER",
    "PAD_WINDOW",
    "Q_CLASSES",
    "ROWS_PER_ITEM",
    "STYLES",
    "STYLE_NAMES",
    "SWEEP",
    "TEMPLATES",
    "CodePlan",
    "Item",
    "PadTable",
    "build_pad_table",
    "check_spec",
    "describe",
    "draw_items",
    "exact_check",
    "filler_pool",
    "filler_pool_size",
    "names",
    "opening_samples",
    "pad_block",
    "plan",
    "prepare",
    "render_item",
    "seam_samples",
    "single_token_continuation",
    "verify_config",
    "verify_row",
]

#: Rows one code item renders to (padding styles x padding lengths), and the tokens a prompt holds
#: besides its ``length`` of unrelated code (the item and its padding, rounded up), for the
#: budget estimate made before anything is planned.
ROWS_PER_ITEM = len(STYLES) * SWEEP
ITEM_TOKENS = 1024


def prepare(spec: SplitSpec, tok: PhaseTokenizer) -> CodePlan:
    """Plan the config, check every seam kind on real pieces and one prompt on the exact path."""
    p = plan(spec, tok)
    check_seams(tok, seam_samples(p), "code", opening=opening_samples(p))
    exact_check(p, next(p.render([0])))
    return p


FAMILY = Family(
    name="code",
    prepare=prepare,
    exact_check=exact_check,
    verify_row=verify_row,
    verify_config=verify_config,
    describe=describe,
    check_spec=check_spec,
    output_type="multiple_choice",
    extra_fields=EXTRA_FIELDS,
    default_n_base=64,
    unit_fields=("item_id", "pad_style"),
    rows_per_item=ROWS_PER_ITEM,
    extra_prompt_tokens=ITEM_TOKENS,
    min_length=0,
    default_lengths=(0,),
    item_rendering=f"swept over {len(STYLES)} padding styles x {SWEEP} lengths",
    anchor_is_answer=True,
    no_phase_axes="sweeps its prompt length already (its anchor is the prompt's last token)",
    hub_task_category="text-generation",
    hub_tag="code-completion",
    languages=("en", "code"),
    chance=0.5,  # two choices: the right completion and one distractor
    length_note=(
        "the length is the unrelated code between the definitions and their use, in tokens; "
        "at 0 there is none: each prompt is a padding block, the definitions and the use "
        f"(up to about {ITEM_TOKENS} tokens), and the phase comes from the padding block, "
        f"swept over {SWEEP} lengths one token apart"
    ),
)
