"""Options and argument types shared by several commands, each defined once (parsing only).

Each shared option (``--out``, ``--seed``, ``--stats-seed``, ``--train-seed``, ``--n-base``,
``--length``, ``--modulus``, ``--quiet``, ``--num-proc``, ``--threads``) is one small function
that adds it to a command's parser: its name, its type and its default are declared here, the
default read from the module where the fact lives (the split's defaults from
:class:`phasebench.specs.SplitSpec`, the statistics seed from :mod:`phasebench.metrics`).
``--seed`` is a split's seed wherever it appears; a command whose seed is another one's takes
it under its own name and refuses ``--seed`` in one line that names it (:func:`renamed`). A
command passes its own help text, and ``required=`` or a ``default=`` read from another home
(the reference models' sizes in :mod:`phasebench.reference`) where it genuinely differs; no
command module calls ``add_argument`` for one of these names (``tests/cli/test_cli_options.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def positive_int(text: str) -> int:
    """An integer >= 1, refused by argparse with a one-line usage error otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {value})")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer (got {text!r})") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 (got {value})")
    return value


def name_value(text: str) -> tuple[str, str]:
    """``NAME=VALUE``."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"must look like NAME=VALUE (got {text!r})")
    name, value = text.split("=", 1)
    return name, value


def shard(text: str) -> tuple[int, int]:
    """``I/N`` with 0 <= I < N."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like I/N, e.g. 0/4 (got {text!r})") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"must satisfy 0 <= I < N (got {text!r})")
    return i, n


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (got {text!r})") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (got {text})")
    return value


class Shown:
    """Text computed when a help is shown, for a help that quotes facts whose home is costly to
    import (a family's declaration imports its generator): set it as an attribute of the action
    and name it in the help, ``%(name)s``, so argparse formats it only for ``--help``."""

    def __init__(self, text: Callable[[], str]) -> None:
        self._text = text

    def __str__(self) -> str:
        return self._text()


#: The options declared here; command modules never ``add_argument`` one of them themselves.
SHARED = (
    "--out",
    "--seed",
    "--stats-seed",
    "--train-seed",
    "--n-base",
    "--length",
    "--modulus",
    "--quiet",
    "--num-proc",
    "--threads",
)


def quiet(parser: argparse.ArgumentParser, what: str = "no progress bar") -> None:
    """``--quiet``: ``what`` it leaves out of the output."""
    parser.add_argument("--quiet", action="store_true", help=what)


def out(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    default: str | None = None,
    required: bool = False,
    metavar: str | None = None,
) -> None:
    """``--out``: the folder (or file) a command writes; ``default`` is the command's own."""
    parser.add_argument("--out", default=default, required=required, metavar=metavar, help=help)


def seed(parser: argparse.ArgumentParser, help: str, *, given_only: bool = False) -> None:
    """``--seed``: the split's seed, >= 0, by default :data:`phasebench.specs.DEFAULT_SEED`
    (``given_only``: None unless given, for ``eval``, whose task metadata may hold it too).
    Wherever a command takes ``--seed`` it means the seed of the split it builds; another seed
    has a name of its own (:func:`stats_seed`, :func:`train_seed`, ``eval``'s
    ``--lm_eval_seed``)."""
    from phasebench.specs import DEFAULT_SEED

    default = None if given_only else DEFAULT_SEED
    parser.add_argument("--seed", type=non_negative_int, default=default, help=help)


def stats_seed(parser: argparse.ArgumentParser, help: str) -> None:
    """``--stats-seed``: the seed of the bootstrap and permutation streams, >= 0, by default
    :data:`phasebench.metrics.SEED`; ``--seed`` is refused with a line naming it."""
    from phasebench.metrics import SEED

    parser.add_argument(
        "--stats-seed", type=non_negative_int, default=SEED, metavar="SEED", help=help
    )
    renamed(parser, "--seed", "--stats-seed", "the statistics' seed")


def train_seed(parser: argparse.ArgumentParser, help: str) -> None:
    """``--train-seed``: the training seed, >= 0, by default None (the training settings' own);
    ``--seed`` is refused with a line naming it."""
    parser.add_argument(
        "--train-seed", type=non_negative_int, default=None, metavar="SEED", help=help
    )
    renamed(parser, "--seed", "--train-seed", "the training seed")


class Renamed(argparse.Action):
    """An option's old spelling, hidden from ``--help``: using it is refused with one line that
    names the new one (exit code 2)."""

    def __init__(self, option_strings, dest, *, new: str, what: str, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)
        self.new, self.what = new, what

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        parser.error(f"{option_string} is now {self.new} ({self.what}; --seed is a split's seed)")


def renamed(parser: argparse.ArgumentParser, old: str, new: str, what: str) -> None:
    """Refuse ``old`` on ``parser`` with a line saying it is now ``new`` (``what`` it means)."""
    parser.add_argument(
        old, action=Renamed, new=new, what=what, dest=f"_renamed_{old.lstrip('-')}",
        default=argparse.SUPPRESS,
    )  # fmt: skip


def n_base(
    parser: argparse.ArgumentParser, help: str, *, default: int | None = None
) -> argparse.Action:
    """``--n-base``: base items per config, >= 1; ``None`` leaves it to the family
    (:attr:`phasebench.families.Family.default_n_base`)."""
    return parser.add_argument("--n-base", type=positive_int, default=default, help=help)


def length(
    parser: argparse.ArgumentParser,
    help: str,
    *,
    default: int | None = None,
    repeatable: bool = False,
) -> None:
    """``--length``: prompt length in tokens. One kv length (>= 1), or with ``repeatable`` a
    list for ``generate`` (>= 0: the code family's length is the unrelated code before the item,
    0 allowed; each family's own minimum is checked by :class:`~phasebench.specs.SplitSpec`)."""
    if repeatable:
        parser.add_argument("--length", type=non_negative_int, action="append", help=help)
    else:
        parser.add_argument("--length", type=positive_int, default=default, help=help)


def modulus(parser: argparse.ArgumentParser, help: str = "phase modulus") -> None:
    """``--modulus``: the phase modulus P, by default :data:`phasebench.specs.DEFAULT_MODULUS`
    (the range a split accepts is checked by :class:`~phasebench.specs.SplitSpec`)."""
    from phasebench.specs import DEFAULT_MODULUS

    parser.add_argument("--modulus", type=positive_int, default=DEFAULT_MODULUS, help=help)


def num_proc(parser: argparse.ArgumentParser, help: str) -> None:
    """``--num-proc``: worker processes, >= 1, by default one (any number gives the same bytes:
    the work is cut by stable keys, not by the number of workers)."""
    parser.add_argument("--num-proc", type=positive_int, default=1, help=help)


def threads(parser: argparse.ArgumentParser, help: str) -> None:
    """``--threads``: torch threads, >= 1, by default one (what reproduces a reference model's
    training bit for bit)."""
    parser.add_argument("--threads", type=positive_int, default=1, help=help)
