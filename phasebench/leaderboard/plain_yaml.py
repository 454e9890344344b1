"""YAML that can only be plain data: mappings with text keys, lists, and scalars.

A submitted ``submission.yaml`` (or a ``reproduced.yaml``) is read with this loader, never with a
general one. It refuses, before anything is built:

* anchors and aliases (a few hundred bytes of nested aliases expand to a billion strings),
* explicit tags (``!!python/object``, ``!!binary``, custom ones) and more than one document,
* nesting deeper than :data:`MAX_DEPTH` or more than :data:`MAX_NODES` nodes,

and, while building, duplicate keys, keys that are not text and non-finite numbers. Dates stay
text (``2026-12-01`` is the string, not a ``datetime``) and ``<<`` is an ordinary key, so what
comes out is exactly what JSON can hold. The lm-eval task YAMLs are this project's own files and
are read elsewhere (:mod:`phasebench.leaderboard.schema`).
"""

from __future__ import annotations

import math
from typing import Any

import yaml

from phasebench.errors import PlainYamlError, first_line

__all__ = ["MAX_DEPTH", "MAX_NODES", "PlainYamlError", "load_plain"]

MAX_DEPTH = 32
MAX_NODES = 10_000
_DROPPED = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"}


class _PlainLoader(yaml.SafeLoader):
    """The safe loader without timestamps and merge keys, refusing duplicate and non-text keys
    and non-finite floats."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        out: dict = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise PlainYamlError(f"mapping keys must be text (got {type(key).__name__})")
            if key in out:
                raise PlainYamlError(f"the key {key!r} appears twice")
            out[key] = self.construct_object(value_node, deep=deep)
        return out

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value = super().construct_yaml_float(node)
        if not math.isfinite(value):
            raise PlainYamlError(f"non-finite number {node.value!r}")
        return value


_PlainLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PlainLoader.add_constructor("tag:yaml.org,2002:map", _PlainLoader.construct_mapping)
_PlainLoader.add_constructor("tag:yaml.org,2002:float", _PlainLoader.construct_yaml_float)


def _check_events(text: str) -> None:
    """One pass over the parser's events, refusing what plain data never needs."""
    depth = nodes = documents = 0
    for event in yaml.parse(text, Loader=_PlainLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise PlainYamlError("more than one YAML document")
        if isinstance(event, yaml.AliasEvent):
            raise PlainYamlError(f"alias *{event.anchor} (aliases and anchors are refused)")
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise PlainYamlError(f"more than {MAX_NODES} values")
            if event.anchor is not None:
                raise PlainYamlError(f"anchor &{event.anchor} (aliases and anchors are refused)")
            if isinstance(event, yaml.ScalarEvent):
                explicit = event.tag not in (None, "!")  # "!": a quoted scalar's own tag
            else:
                explicit = isinstance(event, yaml.CollectionStartEvent) and event.tag is not None
            if explicit:
                raise PlainYamlError(f"explicit tag {event.tag} (only plain data is read)")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise PlainYamlError(f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_plain(text: str) -> Any:
    """The data of ``text`` (mappings, lists, text, numbers, booleans, null), or
    :class:`PlainYamlError` with a one-line reason."""
    try:
        _check_events(text)
        return yaml.load(text, Loader=_PlainLoader)  # the plain loader above, never another
    except PlainYamlError:
        raise
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise PlainYamlError(" ".join(first_line(exc).split())) from None
