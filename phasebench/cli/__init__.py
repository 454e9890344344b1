"""The ``phasebench`` command: the only place that parses arguments and prints.

Each command lives in its own module with ``add_parser(subparsers)`` (options only: building the
parser imports no heavy library, so ``phasebench --help`` answers at once) and ``run(args)``
(imports what it needs, calls library functions, prints their results). A
:class:`~phasebench.errors.PhasebenchError`, or an ``OSError`` while writing outputs, becomes one
line on stderr and exit code 2 (3 for a :class:`~phasebench.errors.MachineError`); with
``PHASEBENCH_DEBUG=1`` it keeps its traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from phasebench._version import __version__

#: Command modules under ``phasebench.cli``, in the order ``--help`` lists them.
COMMANDS = (
    "generate",
    "verify",
    "inspect",
    "eval",
    "probe",
    "tasks_dir",
    "report",
    "power",
    "publish",
    "leaderboard",
    "reference",
    "demo",
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Each option's default shown once after its help, where there is one to show (not for a
    required option, a flag, an unset value, or a help text that states its default itself);
    descriptions keep their line breaks."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or "default:" in text or "(default" in text:
            return text
        if action.required or action.default in (None, False, argparse.SUPPRESS, [], ()):
            return text
        if action.option_strings or action.nargs in ("?", "*"):
            return f"{text} (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``--help`` shows the usage) and
    whose help uses :class:`HelpFormatter`. Every command and action is one (argparse makes
    sub-parsers of the parent's class), so no command names either again."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="phasebench",
        description="Phase-balanced long-context splits that expose phase sensitivity.",
    )
    parser.add_argument("--version", action="version", version=f"phasebench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"phasebench.cli.{name}").add_parser(sub)
    return parser


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"phasebench: warning: {' '.join(str(message).split())}\n"


def main(argv: Sequence[str] | None = None) -> int:
    import warnings

    from phasebench.errors import PhasebenchError, debugging

    warnings.formatwarning = _one_line_warning
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        return int(exc.code or 0)
    try:
        return int(args.run(args) or 0)
    except PhasebenchError as exc:
        if debugging():  # PHASEBENCH_DEBUG=1: the traceback of any error
            raise
        return fail(str(exc), exc.exit_code)
    except OSError as exc:  # a full disk, a read-only folder, a path that is a file
        if debugging():
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(f"{exc.strerror or exc}{where}", 2)
    except KeyboardInterrupt:
        print("phasebench: interrupted", file=sys.stderr)
        return 130


def fail(message: str, code: int) -> int:
    """Print ``message`` as the one error line and return the exit code."""
    line = " ".join(message.split())
    print(f"phasebench: error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
