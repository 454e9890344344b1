"""Build a kvpress press from the arguments of ``--model_args``.

A press is named by its class in ``kvpress.__all__``, in any spelling that reduces to the same
letters: ``ChunkKVPress``, ``chunkkv`` and ``chunk_kv`` are one press. A wrapper press (ChunkKV,
ChunkPress, BlockPress, AdaKV, KeyRerotation, ...) takes its scorer with ``inner=NAME``. Every
other argument is a parameter of the press's constructor (its dataclass fields, mostly); one
the wrapper does not take goes to the inner press, so
``press=chunkkv,inner=knorm,compression_ratio=0.25,chunk_length=8`` builds
``ChunkKVPress(press=KnormPress(compression_ratio=0.25), chunk_length=8)``.

Refused with one line each: a press phasebench cannot run as its authors meant it here (decoding
presses compress the question and the answer, which phasebench keeps uncompressed; FinchPress
scores the context against a question placed inside it), and a press whose fields cannot be
written as ``name=value`` pairs (ComposedPress takes a list of presses).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from phasebench.errors import PressError, first_line

#: Fields of a wrapper press that hold the press it wraps.
INNER_FIELDS = ("press", "base_press")
#: kvpress exports that are no press one can run (abstract bases).
ABSTRACT = ("BasePress", "ScorerPress")
#: Presses that compress during decoding: phasebench answers the question uncompressed.
DECODING = ("DecodingPress", "CompressionRatioDecodingPress", "PrefillDecodingPress", "CAMPress")
#: Presses that score the context against a question placed inside it.
QUESTION_INSIDE = ("FinchPress",)
#: Presses whose required fields take lists, which ``--model_args`` cannot write.
LIST_FIELDS = ("ComposedPress", "PerLayerCompressionPress")


def canonical(name: str) -> str:
    """``ChunkKVPress`` / ``chunk_kv`` / ``chunkkv`` -> ``chunkkv``."""
    letters = re.sub(r"[^a-z0-9]", "", name.lower())
    return letters.removesuffix("press") or letters


def press_classes() -> dict[str, type]:
    """``{canonical name: class}`` of every press kvpress exports."""
    import kvpress

    found = {}
    for name in kvpress.__all__:
        obj = getattr(kvpress, name)
        if isinstance(obj, type) and issubclass(obj, kvpress.BasePress) and name not in ABSTRACT:
            found[canonical(name)] = obj
    return found


def resolve(name: str, what: str = "press") -> type:
    """The press class named ``name``, or one line listing every valid name."""
    classes = press_classes()
    cls = classes.get(canonical(str(name)))
    if cls is None:
        names = ", ".join(sorted(classes))
        raise PressError(
            f"unknown {what} {name!r} in --model_args; kvpress exports: {names} (or none)"
        )
    if cls.__name__ in DECODING:
        raise PressError(
            f"{cls.__name__} compresses while the answer is decoded; phasebench-kvpress compresses "
            f"the context only and answers uncompressed: pick a prefill press (e.g. press=snapkv)"
        )
    if cls.__name__ in QUESTION_INSIDE:
        raise PressError(
            f"{cls.__name__} scores the context against a question inside it; phasebench-kvpress "
            f"prefills the context without the question: pick another press (e.g. press=snapkv)"
        )
    if cls.__name__ in LIST_FIELDS:
        raise PressError(
            f"{cls.__name__} takes a list of presses or ratios, which --model_args cannot write; "
            f"build it in Python and pass it to phasebench.kvpress.backend.KVPressLM(press=...)"
        )
    return cls


def init_fields(cls: type) -> dict[str, inspect.Parameter]:
    """The constructor's named parameters (most presses are dataclasses, but a few, such as
    CriticalKVPress, write their own ``__init__``; the signature is right for both)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: p for p in params if p.kind in kinds}


