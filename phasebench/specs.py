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
from phasebench.families import DEFAULT_N_BASE

#: The length-phase axis: each base item rendered at P consecutive total lengths with its
#: needle fixed (``only``), or at every (needle phase, length phase) pair (``crossed``).
LengthPhases = Literal["only", "crossed"]
LENGTH_PHASES: tuple[str, ...] = get_args(LengthPhases)

#: Model arguments that change how lm-eval's ``hf`` backend builds the tokenizer, and therefore
#: the token sequence a phase label refers to.
TOKENIZER_ARG_NAMES = ("revision", "subfolder", "gguf_file", "add_bos_token", "trust_remote_code")

MAX_LENGTH = 4 * 1024 * 1024
#: The phase modulus P when none is asked for (covers strides 1, 2, 4 and 8); every other
#: default modulus (the command line, the lm-eval tasks, the probe) reads it from here.
DEFAULT_MODULUS = 8
#: The seed of a split's random streams when none is given (the data seed, not the statistics'
#: :data:`phasebench.metrics.SEED`); every other default data seed reads it from here.
DEFAULT_SEED = 0

#: Budget of one config, checked when a spec is made, before anything is planned: its rows and
#: its prompt tokens (rows x prompt length). The largest documented config, 128K tokens x 256
#: base items x 8 phases, is 2,048 rows and 2^28 tokens; the limits leave room for 4 times that.
MAX_ROWS = 1 << 20
MAX_TOKENS = 1 << 30
#: The largest phase modulus a split may have (and so every reader of phase labels accepts: a
#: modulus beyond it in a log is refused, never allocated).
MAX_MODULUS = 4096
#: Peak resident memory of building one config, for the estimate checked before any work:
#: the interpreter with its libraries, plus a per-token cost of the longest prompt (its exact
#: encoding with offsets and the filler tables). Measured by
#: ``benchmarks/results/generate-memory/mem_probe.sh`` (peak RSS of ``generate``, n_base 4,
#: modulus 2, shared 2-core machine) between 256K and 1M tokens:
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

    ``family`` names a known family (:func:`phasebench.families.names`), whose declaration
    (:class:`phasebench.families.Family`) says what ``length`` means for it (the exact token
    count of every kv or niah prompt; the approximate amount of unrelated context before a code
    item, where 0 means none) and how many rows a base item renders to (once per phase for kv
    and niah, so ``n_base * modulus`` rows).

    ``length_phases`` adds the second axis (kv, niah): every base item at the total lengths
    ``length .. length + modulus - 1``, filler added after the needle, its anchor fixed
    (``"only"``: the needle stays at one phase; ``"crossed"``: every needle phase at every
    length phase). ``phases``, when given, is the subset of residues mod ``modulus`` rendered
    on each varied axis (for long periods: every 16th residue of 128, say); the subset keeps
    the full design's pairing and matched statistics, and its statistics say what they cover.
    """

    family: str
    length: int
    modulus: int = DEFAULT_MODULUS
    n_base: int = DEFAULT_N_BASE
    seed: int = DEFAULT_SEED
    tokenizer: str = "deepseek-v4"
    tokenizer_args: tuple[tuple[str, str], ...] = ()
    haystack: str | None = None
    extra: tuple[tuple[str, str], ...] = field(default=())
    length_phases: LengthPhases | None = None
    phases: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        from phasebench.families import get_family

        if not isinstance(self.family, str):
            raise SpecError(f"'family' must be a family name (got {self.family!r})")
        family = get_family(self.family)  # an unknown name is refused, the known ones listed
        _check_int("length", self.length, family.min_length, MAX_LENGTH)
        _check_int("modulus", self.modulus, 2, MAX_MODULUS)
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
        if self.length_phases is not None and self.length_phases not in LENGTH_PHASES:
            raise SpecError(
                f"'length_phases' must be one of {', '.join(LENGTH_PHASES)} or unset "
                f"(got {self.length_phases!r})"
            )
        if family.no_phase_axes and (self.length_phases or self.phases):
            from phasebench.families import names

            takers = [f for f in names() if get_family(f).no_phase_axes is None]
            raise SpecError(
                f"the {self.family} family {family.no_phase_axes}: 'length_phases' and 'phases' "
                f"apply to {' and '.join(takers)}"
            )
        object.__setattr__(self, "phases", _check_phases(self.phases, self.modulus))
        self._check_budget()

    @property
    def residues(self) -> tuple[int, ...]:
        """The residues rendered on each varied axis: all of them, or the subset."""
        return self.phases or tuple(range(self.modulus))

    @property
    def renderings(self) -> int:
        """Prompts per base item of a family that renders one per phase (kv, niah): one per
        residue on each varied axis."""
        axis = len(self.residues)
        if self.length_phases == "only":
            return axis
        if self.length_phases == "crossed":
            return axis * axis
        return axis

    def estimated_size(self) -> tuple[int, int]:
        """``(rows, prompt tokens)`` of the config this spec describes, as its family declares
        them (:meth:`phasebench.families.Family.estimated_size`): ``n_base`` times the rows of
        a base item (one per rendering for kv and niah, 64 per code item); tokens are rows
        times the longest prompt."""
        from phasebench.families import get_family

        return get_family(self.family).estimated_size(self)

    def estimated_memory(self) -> int:
        """Bytes of memory one process needs to build this config (see
        :data:`MEMORY_PER_TOKEN`); the caller compares it with what it may use."""
        from phasebench.families import get_family

        longest = self.length + get_family(self.family).extra_prompt_tokens
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
        name = f"{self.family}_{self.length}"
        if self.length_phases:
            name += "_length" if self.length_phases == "only" else "_crossed"
        if self.phases:
            name += f"_subset{len(self.phases)}of{self.modulus}"
        return name

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON data; the two axis fields only when set, so every config made
        before they existed keeps its spec, cache key and content hash. A local tokenizer is
        named as :func:`phasebench.tokenization.portable_name` says (an alias or Hub id as
        given)."""
        from phasebench.tokenization import portable_name

        data = dataclasses.asdict(self)
        data["tokenizer"] = portable_name(self.tokenizer)  # no folder of this machine
        data["tokenizer_args"] = dict(self.tokenizer_args)
        data["extra"] = dict(self.extra)
        if self.length_phases is None:
            del data["length_phases"]
        if self.phases:
            data["phases"] = list(self.phases)
        else:
            del data["phases"]
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
        if "phases" in kwargs:
            kwargs["phases"] = parse_phases(kwargs["phases"])
        for name in ("tokenizer_args", "extra"):
            value = kwargs.get(name) or {}
            if isinstance(value, Mapping):
                value = tuple((str(k), str(v)) for k, v in value.items())
            kwargs[name] = tuple(tuple(pair) for pair in value)
        return cls(**kwargs)

    def replace(self, **changes: Any) -> SplitSpec:
        return dataclasses.replace(self, **changes)


