"""The public API is pinned: adding or removing a name is a decision, not an accident."""

from __future__ import annotations

import phasebench


def test_public_names_are_pinned():
    assert sorted(phasebench.__all__) == sorted([
        "GENERATOR_VERSION", "__version__", "PhasebenchError", "SplitSpec", "load_tokenizer",
        "generate", "read_manifest", "iter_rows", "verify", "summarize",
    ])  # fmt: skip


def test_every_public_name_resolves_to_its_module():
    for name in phasebench.__all__:
        value = getattr(phasebench, name)
        module = getattr(value, "__module__", "phasebench")
        assert module.startswith("phasebench"), (name, module)
