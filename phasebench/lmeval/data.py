"""Where a phasebench task's rows come from: the split for the model's own tokenizer, generated
and cached on first use or read from a pre-built folder or Hub dataset after checking its
tokenizer, and relabelled when a chat template puts a prefix before every prompt.

lm-eval hands a task's dataset loader its model arguments merged with ``--metadata``;
:func:`resolve_split` takes them as they come (``pretrained``/``tokenizer``/``model``,
``gguf_file``, ``add_bos_token``, ..., ``max_seq_lengths``, ``phase_modulus``, ``n_base``,
``seed``, ``dataset_path``, ``apply_chat_template``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phasebench._version import GENERATOR_VERSION
from phasebench.atomic import remove_entry, staged_folder
from phasebench.errors import EvalError, SpecError, SplitError, TokenizerError
from phasebench.families import get_family
from phasebench.samples import REPEAT_READS
from phasebench.specs import DEFAULT_MODULUS, DEFAULT_SEED, TOKENIZER_ARG_NAMES, SplitSpec
from phasebench.tokenization import (
    PhaseTokenizer,
    encoding_difference,
    load_tokenizer,
    truthy,
)

log = logging.getLogger(__name__)

DEFAULT_LENGTHS = (4096,)


def _cache_root() -> Path:
    """``$PHASEBENCH_CACHE`` or ``~/.cache/phasebench``: generated splits, keyed by content."""
    return Path(os.environ.get("PHASEBENCH_CACHE") or Path.home() / ".cache" / "phasebench")


def tokenizer_source(kwargs: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Tokenizer name and arguments exactly as lm-eval's backends take them: ``tokenizer``
    first, then ``pretrained`` (``hf``, ``vllm``), then ``model`` (``local-completions`` and the
    other API backends name the served model so)."""
    name = kwargs.get("tokenizer") or kwargs.get("pretrained") or kwargs.get("model")
    if not name or not isinstance(name, str):
        raise EvalError(
            "phasebench tasks build their split for the model's tokenizer: pass "
            "--model_args pretrained=MODEL (or tokenizer=... / model=... for API backends)"
        )
    args = {k: kwargs[k] for k in TOKENIZER_ARG_NAMES if kwargs.get(k) not in (None, "")}
    if kwargs.get("tokenizer"):
        args.pop("gguf_file", None)  # lm-eval ignores gguf_file for an explicit tokenizer
    return name, args


def _lengths(kwargs: Mapping[str, Any]) -> tuple[int, ...] | None:
    value = kwargs.get("max_seq_lengths")
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value) if value.strip().startswith("[") else value.split(",")
    if isinstance(value, int):
        value = [value]
    try:
        return tuple(dict.fromkeys(int(v) for v in value))
    except (TypeError, ValueError):
        raise SpecError(
            f"'max_seq_lengths' must be a list of token counts, e.g. [4096, 8192] (got {value!r})"
        ) from None


