"""``phasebench probe``: test one prompt of your own for phase sensitivity.

Keep the content, move it by exactly one token at a time, ask again: the prompt file marks with
``{{shift}}`` where neutral padding may go; every shift k = 0 .. rounds * modulus - 1 is
re-encoded whole and checked to move everything after the marker by exactly k tokens
(:mod:`~phasebench.probe.shifts`); the model answers each through lm-eval's own model API
(:mod:`~phasebench.probe.run`); the answers become a phase profile with a permutation p-value and
a dominant period, and one line that says what they mean (:mod:`~phasebench.probe.analysis`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from phasebench.lmeval.tasks import MAX_GEN_TOKS
from phasebench.probe.prompt import ProbeError, ProbePrompt, parse_prompt, read_prompt
from phasebench.probe.shifts import (
    DEFAULT_STYLES,
    STYLE_NAMES,
    ShiftPlan,
    check_limits,
    plan_shifts,
)
from phasebench.specs import DEFAULT_MODULUS

__all__ = [
    "DEFAULT_STYLES",
    "STYLE_NAMES",
    "ProbeError",
    "ProbePrompt",
    "ShiftPlan",
    "parse_prompt",
    "plan_for_model",
    "plan_shifts",
    "read_prompt",
    "run_probe",
]


def plan_for_model(
    prompt: ProbePrompt,
    model: str,
    model_args: str,
    *,
    modulus: int = DEFAULT_MODULUS,
    rounds: int = 4,
    styles: Sequence[str] = DEFAULT_STYLES,
    custom: str | None = None,
    choices: Sequence[str] = (),
    chat: bool = False,
    system: str | None = None,
    max_gen_toks: int = MAX_GEN_TOKS,
    progress: Callable[[str], None] | None = None,
) -> tuple[ShiftPlan, Any]:
    """The checked shifts for the tokenizer the backend loads (``tokenizer=``, ``pretrained=``
    or ``model=`` of ``--model_args``, with ``gguf_file``, ``add_bos_token``, ... applied as the
    backend applies them), refused if the longest one plus the answer exceeds the context."""
    from phasebench import lmeval_compat as compat
    from phasebench.lmeval.data import tokenizer_source
    from phasebench.lmeval.harness import model_max_length
    from phasebench.probe.shifts import chat_frame
    from phasebench.tokenization import load_tokenizer

    args = compat.parse_model_args(model_args)
    tok = load_tokenizer(*tokenizer_source(args))
    if model == "local-chat-completions" and not chat:
        raise ProbeError(
            "--model local-chat-completions sends messages that the server templates: add "
            "--apply_chat_template so that positions are counted after the template"
        )
    frame = chat_frame(tok, system) if chat else None
    plan = plan_shifts(tok, prompt, modulus=modulus, rounds=rounds, styles=styles, custom=custom,
                       frame=frame, choices=choices, progress=progress)  # fmt: skip
    budget = 1 if choices else max_gen_toks
    limit = model_max_length(args, model)
    if plan.longest + budget > limit:
        raise ProbeError(
            f"the longest shifted prompt ({plan.longest} tokens) plus {budget} answer tokens "
            f"exceeds the model's context of {limit}; shorten the prompt, lower --rounds, or "
            f"raise max_length in --model_args"
        )
    return plan, tok


def run_probe(
    prompt_file: str | Path,
    model: str,
    model_args: str,
    *,
    expect: str | None = None,
    choices: Sequence[str] = (),
    modulus: int = DEFAULT_MODULUS,
    rounds: int = 4,
    styles: Sequence[str] = DEFAULT_STYLES,
    custom: str | None = None,
    chat: bool = False,
    system: str | None = None,
    device: str | None = None,
    max_gen_toks: int = MAX_GEN_TOKS,
    progress: bool = False,
    on_event: Callable[[str], None] | None = None,
):
    """Plan, ask and analyse one probe (a :class:`~phasebench.probe.analysis.ProbeResult`).
    ``on_event`` hears what each slow step after the planning is doing (loading the model;
    a bad prompt or argument is refused before any of it); ``progress`` shows one bar over
    the shifts."""
    from phasebench.probe.analysis import analyse
    from phasebench.probe.run import ask

    if expect is not None and choices:
        raise ProbeError("give --expect TEXT or --choices A,B, not both")
    if expect is not None and not expect.strip():
        raise ProbeError("--expect needs the expected answer's text (got an empty string)")
    say = on_event or (lambda line: None)
    check_limits(modulus, rounds, custom)  # before the prompt is planned or a model loaded
    prompt = read_prompt(prompt_file)
    plan, tok = plan_for_model(prompt, model, model_args, modulus=modulus, rounds=rounds,
                               styles=styles, custom=custom, choices=choices, chat=chat,
                               system=system, max_gen_toks=max_gen_toks)  # fmt: skip
    answers = ask(plan, tok, model, model_args, device=device, max_gen_toks=max_gen_toks,
                  progress=progress, on_event=say)  # fmt: skip
    provenance = {
        "prompt_file": Path(prompt_file).name,
        "model": model,
        "model_args": model_args,
        "tokenizer": tok.portable_name,
        "tokenizer_fingerprint": tok.fingerprint,
    }
    return analyse(plan, answers, expect=expect, provenance=provenance)
