"""Run the API-server checks of ``tests/lmeval/test_api_server.py`` against one real
OpenAI-compatible server and print what was verified: kv and niah through
``local-completions``, niah through ``local-chat-completions --apply_chat_template``, on
SmolLM2 (``tests/support/api_checks.py``).

    PYTHONPATH=$PWD:$PWD/tests python benchmarks/check_api_server.py --server llama-cpp

``--server transformers`` is what the test suite runs in CI. ``--server llama-cpp`` is the
manual check on llama-cpp-python's server, which reads the GGUF file itself and tokenizes with
llama.cpp's own tokenizer: it needs an interpreter with ``llama-cpp-python[server]==0.3.36``
built without AMX (``$PHASEBENCH_LLAMA_SERVER_PYTHON``, else one built once, about 29 minutes
on two cores; see ``tests/support/openai_server.py``). Exit status 0 when every check held, 1
with the failing check's message otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", choices=["transformers", "llama-cpp"], required=True)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (logs, runs)")
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from phasebench.resources import reference_weights_dir
    from support.api_checks import (
        check_chat,
        check_completions,
        check_length_axis,
        check_repeat,
        check_witness_catches_retokenizing,
    )
    from support.openai_server import serve

    other = reference_weights_dir() / "tokenizer"

    work = args.keep or Path(tempfile.mkdtemp(prefix="phasebench-api-check-"))
    start = time.monotonic()
    try:
        with serve(args.server, work / "server") as served:
            print(f"{args.server} server at {served.base} ready after "
                  f"{time.monotonic() - start:.0f} s (model={served.model})")  # fmt: skip
            for name, check in [
                ("kv", lambda w: check_completions(served, w, "kv")),
                ("niah", lambda w: check_completions(served, w, "niah")),
                ("chat", lambda w: check_chat(served, w)),
                ("witness", lambda w: check_witness_catches_retokenizing(served, w, other)),
                ("length", lambda w: check_length_axis(served, w)),
                ("repeat", lambda w: check_repeat(served, w)),
            ]:
                began = time.monotonic()
                lines = check(work / name)
                print("\n".join(lines) + f"\n  ({time.monotonic() - began:.0f} s)")
    except AssertionError as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            import shutil

            shutil.rmtree(work, ignore_errors=True)
    print(f"all checks held on {args.server}'s server ({time.monotonic() - start:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
