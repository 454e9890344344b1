"""Declarations looked up by name: the families (:mod:`phasebench.families`) and the statistics
(:mod:`phasebench.metrics`) are each one :class:`Registry`, so both follow one rule.

The rule: every name of a declaration (a family's name; a statistic's key and lm-eval metric
name) belongs to one declaration. Adding a declaration whose name another one holds is refused
with the registry's error; adding the same declaration again changes nothing. Declarations keep
the order they were added in, which is the order they are shown in.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Declarations of one kind (``kind`` names it in messages), refused with ``error``."""

    def __init__(self, kind: str, error: type[Exception]) -> None:
        self._kind = kind
        self._error = error
        self._names: dict[str, T] = {}
        self._items: list[T] = []

    def add(self, item: T, names: Iterable[str]) -> T:
        """Declare ``item`` under ``names``; a name another declaration holds is refused."""
        names = [n for n in names if n]
        for name in names:
            held = self._names.get(name)
            if held is not None and held is not item:
                raise self._error(f"a {self._kind} named {name!r} is already declared")
        if not any(known is item for known in self._items):
            self._items.append(item)
        for name in names:
            self._names[name] = item
        return item

    def remove(self, item: T) -> None:
        """Forget ``item`` and its names (tests, experiments)."""
        self._items = [known for known in self._items if known is not item]
        self._names = {name: known for name, known in self._names.items() if known is not item}

    @contextmanager
    def added(self, item: T, names: Iterable[str]) -> Iterator[T]:
        """:meth:`add` for the length of a ``with`` block."""
        self.add(item, names)
        try:
            yield item
        finally:
            self.remove(item)

    def get(self, name: str) -> T | None:
        """The declaration holding ``name``, or None."""
        return self._names.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[T]:
        return iter(tuple(self._items))

    def __len__(self) -> int:
        return len(self._items)