def _n_base(family: str, value: Any) -> int:
    """``n_base`` is one number for every family or a mapping from family to count such as
    ``{"kv": 32, "niah": 16}`` (code counts items, each swept over 4 padding styles x 16
    lengths); a family the mapping leaves out, or no ``n_base`` at all, gets the family's
    declared default."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            raise SpecError(f"'n_base' is not a JSON mapping (got {value[:80]!r})") from None
    if isinstance(value, Mapping):
        value = value.get(family)
    if value is None:
        return get_family(family).default_n_base
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SpecError(
            f'\'n_base\' must be an integer or a mapping like {{"kv": 32, "niah": 16}} '
            f"(got {value!r})"
        ) from None


def _integer(kwargs: Mapping[str, Any], name: str, default: int) -> int:
    """An integer task argument (lm-eval passes ``--metadata`` values as JSON or text)."""
    value = kwargs.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"'{name}' must be an integer (got {value!r})")
    return value


def _length_phases(value: Any) -> str | None:
    """``"length_phases"`` in ``--metadata``: true (the length axis, needle fixed),
    ``"crossed"`` (both axes), false or absent (the needle axis alone)."""
    if value in (None, False, "", "false", "False", "0", 0):
        return None
    if value in (True, "true", "True", "1", 1, "only"):
        return "only"
    if value == "crossed":
        return "crossed"
    raise SpecError(f"'length_phases' must be true, false or \"crossed\" (got {value!r})")


#: The arms of the prefix-cache axis (``"prefix_cache"`` in ``--metadata``; docs/serving.md).
PREFIX_CACHE_ARMS = ("repeat", "salted")
#: The reads of one prompt in a ``repeat`` run, in the order they are sent (a doc's ``read``;
#: declared in :data:`phasebench.samples.REPEAT_READS`, where report and leaderboard read it).
READS = REPEAT_READS


def prefix_cache_arm(kwargs: Mapping[str, Any]) -> str | None:
    """``"prefix_cache"`` in ``--metadata``: ``"repeat"``, ``"salted"`` or absent (None).

    ``repeat`` needs one request at a time: with ``num_concurrent`` above 1 lm-eval sends the
    two reads of a prompt at once, and neither is the warm one (refused here, where the model
    arguments are merged in; ``phasebench eval`` also refuses a ``--batch_size`` above 1)."""
    value = kwargs.get("prefix_cache")
    if value in (None, "", False, "false", "off"):
        return None
    if value not in PREFIX_CACHE_ARMS:
        raise SpecError(
            f"'prefix_cache' must be one of {', '.join(map(repr, PREFIX_CACHE_ARMS))} "
            f"(got {value!r})"
        )
    concurrent = str(kwargs.get("num_concurrent") or "1")
    if value == "repeat" and (not concurrent.isdigit() or int(concurrent) > 1):
        raise SpecError(
            f'"prefix_cache": "repeat" sends each prompt twice in a row, one request at a time; '
            f"num_concurrent={concurrent} would send both reads at once: drop num_concurrent"
        )
    return str(value)


def repeated(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Every row twice, a ``cold`` read then a ``warm`` one, adjacent. lm-eval's request order
    keeps them adjacent and in this order: its Collator sorts stably, and the two reads are equal
    in every key it sorts and groups by (the prompt's length and text, the generation
    arguments; :func:`phasebench.prefill.send_order` models the sort), so the warm read is sent
    right after the cold one, its prefix the most recent the cache has seen.
    ``tests/test_prefix_cache.py`` reads that order off a server fed by lm-eval's own API
    backend."""
    return [{**row, "read": read} for row in rows for read in READS]


def split_specs(family: str, kwargs: Mapping[str, Any]) -> list[SplitSpec]:
    """The specs a task run asks for: one per length in ``max_seq_lengths``."""
    declared = get_family(family)  # an unknown name is refused, the known ones listed
    axes = declared.no_phase_axes is None  # the length axis and phase subsets apply
    name, args = tokenizer_source(kwargs)
    return [
        SplitSpec(
            family=family,
            length=length,
            modulus=_integer(kwargs, "phase_modulus", DEFAULT_MODULUS),
            n_base=_n_base(family, kwargs.get("n_base")),
            seed=_integer(kwargs, "seed", DEFAULT_SEED),
            tokenizer=name,
            tokenizer_args=tuple((k, str(v)) for k, v in args.items()),
            # a family that sweeps its prompt length already (code) ignores the axis knobs
            length_phases=_length_phases(kwargs.get("length_phases")) if axes else None,
            phases=(kwargs.get("phases") or ()) if axes else (),
        )
        for length in (_lengths(kwargs) or DEFAULT_LENGTHS)
    ]


def cached_config(spec: SplitSpec, tok: PhaseTokenizer, root: Path | None = None) -> Path:
    """The config folder for ``spec`` in the cache, generated on first use and checked on every
    use (see :func:`cached_split`)."""
    return cached_split(spec, tok, root)[0]


def cached_split(
    spec: SplitSpec, tok: PhaseTokenizer, root: Path | None = None, progress: bool = False
) -> tuple[Path, list[dict]]:
    """The cached config folder for ``spec`` and its rows, every row checked against the
    manifest's content hashes as it is read.

    The key hashes the spec, the tokenizer fingerprint and the generator version, so a changed
    tokenizer or generator never reuses stale prompts. Generation goes to a temporary folder that
    is renamed into place: an interrupted run leaves nothing a later run could mistake for data.
    An entry that does not check (edited rows, a lost manifest, a half-written folder, another
    spec or tokenizer) is removed and built again; nothing outside the cache's own ``splits``
    folder is ever removed, and a symbolic link there is unlinked, never followed. With
    ``progress`` a split being generated shows a progress bar on stderr.
    """
    splits = Path(root or _cache_root()) / "splits"
    text = json.dumps(
        {"spec": spec.to_dict(), "fingerprint": tok.encoding_key, "generator": GENERATOR_VERSION},
        sort_keys=True,
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:20]
    final = splits / f"{spec.config_name}-{key}"
    folder = final / spec.config_name
    rows = _checked_rows(final, spec, tok)
    if rows is not None:
        return folder, rows
    if final.exists() or final.is_symlink():
        log.warning(
            "the cached split %s does not check against its key (edited, incomplete or "
            "another spec or tokenizer); building it again",
            final,
        )
    else:
        log.info("generating %s for this tokenizer into the cache %s", spec.config_name, splits)
    _discard(final, splits)
    _build_entry(spec, tok, final, progress)
    rows = _checked_rows(final, spec, tok)
    if rows is None:
        raise SplitError(f"the cache entry {str(final)!r} does not check after it was rebuilt")
    return folder, rows


