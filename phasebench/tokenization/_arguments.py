"""The model arguments that change a tokenizer, read as lm-eval's ``hf`` backend reads them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _hf_kwargs(args: dict[str, Any]) -> dict[str, Any]:
    """Tokenizer kwargs exactly as lm-eval's ``hf`` backend builds them from model args."""
    kwargs: dict[str, Any] = {
        "revision": args.get("revision") or "main",
        "trust_remote_code": truthy(args.get("trust_remote_code", False)),
    }
    if args.get("gguf_file"):
        kwargs["gguf_file"] = args["gguf_file"]
    else:
        kwargs["use_fast"] = True
    if args.get("add_bos_token") not in (None, ""):
        kwargs["add_bos_token"] = truthy(args["add_bos_token"])
    if args.get("subfolder"):
        kwargs["subfolder"] = args["subfolder"]
    return kwargs


def gguf_problem(folder: Path | str, args: Mapping[str, Any]) -> str | None:
    """The line for a model folder that holds a GGUF file and no ``config.json``, loaded without
    ``gguf_file`` (transformers then finds neither a config nor a tokenizer), else None."""
    folder = Path(folder).expanduser()
    if args.get("gguf_file") or not folder.is_dir() or (folder / "config.json").exists():
        return None
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    if not ggufs:
        return None
    return (
        f"folder {str(folder)!r} holds {', '.join(ggufs[:3])} and no config.json: name the file "
        f"in the model arguments, gguf_file={ggufs[0]}"
    )


def truthy(value: Any) -> bool:
    """A boolean argument as lm-eval's ``--model_args`` and a spec's tokenizer arguments give
    it: ``1`` / ``true`` / ``yes`` (any case) as text, else the value's truth."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)
