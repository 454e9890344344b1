"""Split families: pure functions from (spec, tokenizer) to rows, no I/O."""

from __future__ import annotations

from phasebench.errors import SpecError
from phasebench.specs import SplitSpec


def get_family(spec: SplitSpec):
    """The planner for ``spec.family`` (imported lazily: each family has its own templates)."""
    if spec.family == "kv":
        from phasebench.families import kv

        return kv
    if spec.family == "niah":
        from phasebench.families import niah

        return niah
    if spec.family == "code":
        from phasebench.families import code

        return code
    raise SpecError(f"'family' must be one of kv, niah, code (got {spec.family!r})")
