"""``phasebench eval``: lm-eval's own CLI with the phasebench tasks, a truncation guard, and
phasebench's summary after lm-eval's table."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser(
        "eval",
        help="run lm-eval with the phasebench tasks (every lm-eval flag passes through)",
        description="Runs `lm_eval run ARGS --include_path $(phasebench tasks-dir)` after "
        "preparing the phasebench splits and checking that no prompt would be truncated, then "
        "prints phasebench's summary (as `phasebench report` does) when --log_samples and "
        "--output_path were given. `phasebench eval --help` shows phasebench's part (the task "
        "metadata, the truncation guard), then lm-eval's own options.",
        # every token, options included, belongs to lm-eval (`phasebench eval --help` shows
        # lm-eval's help): this parser recognises no options of its own
        prefix_chars="+",
        add_help=False,
    )
    ev.add_argument("lm_eval_args", nargs="*", metavar="ARGS", help="lm-eval's run arguments")
    ev.set_defaults(run=run)


def _phasebench_help() -> str:
    """What ``phasebench eval --help`` prints before lm-eval's own help: what phasebench adds to
    lm-eval's ``run``, and the task metadata keys with their defaults."""
    from phasebench.lmeval.harness import GROUP, TASK_FAMILIES
    from phasebench.lmeval.metadata import help_table

    table = help_table()
    return f"""phasebench eval: lm-eval's `run` with the phasebench tasks on its --include_path
({", ".join(TASK_FAMILIES)}; the group {GROUP} runs all three).
Every option below passes to lm-eval unchanged, but --seed (the split's seed here).

Before lm-eval starts, phasebench
  - checks the task metadata (--metadata JSON, keys below): a bad value is one line, exit 2,
    before any tokenizer or model loads;
  - builds each split for the model's own tokenizer (cached under $PHASEBENCH_CACHE), or checks
    the pre-built one of dataset_path against it;
  - refuses a run that would be truncated (the truncation guard): when the longest prompt plus
    the generated tokens exceeds the model's context, lm-eval's hf and vllm backends cut the
    prompt from the left, deleting needles and faking a phase gap. Through an API backend, state
    the server's own context as max_length in --model_args.
After lm-eval's tables, with --log_samples --output_path OUT, it prints phasebench's summary
(what `phasebench report OUT` prints). docs/tasks.md has the details.

phasebench's own options (taken out before lm-eval parses the rest):
  --seed N            the split's seed, as everywhere in phasebench (the metadata key seed;
                      default 0); lm-eval's own seeds are --lm_eval_seed
  --lm_eval_seed S    lm-eval's --seed (python, numpy, torch, fewshot: 0,1234,1234,1234 by
                      default), passed to lm-eval as its --seed
  --staged            run one task at one length in looks of 1/8, 1/4, 1/2 and all of its base
                      items (--limit each time, --use_cache so no prompt is sent twice) and stop
                      when the gap is significant under the calibrated boundary (docs/stats.md);
                      needs --output_path and --log_samples; writes staged.json beside samples
  --futility_gap G    with --staged: also stop when the gap's 95% interval ends below G (a
                      fraction, 0.3 = 30 points)

Task metadata (--metadata JSON):
{table}

lm-eval's own options:
"""


def run(args: argparse.Namespace) -> int:
    import shlex

    from phasebench.kvpress import register_model_type
    from phasebench.lmeval.harness import run_eval

    if {"-h", "--help"} & set(args.lm_eval_args):
        print(_phasebench_help(), flush=True)
        try:
            run_eval(args.lm_eval_args)  # lm-eval prints its help and exits
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0
    import sys

    from transformers.utils import logging as transformers_logging

    register_model_type()  # --model phasebench-kvpress (imported only when a run names it)
    transformers_logging.disable_progress_bar()  # one bar for the work: lm-eval's requests

    def say(line: str) -> None:
        print(f"phasebench eval: {line}", file=sys.stderr, flush=True)

    staged, futility_gap, lm_eval_args = _own_options(args.lm_eval_args)
    if staged:
        return _run_staged(lm_eval_args, futility_gap)
    try:
        output = run_eval(lm_eval_args, on_event=say)
    except KeyboardInterrupt:
        say(_resume_hint(lm_eval_args))
        return 130
    if not output.samples_files:
        print(
            "\nphasebench: per-phase summary (worst phase, gap, p-value, period): run with "
            "--log_samples --output_path OUT, then `phasebench report OUT`"
        )
        return 0
    from phasebench.report import build_report, render_tables, runs_from_files

    report = build_report(runs_from_files(output.samples_files))
    print("\nphasebench summary of this run (points, 0-100; intervals 95%):\n")
    print(render_tables(report), end="")
    where = shlex.quote(str(output.output_path))
    print(f"\nSame numbers, plots and JSON: phasebench report {where} --plots DIR --json FILE")
    return 0


