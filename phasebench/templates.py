"""jinja2 templates shipped under ``generators/`` (prompts, code items, lexicon)."""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

from phasebench.resources import resource_dir


def generators_dir() -> Path:
    """The ``generators/`` folder (a resource package inside the wheel)."""
    return resource_dir("generators")


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(generators_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(name: str, **values: object) -> str:
    """Render ``generators/<name>`` with ``values`` (missing values are an error)."""
    return environment().get_template(name).render(**values)
