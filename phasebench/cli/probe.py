"""``phasebench probe``: test your own prompt for phase sensitivity."""

from __future__ import annotations

import argparse

from phasebench.cli import _args
from phasebench.specs import DEFAULT_MODULUS


def _choices(text: str) -> tuple[str, ...]:
    parts = tuple(text.split(","))
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise argparse.ArgumentTypeError(
            f"must be two different candidates, the right one first, e.g. 8,32 (got {text!r})"
        )
    return parts


def _styles(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def add_parser(sub: argparse._SubParsersAction) -> None:

    pr = sub.add_parser(
        "probe",
        help="test your own prompt for phase sensitivity (exact one-token shifts)",
        description="Put {{shift}} in your prompt where neutral padding may go (on its own "
        "line, before the passage that matters). phasebench moves everything after it by "
        "exactly k = 0 .. rounds*modulus-1 tokens for the model's own tokenizer, checks every "
        "shift by re-encoding the whole prompt, asks the model each one through lm-eval, and "
        "says whether the answer depends on the phase (position mod the stride). Optional: "
        "{{balance}} after the passage takes the tokens back there (total length fixed, only "
        "the phase moves); {{question}} marks where the question starts (needed by "
        "--model phasebench-kvpress).",
    )
    pr.add_argument("prompt_file", metavar="PROMPT_FILE", help="the prompt, with {{shift}}")
    pr.add_argument(
        "--model",
        required=True,
        help="lm-eval model type (hf, vllm, "
        "local-completions, local-chat-completions, phasebench-kvpress, ...)",
    )
    pr.add_argument(
        "--model_args",
        required=True,
        help="lm-eval model arguments, as for "
        "`phasebench eval` (pretrained=..., gguf_file=..., tokenizer=..., base_url=...)",
    )
    right = pr.add_mutually_exclusive_group()
    right.add_argument(
        "--expect",
        default=None,
        metavar="TEXT",
        help="the right answer: the generated answer must start with it",
    )
    right.add_argument(
        "--choices",
        type=_choices,
        default=(),
        metavar="A,B",
        help="compare log p(A) - log p(B) (one token each; A is right)",
    )
    strides = [s for s in range(2, DEFAULT_MODULUS + 1) if DEFAULT_MODULUS % s == 0]
    _args.modulus(
        pr, f"phase modulus P ({DEFAULT_MODULUS} covers strides {', '.join(map(str, strides))})"
    )
    pr.add_argument(
        "--rounds",
        type=_args.positive_int,
        default=4,
        help="R: shifts k = 0 .. R*P-1, each phase visited R times per style",
    )
    pr.add_argument(
        "--styles",
        type=_styles,
        default=None,
        metavar="S,S",
        help="padding styles: docstring_eq, comment_dash, comment_hash, "
        "comment_star, filler, custom (default: the code family's four; "
        "custom alone when --filler is given)",
    )
    pr.add_argument(
        "--filler",
        default=None,
        metavar="TEXT",
        help="your own neutral filler line (the 'custom' style)",
    )
    pr.add_argument(
        "--apply_chat_template",
        action="store_true",
        help="send the prompt as a user message through the chat template",
    )
    pr.add_argument(
        "--system_instruction",
        default=None,
        metavar="TEXT",
        help="a system message before it (with --apply_chat_template)",
    )
    pr.add_argument("--device", default=None, help="lm-eval --device (cpu, cuda:0, ...)")
    pr.add_argument(
        "--max_gen_toks",
        type=_args.positive_int,
        default=16,
        help="tokens generated per answer (without --choices)",
    )
    pr.add_argument(
        "--bars",
        action="store_true",
        help="also print every shift's value, one line per shift (after the summary)",
    )
    _args.out(pr, "write probe.json and probe.png", metavar="DIR")
    pr.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from phasebench.probe import DEFAULT_STYLES, ProbeError, run_probe

    styles = args.styles or (("custom",) if args.filler is not None else DEFAULT_STYLES)
    if args.system_instruction and not args.apply_chat_template:
        raise ProbeError("--system_instruction needs --apply_chat_template")
    out = None
    if args.out:
        from phasebench.probe.output import check_out

        out = check_out(args.out)
    import sys

    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one bar for the work: the probe's own
    result = run_probe(
        args.prompt_file,
        args.model,
        args.model_args,
        expect=args.expect,
        choices=args.choices,
        modulus=args.modulus,
        rounds=args.rounds,
        styles=styles,
        custom=args.filler,
        chat=args.apply_chat_template,
        system=args.system_instruction,
        device=args.device,
        max_gen_toks=args.max_gen_toks,
        progress=True,
        on_event=lambda line: print(f"phasebench probe: {line}", file=sys.stderr, flush=True),
    )
    from phasebench.probe.analysis import terminal_plot

    data = result.to_dict()
    probe = data["probe"]
    print(
        f"phasebench probe: {len(data['shifts'])} exact shifts ({probe['design']} design, "
        f"{len(probe['styles'])} padding styles x {probe['shifts_per_style']} shifts, modulus "
        f"{probe['modulus']}), tokenizer {probe['tokenizer']}"
    )
    for style, why in probe["styles_refused"].items():
        print(f"  style {style} left out: {why}")
    w = data["witness"]
    if w["kind"] == "usage.prompt_tokens":
        print(
            f"  server witness (usage.prompt_tokens): {w['agreed']} agreed, {w['disagreed']} "
            f"disagreed, {w['missing']} not reported"
        )
    elif w["kind"] == "backend tok_encode":
        print("  backend witness: the backend's own tok_encode gave the checked ids, every shift")
    print()
    print(terminal_plot(result, bars=args.bars), end="")
    if out is not None:
        from phasebench.probe.output import PNG_NAME, can_draw, write_outputs

        for path in write_outputs(result, out):
            print(f"wrote {path}")
        if not can_draw():
            print(
                f"{PNG_NAME} not drawn: matplotlib is not installed "
                "(pip install 'phasebench[plots]')"
            )
    print(f"\n{result.verdict}")
    return 0
