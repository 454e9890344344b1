"""Hugging Face dataset repository folders, their data card, the push, and loading back.

``phasebench publish`` turns generated config folders into one dataset repository folder::

    REPO/README.md                                   data card (YAML front matter + prose)
    REPO/phasebench.json                             index: configs, files, hashes, card options
    REPO/<config>/manifest.json                      each config's manifest, byte for byte
    REPO/<config>/data-00000-of-00001.parquet        each config's parquet files, byte for byte

The repository is laid out like a generated output folder, so everything that reads those
(``read_manifest``, ``iter_rows``, ``phasebench verify``, the lm-eval tasks) reads a published
dataset too; :func:`select_configs` also fetches selected configs of a Hub dataset.

Modules: :mod:`~phasebench.hub.naming` (names, ids), :mod:`~phasebench.hub.card` (the card),
:mod:`~phasebench.hub.repo` (build and check a folder), :mod:`~phasebench.hub.push` (one
commit), :mod:`~phasebench.hub.load` (read back, with checks).
"""

from __future__ import annotations

from phasebench.hub.card import card_metadata, render_card, size_category
from phasebench.hub.load import load_split, select_configs
from phasebench.hub.naming import hub_config_name, tokenizer_slug
from phasebench.hub.push import commit_operations, push_repo
from phasebench.hub.repo import build_repo, read_index, repo_problems, validate_repo

__all__ = [
    "build_repo",
    "card_metadata",
    "commit_operations",
    "hub_config_name",
    "load_split",
    "push_repo",
    "read_index",
    "render_card",
    "repo_problems",
    "select_configs",
    "size_category",
    "tokenizer_slug",
    "validate_repo",
]