def _checked_rows(final: Path, spec: SplitSpec, tok: PhaseTokenizer) -> list[dict] | None:
    """The rows of a cache entry if it is whole and is what its key says, else None."""
    from phasebench.build import iter_rows, read_manifest

    folder = final / spec.config_name
    if final.is_symlink() or folder.is_symlink() or not folder.is_dir():
        return None
    try:
        manifest = read_manifest(folder)
        if manifest["spec"] != spec.to_dict() or encoding_difference(manifest["tokenizer"], tok):
            return None
        return list(iter_rows(folder, check=True))
    except SplitError:
        return None


def _discard(entry: Path, splits: Path) -> None:
    """Remove one cache entry (only ever a direct child of the cache's ``splits`` folder)."""
    if entry.parent == splits:
        remove_entry(entry, splits)


def _build_entry(spec: SplitSpec, tok: PhaseTokenizer, final: Path, progress: bool) -> None:
    """Generate the entry beside ``final`` and rename it into place; when another process put
    the same entry there first, its copy is kept (equal by construction, and checked)."""
    from phasebench.build import generate

    with staged_folder(final, keep_existing=True) as staging:
        generate([spec], staging, progress=progress, tokenizer=tok)


def prebuilt_folders(
    dataset_path: str, family: str, lengths: Sequence[int] | None, tok: PhaseTokenizer
) -> list[Path]:
    """Config folders of ``family`` built for ``tok``, from a folder made by ``phasebench
    generate`` or ``publish``, or a Hub dataset id (:func:`phasebench.hub.select_configs`).

    A published repository may hold the same family and length for several tokenizers; the
    configs whose tokenizer fingerprint is this model's are taken. A length with none is refused
    (never evaluated on another tokenizer's positions).
    """
    from phasebench.build import read_manifest
    from phasebench.hub import select_configs
    from phasebench.verification import check_fingerprint

    candidates = select_configs(dataset_path, family=family, lengths=lengths)
    if not candidates:
        wanted = "" if lengths is None else f" at lengths {list(lengths)}"
        raise SpecError(f"{dataset_path!r} holds no {family} config{wanted}")
    by_length: dict[int, list[tuple[Path, dict]]] = {}
    for folder in candidates:
        manifest = read_manifest(folder)
        by_length.setdefault(int(manifest["spec"]["length"]), []).append((folder, manifest))
    chosen = []
    for length in sorted(by_length):
        mine = [f for f, m in by_length[length] if not encoding_difference(m["tokenizer"], tok)]
        if not mine:
            check_fingerprint(by_length[length][0][1], tok)  # raises the one-line refusal
        chosen.extend(mine)
    return chosen


@dataclass(frozen=True)
class LoadedSplit:
    """The rows of one task run and where they came from."""

    folders: tuple[Path, ...]
    manifests: tuple[dict, ...]
    rows: list[dict]
    anchor_offset: int
    #: The prefix-cache arm (:data:`PREFIX_CACHE_ARMS`), None for neither.
    prefix_cache: str | None = None


def resolve_split(family: str, **kwargs: Any) -> LoadedSplit:
    """Find or build the configs a task run needs, check them against the model's tokenizer,
    and return their rows (phases relabelled for a chat template, see :func:`_chat_offset`)."""
    from phasebench.build import iter_rows, read_manifest

    name, args = tokenizer_source(kwargs)
    tok = load_tokenizer(name, args)
    if kwargs.get("dataset_path"):
        folders = prebuilt_folders(str(kwargs["dataset_path"]), family, _lengths(kwargs), tok)
        per_config = [list(iter_rows(folder, check=True)) for folder in folders]
    else:
        # a split generated here shows its progress (on stderr), as `phasebench generate` does
        cached = [cached_split(spec, tok, progress=True) for spec in split_specs(family, kwargs)]
        folders = [folder for folder, _ in cached]
        per_config = [rows for _, rows in cached]
    manifests = tuple(read_manifest(f) for f in folders)
    rows = [row for config_rows in per_config for row in config_rows]
    arm = prefix_cache_arm(kwargs)
    if arm == "salted":  # before a chat template is measured: the salt opens the user's text
        from phasebench.salting import salt_row

        rows = [salt_row(row, tok) for row in rows]
    offset = 0
    if truthy(kwargs.get("apply_chat_template")):
        system = kwargs.get("system_instruction")
        # measured on the first and last row of every config: the prefix must be constant
        shifts = {chat_shift(tok, r, system) for c in per_config for r in (c[0], c[-1])}
        if len(shifts) != 1:
            raise TokenizerError(
                f"the chat template of {tok.name!r} shifts prompts by different amounts "
                f"({sorted(shifts)}); run without --apply_chat_template"
            )
        offset, extra = shifts.pop()
        rows = [relabel(row, offset, extra) for row in rows]
    if arm == "repeat":
        rows = repeated(rows)
    return LoadedSplit(tuple(folders), manifests, rows, offset, arm)


