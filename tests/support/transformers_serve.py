"""``transformers serve`` with a witness: the server runs unchanged in this process, and every
call of ``generate`` first appends the token ids it was handed, one JSON list per sequence, to a
file. Both of the server's text paths end in that call (``/v1/completions`` tokenizes the prompt
text, ``/v1/chat/completions`` renders the chat template and tokenizes it), so the file holds
exactly the ids the model was fed, in the order the requests were served.

    python -P transformers_serve.py FED.jsonl serve MODEL --host 127.0.0.1 --port N ...

Run by path (not imported by the tests), with the interpreter that has ``transformers[serving]``;
``-P`` keeps this folder off ``sys.path`` (``support/tokenizers.py`` would hide ``tokenizers``).
"""

from __future__ import annotations

import json
import sys
import threading


def record_generate_inputs(path: str) -> None:
    """Wrap ``GenerationMixin.generate`` so each call appends its input ids to ``path`` first."""
    from transformers.generation.utils import GenerationMixin

    original = GenerationMixin.generate
    lock = threading.Lock()

    def generate(self, *args, **kwargs):
        ids = kwargs.get("input_ids")
        if ids is None:
            ids = kwargs.get("inputs", args[0] if args else None)
        rows = ids.tolist() if hasattr(ids, "tolist") else ids
        rows = rows if rows and isinstance(rows[0], list) else [rows]
        with lock, open(path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
        return original(self, *args, **kwargs)

    GenerationMixin.generate = generate


def main() -> None:
    fed, *command = sys.argv[1:]
    record_generate_inputs(fed)
    from transformers.cli.transformers import app  # the CLI's own command table

    sys.argv = ["transformers", *command]
    app()


if __name__ == "__main__":
    main()
