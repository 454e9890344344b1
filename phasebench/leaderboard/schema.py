"""What a submission must look like: ``submission.yaml`` against its JSON Schema, its folder
name, and the lm-eval tasks (with versions) of the families this phasebench knows."""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from phasebench.families import names as family_names
from phasebench.families import task_name
from phasebench.leaderboard.collect import RawSubmission, Refused
from phasebench.lmeval_compat import task_yaml
from phasebench.resources import resource_dir

#: Versions as lm-eval and transformers write them into results (anything else is shown as
#: "unreadable" on the site).
VERSION_TEXT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$")


@functools.lru_cache(maxsize=1)
def submission_schema() -> dict[str, Any]:
    text = resources.files("phasebench.leaderboard").joinpath("submission.schema.json")
    return json.loads(text.read_text(encoding="utf-8"))


def known_tasks(tasks_dir: Path | None = None) -> dict[str, str]:
    """``{task name: version}`` of the lm-eval task of every family this phasebench knows
    (:func:`phasebench.families.names`: the built-in ones and any registered in this process),
    each version as lm-eval writes it into ``versions`` of its results: read from the task's
    YAML in ``tasks_dir`` (default: the shipped ``tasks/``) with its includes merged by lm-eval's
    own loader (:func:`phasebench.lmeval_compat.task_yaml`), and, for a
    registered family whose task YAML lives in a folder of its own, the version of the shared
    ``_phasebench_common.yaml`` that every phasebench task includes (its scoring's version)."""
    folder = Path(tasks_dir) if tasks_dir else resource_dir("tasks")
    shared = _version(task_yaml(folder / "_phasebench_common.yaml"))
    found: dict[str, str] = {}
    for name in family_names():
        task = task_name(name)
        path = folder / f"{task}.yaml"
        data = task_yaml(path) if path.is_file() else {}
        found[task] = _version(data) if data.get("task") == task else shared
    return dict(sorted(found.items()))


def _version(data: dict[str, Any]) -> str:
    return str((data.get("metadata") or {}).get("version"))


def check_schema(raw: RawSubmission) -> None:
    meta_file = raw.folder / "submission.yaml"
    validator = jsonschema.Draft202012Validator(submission_schema())
    errors = sorted(validator.iter_errors(raw.meta), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        message = err.message if len(err.message) < 200 else err.message[:200] + "..."
        raise Refused("schema", meta_file, f"field {where}: {ascii(message)[1:-1]}")
    org_model = raw.meta["model"].replace("/", "__")
    variant = raw.meta.get("variant")
    folder = raw.meta["revision"] + (f"+{variant}" if variant else "")
    if raw.folder.parent.name != org_model or raw.folder.name != folder:
        raise Refused(
            "path",
            meta_file,
            f"model {raw.meta['model']} at revision {raw.meta['revision']}"
            f"{f' (variant {variant})' if variant else ''} belongs in {org_model}/{folder}/",
        )
    if ".." in raw.meta["tokenizer"]["name"]:
        raise Refused("schema", meta_file, "field tokenizer/name: '..' is not allowed")