def provenance(split: LoadedSplit) -> list[dict]:
    """What identifies the prompts of a run: per config its content hash, generator version,
    tokenizer fingerprint and spec, plus the chat-template offset applied to the phases."""
    return [
        {
            "config": m["config"],
            "content_hash": m["content_hash"],
            "generator_version": m["generator_version"],
            "phasebench_version": m["phasebench_version"],
            "tokenizer_fingerprint": m["tokenizer"]["fingerprint"],
            "tokenizer_behaviour": m["tokenizer"].get("behaviour"),
            "spec": m["spec"],
            "anchor_offset": split.anchor_offset,
            "prefix_cache": split.prefix_cache,
        }
        for m in split.manifests
    ]


# -- chat template offset ------------------------------------------------------------------------

_SENTINEL = "\x00PHASEBENCH\x00"


def chat_template_frame(tok: PhaseTokenizer, system: str | None = None) -> tuple[str, str, bool]:
    """The text a chat template puts before and after one user message (after an optional
    ``system`` turn, with the generation prompt), and whether the tokenizer's special tokens are
    added when the whole is encoded: not when the template already starts with the BOS, as
    lm-eval's ``hf`` backend skips a second one."""
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": _SENTINEL}
    ]
    try:
        text = tok.hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as exc:  # no template, or one that rejects the roles
        raise TokenizerError(
            f"tokenizer {tok.name!r} has no usable chat template ({type(exc).__name__}); "
            f"run without --apply_chat_template (phases only relabel under a constant offset)"
        ) from None
    before, _, after = text.partition(_SENTINEL)
    bos = getattr(tok.hf, "bos_token", None)
    return before, after, not (bos and before.startswith(bos))


def _chat_offset(tok: PhaseTokenizer, row: Mapping[str, Any], system: str | None = None) -> int:
    """Tokens a chat template adds before the prompt, as lm-eval's ``hf`` backend encodes it.

    Measured on the exact path: the templated prompt is encoded whole and the anchor's token is
    found through the offsets mapping. A tokenizer without a usable chat template raises
    :class:`~phasebench.errors.TokenizerError` (the run stops and says to run without
    ``--apply_chat_template``); no offset is ever guessed. Where phasebench is not told about a
    template (plain ``lm_eval --apply_chat_template`` without the metadata), the phases are
    off by the template's constant prefix, which renames them cyclically and leaves worst phase,
    best phase and gap unchanged (offset invariance, ``docs/definitions.md``).
    """
    return chat_shift(tok, row, system)[0]


def chat_shift(
    tok: PhaseTokenizer, row: Mapping[str, Any], system: str | None = None
) -> tuple[int, int]:
    """``(offset, extra)``: the tokens a chat template adds before the anchor (see
    :func:`_chat_offset`) and in all, so the templated sequence is ``length + extra`` tokens
    long (what a server that applies the template must report as its prompt count)."""
    before, after, special = chat_template_frame(tok, system)
    whole = before + row["prompt"] + after
    enc = tok.hf(whole, return_offsets_mapping=True, add_special_tokens=special)
    extra = len(enc["input_ids"]) - int(row["length"])
    if get_family(row["family"]).anchor_is_answer:  # the first answer token: after the context
        return len(enc["input_ids"]) - int(row["anchor_index"]), extra
    anchor_char = len(before) + int(row["key_char"])
    for i, (s, e) in enumerate(enc["offset_mapping"]):
        if s <= anchor_char < e:
            return i - int(row["anchor_index"]), extra
    raise TokenizerError("cannot locate the needle inside the chat-templated prompt")


def relabel(row: Mapping[str, Any], offset: int, extra: int | None = None) -> dict:
    """``row`` with ``anchor_index``/``phase`` counted in the templated sequence, and (given
    the template's ``extra`` tokens) ``served_length``, that sequence's token count."""
    out = dict(row)
    if extra is not None:
        out["served_length"] = int(row["length"]) + extra
    out["anchor_offset"] = offset
    out["split_phase"] = row["phase"]
    out["anchor_index"] = int(row["anchor_index"]) + offset
    out["phase"] = out["anchor_index"] % int(row["phase_modulus"])
    return out