def _resume_hint(lm_eval_args: list[str]) -> str:
    """What an interrupted run leaves and how to resume it: lm-eval's ``--use_cache PREFIX``
    keeps each answer as it comes, and the same command asks only the prompts not yet
    answered."""
    import contextlib
    import io

    from phasebench import lmeval_compat as compat

    try:
        with contextlib.redirect_stderr(io.StringIO()):
            prefix = compat.parse_run_args(lm_eval_args).use_cache
    except (SystemExit, ValueError):
        prefix = None
    if prefix:
        return (
            f"interrupted; the answers so far are kept in {compat.cache_file(prefix)}: run the "
            "same command again to resume (only the prompts not yet answered are asked)"
        )
    return (
        "interrupted; nothing was kept: add --use_cache PREFIX (lm-eval keeps each answer as it "
        "comes) and an interrupted run resumes when the same command runs again"
    )


def _own_options(tokens: list[str]) -> tuple[bool, float | None, list[str]]:
    """phasebench's options taken out of lm-eval's arguments: ``--staged``, ``--futility_gap G``,
    and ``--seed N``, the split's seed as in every phasebench command, which becomes the task
    metadata's ``seed``; ``--lm_eval_seed S`` is lm-eval's own ``--seed``."""
    import contextlib
    import io

    from phasebench import lmeval_compat as compat
    from phasebench.cli import _args
    from phasebench.errors import EvalError

    own = argparse.ArgumentParser(
        add_help=False, allow_abbrev=False, prog="phasebench eval", exit_on_error=False
    )
    own.add_argument("--staged", action="store_true")
    own.add_argument("--futility_gap", default=None)
    _args.seed(own, "the split's seed", given_only=True)
    own.add_argument("--lm_eval_seed", default=None)
    try:
        known, rest = own.parse_known_args(tokens)
    except (argparse.ArgumentError, SystemExit) as exc:  # no value, or not one of its kind
        hint = (
            "--seed is the split's seed; lm-eval's own seeds are --lm_eval_seed, e.g. "
            "--lm_eval_seed 0,1234,1234,1234"
            if "--seed" in str(exc)
            else "--futility_gap takes a fraction, e.g. --futility_gap 0.3"
        )
        raise EvalError(f"{exc}; {hint}") from None
    futility_gap = None
    if known.futility_gap is not None:
        try:
            futility_gap = float(known.futility_gap)
        except ValueError:
            raise EvalError("--futility_gap takes a fraction, e.g. --futility_gap 0.3") from None
    if futility_gap is not None and not known.staged:
        raise EvalError("--futility_gap is a rule of a staged run; add --staged")
    if known.lm_eval_seed is not None:
        rest += ["--seed", known.lm_eval_seed]
    if known.seed is not None:
        try:  # lm-eval's own parser reads the metadata; its errors are its own to report
            with contextlib.redirect_stderr(io.StringIO()):
                metadata = dict(compat.parse_run_args(rest).metadata or {})
        except (SystemExit, ValueError):
            metadata = {}
        if "seed" in metadata and str(metadata["seed"]) != str(known.seed):
            raise EvalError(
                f"--seed {known.seed} and the metadata's seed {metadata['seed']} disagree: "
                "give the split's seed once"
            )
        rest += ["--metadata", f"seed={known.seed}"]
    return known.staged, futility_gap, rest


def _run_staged(lm_eval_args: list[str], futility_gap: float | None) -> int:
    import shlex

    from phasebench.lmeval.staged import run_staged
    from phasebench.report import build_report, render_tables, runs_from_files

    result = run_staged(lm_eval_args, futility_gap, on_event=lambda line: print(line, flush=True))
    report = build_report(runs_from_files(result.samples_files))
    d = result.decision
    last = result.looks[-1]
    print("\nphasebench summary of this run (points, 0-100; intervals 95%):\n")
    print(render_tables(report), end="")
    print(
        f"\nStaged run: stopped at look {d.stage} of {d.n_stages} "
        f"({last['n_base']} of {result.plan.n_base} base items, {last['prompts']} of "
        f"{result.plan.n_base * result.plan.rows_per_base} prompts): {d.verdict}, {d.reason}."
    )
    print(f"Every look and its numbers: {result.record}")
    where = shlex.quote(str(result.samples_files[0].parent))
    print(f"Same numbers, plots and JSON: phasebench report {where} --plots DIR --json FILE")
    return 0
