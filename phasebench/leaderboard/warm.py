"""Tokenizers the validating processes share: loaded once, in the fork server they are forked
from, instead of once in every process.

The fork server imports this module (:data:`~phasebench.leaderboard.isolate.PRELOAD`); it loads
the tokenizers :envvar:`PHASEBENCH_WARM_TOKENIZERS` names (JSON ``[[name, args], ...]``), which
:func:`~phasebench.leaderboard.validate.validate_all` sets to the ones several submissions name
and that come from this installation alone: built-in aliases and ``python:PACKAGE`` of
:data:`~phasebench.leaderboard.regenerate.TOKENIZER_PACKAGES`, never a Hub id or a path. Each is
loaded by the validation rules (:func:`~phasebench.leaderboard.regenerate.validation_tokenizer`);
one that fails to load is left to the validating process, which refuses or fails as it would
have anyway. A GGUF tokenizer costs about 15 s of CPU to convert: the example submissions alone
name SmolLM2's nine times.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from phasebench.leaderboard.isolate import WARM_ENV as ENV  # the name the fork server checks

#: At most this many distinct tokenizers are loaded in the fork server.
MAX_WARM = 4


def shared_tokenizers(meta: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, str]]]:
    """The tokenizers of this installation that at least two of these ``submission.yaml``
    contents name, most named first (at most :data:`MAX_WARM`)."""
    from phasebench.leaderboard.regenerate import TOKENIZER_PACKAGES, VALIDATION_ARGS
    from phasebench.tokenization import BUILTIN_ALIASES

    counts: Counter[str] = Counter()
    for data in meta:
        tok = data.get("tokenizer")
        name = tok.get("name") if isinstance(tok, Mapping) else None
        args = (tok.get("args") or {}) if isinstance(tok, Mapping) else None
        if not isinstance(name, str) or not isinstance(args, Mapping):
            continue
        package = name.startswith("python:") and name[7:] in TOKENIZER_PACKAGES
        plain = all(k in VALIDATION_ARGS and isinstance(v, str | int) for k, v in args.items())
        if (name in BUILTIN_ALIASES or package) and plain:
            items = sorted((str(k), str(v)) for k, v in args.items())
            counts[json.dumps([name, dict(items)], sort_keys=True)] += 1
    shared = [key for key, n in counts.most_common() if n >= 2][:MAX_WARM]
    return [(name, args) for name, args in map(json.loads, sorted(shared))]


def submission_meta(folders: Iterable[Path]) -> list[dict[str, Any]]:
    """The ``submission.yaml`` of each folder that reads as plain data (bounded, as
    validation reads it); the others are left to their validating process."""
    from phasebench.leaderboard.collect import SUBMISSION_FILE, Refused, read_yaml

    found = []
    for folder in folders:
        try:
            found.append(read_yaml(Path(folder) / SUBMISSION_FILE))
        except Refused:
            continue
    return found


def _warm() -> None:
    raw = os.environ.get(ENV)
    if not raw:
        return
    from phasebench.leaderboard.regenerate import validation_tokenizer

    try:
        wanted = json.loads(raw)[:MAX_WARM]
    except (ValueError, TypeError):
        return
    # The fork server must not start the tokenizers' thread pool: a process forked from it would
    # wait forever for threads it does not have. Off while loading, whatever the environment says.
    before = os.environ.get("TOKENIZERS_PARALLELISM")
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    try:
        for item in wanted:
            try:
                validation_tokenizer(str(item[0]), dict(item[1]))
            except Exception:  # noqa: BLE001  (the validating process meets it again, says why)
                continue
    finally:
        if before is None:
            os.environ.pop("TOKENIZERS_PARALLELISM", None)
        else:
            os.environ["TOKENIZERS_PARALLELISM"] = before


_warm()