@dataclass(frozen=True)
class PressSpec:
    """A press as ``--model_args`` names it: its class, the inner press's class, and the field
    values of each (``inner_values`` empty without an inner press)."""

    cls: type
    values: tuple[tuple[str, Any], ...]
    inner: type | None = None
    inner_values: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        """``ChunkKVPress(press=KnormPress(compression_ratio=0.25), chunk_length=8)``."""
        parts = [f"{k}={v!r}" for k, v in self.values]
        if self.inner is not None:
            inner = ", ".join(f"{k}={v!r}" for k, v in self.inner_values)
            parts.insert(0, f"{inner_field(self.cls)}={self.inner.__name__}({inner})")
        return f"{self.cls.__name__}({', '.join(parts)})"

    def build(self) -> Any:
        """The press object (kvpress checks the values in its own ``__post_init__``)."""
        kwargs = dict(self.values)
        if self.inner is not None:
            kwargs[inner_field(self.cls)] = _construct(self.inner, dict(self.inner_values))
        return _construct(self.cls, kwargs)


def inner_field(cls: type) -> str | None:
    fields = init_fields(cls)
    return next((name for name in INNER_FIELDS if name in fields), None)


def _construct(cls: type, kwargs: dict[str, Any]) -> Any:
    try:
        return cls(**kwargs)
    except (AssertionError, TypeError, ValueError) as exc:
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise PressError(f"kvpress refuses {cls.__name__}({shown}): {first_line(exc)}") from None


def _coerce(cls: type, name: str, value: Any) -> Any:
    """lm-eval parses ``compression_ratio=0`` as an int; a float field gets a float."""
    try:
        hint = typing.get_type_hints(cls.__init__).get(name)
    except Exception:  # kvpress annotations that do not resolve: keep the value as parsed
        hint = None
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def parse_press(
    press: str | None, inner: str | None, args: Mapping[str, Any]
) -> tuple[PressSpec | None, dict[str, Any]]:
    """Split ``args`` into the press's fields and the rest (the ``hf`` backend's arguments).

    ``press`` None or ``"none"`` means no compression; then a press field in ``args`` is an
    error, so a typo never silently runs uncompressed.
    """
    rest = dict(args)
    if isinstance(press, str) and press.strip().lower() in ("", "none"):
        press = None
    if press is None:
        if inner is not None:
            raise PressError("'inner' wraps a press: give press=NAME too (e.g. press=chunkkv)")
        return None, rest
    cls = resolve(press)
    slot = inner_field(cls)
    inner_cls = resolve(inner, "inner press") if inner is not None else None
    if slot is not None and inner_cls is None:
        if init_fields(cls)[slot].default is inspect.Parameter.empty:
            raise PressError(
                f"{cls.__name__} wraps a scorer press: add inner=NAME to --model_args "
                f"(e.g. inner=knorm)"
            )
    if slot is None and inner_cls is not None:
        raise PressError(f"{cls.__name__} wraps no press: drop inner={inner}")
    own = {n for n in init_fields(cls) if n != slot}
    theirs = set(init_fields(inner_cls)) if inner_cls is not None else set()
    values, inner_values = {}, {}
    for name in list(rest):
        if name in own:
            values[name] = _coerce(cls, name, rest.pop(name))
        elif name in theirs:
            inner_values[name] = _coerce(inner_cls, name, rest.pop(name))
    spec = PressSpec(
        cls=cls,
        values=tuple(sorted(values.items())),
        inner=inner_cls,
        inner_values=tuple(sorted(inner_values.items())),
    )
    return spec, rest


def press_fields(spec: PressSpec | None) -> list[str]:
    """Every field name ``--model_args`` may set for ``spec`` (for error messages)."""
    if spec is None:
        return []
    names = [n for n in init_fields(spec.cls) if n not in INNER_FIELDS]
    if spec.inner is not None:
        names += [n for n in init_fields(spec.inner) if n not in names]
    return names