def parse_phases(value: Any) -> tuple[int, ...]:
    """A phase subset from its spellings: a list of residues, or text of comma-separated
    residues and ``start:stop[:step]`` ranges (``"0:128:16,125:128"``)."""
    if value is None or value == "":
        return ()
    if isinstance(value, list | tuple):
        if any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise SpecError(f"'phases' must be a list of integers (got {value!r})")
        return tuple(value)
    if not isinstance(value, str):
        raise SpecError(f"'phases' must be a list or text like '0:128:16,125:128' (got {value!r})")
    out: list[int] = []
    for part in value.split(","):
        bits = part.strip().split(":")
        try:
            numbers = [int(b) for b in bits]
        except ValueError:
            raise SpecError(
                f"'phases' item {part.strip()!r} is not a residue or start:stop[:step] "
                f"(e.g. '0:128:16,125:128')"
            ) from None
        if len(numbers) == 1:
            out.append(numbers[0])
        elif len(numbers) in (2, 3) and (len(numbers) == 2 or numbers[2] > 0):
            out.extend(range(*numbers))
        else:
            raise SpecError(f"'phases' item {part.strip()!r} must be start:stop[:step], step > 0")
    return tuple(out)


def _check_phases(phases: Any, modulus: int) -> tuple[int, ...]:
    phases = parse_phases(phases)
    if not phases:
        return ()
    bad = [p for p in phases if not 0 <= p < modulus]
    if bad:
        raise SpecError(f"'phases' must be residues in 0..{modulus - 1} (got {bad[:5]})")
    unique = tuple(sorted(set(phases)))
    if len(unique) < 2:
        raise SpecError(f"'phases' needs at least two residues to compare (got {list(unique)})")
    return unique if len(unique) < modulus else ()


_SLUG = re.compile(r"[^A-Za-z0-9]+")


def slug(text: str) -> str:
    """A Hub-safe identifier fragment (``deepseek-v4`` -> ``deepseek_v4``)."""
    return _SLUG.sub("_", text).strip("_").lower() or "x"
