"""Options and argument types shared by several commands, each defined once (parsing only; no
library imports)."""

from __future__ import annotations

import argparse


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


def quiet(parser: argparse.ArgumentParser, what: str = "no progress bar") -> None:
    """``--quiet``: ``what`` it leaves out of the output."""
    parser.add_argument("--quiet", action="store_true", help=what)
