"""Frozen, validated split specs.

A :class:`SplitSpec` names one config: one family at one length for one tokenizer. Everything a
generator produces is a pure function of the spec (and the tokenizer it names), so the spec is
what manifests record and what consumers compare.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from phasebench.errors import SpecError

Family = Literal["kv", "niah", "code"]
FAMILIES: tuple[str, ...] = get_args(Family)

#: Model arguments that change how lm-eval's ``hf`` backend builds the tokenizer, and therefore
#: the token sequence a phase label refers to.
TOKENIZER_ARG_NAMES = ("revision", "subfolder", "gguf_file", "add_bos_token", "trust_remote_code")

MIN_LENGTH = 64
MAX_LENGTH = 4 * 1024 * 1024
#: Budget of one config, checked when a spec is made, before anything is planned: its rows and
#: its prompt tokens (rows x prompt length). The largest documented config, 128K tokens x 256
#: base items x 8 phases, is 2,048 rows and 2^28 tokens; the limits leave room for 4 times that.
MAX_ROWS = 1 << 20
MAX_TOKENS = 1 << 30
#: Rows one code item renders to (4 padding styles x 16 padding lengths), and the tokens a code
#: prompt holds besides its ``length`` of unrelated context (the item and its padding, rounded
#: up), for the budget estimate.
CODE_ROWS_PER_ITEM = 64
CODE_ITEM_TOKENS = 1024
#: Peak resident memory of building one config, for the estimate checked before any work:
#: the interpreter with its libraries, plus a per-token cost of the longest prompt (its exact
#: encoding with offsets and the filler tables). Measured with ``work/mem_probe.sh`` (peak RSS
#: of ``generate``, n_base 4, modulus 2, shared 2-core machine) between 256K and 1M tokens:
#: kv 1.09, niah 1.27, code 1.43 KiB per token, about 420 MiB at the start; rounded up.
MEMORY_BASE = 512 << 20
MEMORY_PER_TOKEN = 1536


def _check_int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"'{name}' must be an integer (got {value!r})")
    if value < minimum:
        raise SpecError(f"'{name}' must be >= {minimum} (got {value})")
    if maximum is not None and value > maximum:
        raise SpecError(f"'{name}' must be <= {maximum} (got {value})")
    return value


@dataclass(frozen=True)
class SplitSpec:
    """One phase-balanced config.

    ``length`` is the exact token count of every prompt (kv, niah) or the approximate amount of
    unrelated context before the item (code, where 0 means none). ``n_base`` base items are each
    rendered once per phase, so a config has ``n_base * modulus`` rows for kv and niah.
    """

    family: Family
    length: int
    modulus: int = 8
    n_base: int = 256
    seed: int = 0
    tokenizer: str = "deepseek-v4"
    tokenizer_args: tuple[tuple[str, str], ...] = ()
    haystack: str | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise SpecError(f"'family' must be one of {', '.join(FAMILIES)} (got {self.family!r})")
        minimum = 0 if self.family == "code" else MIN_LENGTH
        _check_int("length", self.length, minimum, MAX_LENGTH)
        _check_int("modulus", self.modulus, 2, 4096)
        _check_int("n_base", self.n_base, 1)
        _check_int("seed", self.seed, 0, 2**63 - 1)
        if not isinstance(self.tokenizer, str) or not self.tokenizer:
            raise SpecError(f"'tokenizer' must be a non-empty string (got {self.tokenizer!r})")
        for name, _ in self.tokenizer_args:
            if name not in TOKENIZER_ARG_NAMES:
                raise SpecError(
                    f"'tokenizer_args' has unknown key {name!r}; "
                    f"expected some of {', '.join(TOKENIZER_ARG_NAMES)}"
                )
        object.__setattr__(self, "tokenizer_args", tuple(sorted(self.tokenizer_args)))
        object.__setattr__(self, "extra", tuple(sorted(self.extra)))
        self._check_budget()

    def estimated_size(self) -> tuple[int, int]:
        """``(rows, prompt tokens)`` of the config this spec describes: ``n_base * modulus``
        rows for kv and niah, 64 per code item; tokens are rows times the prompt length."""
        if self.family == "code":
            rows = self.n_base * CODE_ROWS_PER_ITEM
            return rows, rows * (self.length + CODE_ITEM_TOKENS)
        rows = self.n_base * self.modulus
        return rows, rows * self.length

    def estimated_memory(self) -> int:
        """Bytes of memory one process needs to build this config (see
        :data:`MEMORY_PER_TOKEN`); the caller compares it with what it may use."""
        longest = self.length + (CODE_ITEM_TOKENS if self.family == "code" else 0)
        return MEMORY_BASE + MEMORY_PER_TOKEN * longest

    def _check_budget(self) -> None:
        rows, tokens = self.estimated_size()
        if rows > MAX_ROWS:
            raise SpecError(
                f"this config would have {rows:,} rows; the limit is {MAX_ROWS:,} "
                f"(fewer --n-base or a smaller --modulus)"
            )
        if tokens > MAX_TOKENS:
            raise SpecError(
                f"this config would hold {rows:,} prompts x {self.length:,} tokens = "
                f"{tokens:,} tokens; the limit is {MAX_TOKENS:,} (fewer --n-base or a shorter "
                f"--length)"
            )

    @property
    def config_name(self) -> str:
        """Folder and Hub config name, e.g. ``kv_4096`` (valid for ``^\\w+(\\.\\w+)*$``)."""
        return f"{self.family}_{self.length}"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tokenizer_args"] = dict(self.tokenizer_args)
        data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SplitSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(
                f"unknown spec field(s) {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        if "family" not in data or "length" not in data:
            raise SpecError("a spec needs at least 'family' and 'length'")
        kwargs = dict(data)
        for name in ("tokenizer_args", "extra"):
            value = kwargs.get(name) or {}
            if isinstance(value, Mapping):
                value = tuple((str(k), str(v)) for k, v in value.items())
            kwargs[name] = tuple(tuple(pair) for pair in value)
        return cls(**kwargs)

    def replace(self, **changes: Any) -> SplitSpec:
        return dataclasses.replace(self, **changes)


_SLUG = re.compile(r"[^A-Za-z0-9]+")


def slug(text: str) -> str:
    """A Hub-safe identifier fragment (``deepseek-v4`` -> ``deepseek_v4``)."""
    return _SLUG.sub("_", text).strip("_").lower() or "x"
