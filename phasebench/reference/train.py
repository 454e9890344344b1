"""Train the reference models from scratch on CPU with a fixed seed and a fixed step budget.

A step budget (not a time budget) keeps training reproducible: the same variant, steps and seed
give the same weights on the same torch build. ``torch.set_num_threads`` is left to the caller
(the CLI sets 1 thread by default), since thread count can change float summation order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch.nn import functional as F

from phasebench.atomic import (
    atomic_copy,
    atomic_write_text,
    check_replaceable,
    scratch_folder,
    staged_folder,
)
from phasebench.errors import PhasebenchError
from phasebench.reference import VARIANTS, data
from phasebench.reference.model import PhaseRefConfig, PhaseRefModel
from phasebench.reference.tokenizer import MAX_COMPONENTS, component_table, save_tokenizer
from phasebench.reference.tokenizer import vocabulary as build_vocabulary
from phasebench.tokenization import load_tokenizer

#: The training log every reference model folder holds: ``train`` replaces a folder only if it
#: has one (a model it trained before) or is empty, so ``--out DIR`` never deletes ``DIR/full``
#: that something else put there.
MARKER = "training.json"


@dataclass(frozen=True)
class TrainSettings:
    """The shared recipe: every reference variant trains with these settings."""

    steps: int = 6000
    batch_size: int = 8
    length: int = 128
    lr: float = 3e-3
    warmup: int = 100
    seed: int = 0
    d_model: int = 64
    n_layer: int = 2
    n_head: int = 4
    d_ff: int = 128


#: Variants whose committed weights use other settings than the shared recipe, and why. The
#: stride-2 phase profile fades as a model masters the task: on the shared recipe (128-token
#: prompts, 6,000 steps) ``gate-w8s2`` reaches 97% at 512 tokens, flat across phases; trained on
#: 192-token prompts for 1,500 steps it keeps its period 2 (docs/reference.md has both).
SETTINGS_OVERRIDES: dict[str, dict] = {
    "gate-w8s2": {"length": 192, "steps": 1500},
}


def settings_for(variant: str, seed: int | None = None) -> TrainSettings:
    """The settings ``phasebench reference train VARIANT`` uses (those of the committed weights):
    the shared recipe, except for the variants of :data:`SETTINGS_OVERRIDES`; ``seed`` replaces
    the recipe's own (:attr:`TrainSettings.seed`) when given."""
    if variant not in VARIANTS:
        raise PhasebenchError(
            f"unknown reference variant {variant!r}; expected one of {', '.join(VARIANTS)}"
        )
    settings = TrainSettings() if seed is None else TrainSettings(seed=seed)
    return replace(settings, **SETTINGS_OVERRIDES.get(variant, {}))


def make_model(variant: str, settings: TrainSettings) -> PhaseRefModel:
    if variant not in VARIANTS:
        raise PhasebenchError(
            f"unknown reference variant {variant!r}; expected one of {', '.join(VARIANTS)}"
        )
    tokens = build_vocabulary()
    table, n_components = component_table(tokens)
    config = PhaseRefConfig(
        vocab_size=len(tokens),
        n_components=n_components,
        max_components=MAX_COMPONENTS,
        d_model=settings.d_model,
        n_layer=settings.n_layer,
        n_head=settings.n_head,
        d_ff=settings.d_ff,
        **VARIANTS[variant],
    )
    torch.manual_seed(settings.seed)  # parameter init is torch's; seeded, then used once
    model = PhaseRefModel(config)
    model.component_ids.copy_(torch.tensor(table, dtype=torch.int32))
    model.retrieval_start()
    return model


def _answer_loss(model: PhaseRefModel, batch: data.Batch) -> torch.Tensor:
    """Cross-entropy on answer tokens only (logits computed only where they are needed)."""
    h = model.hidden(batch.input_ids)[:, :-1]
    target = batch.labels[:, 1:]
    keep = target != -100
    return F.cross_entropy(model.logits_at(h[keep]), target[keep])


def train(
    variant: str,
    out: Path,
    settings: TrainSettings = TrainSettings(),
    on_loss: Callable[[int, float, float], None] | None = None,
    on_log: Callable[[int, PhaseRefModel], None] | None = None,
) -> dict:
    """Train ``variant`` and save it (weights, config, tokenizer, training log) into ``out``.

    Every 25 steps ``on_loss(step, mean loss, seconds)`` and ``on_log(step, model)`` are called
    when given (the command line prints the first)."""
    out = check_replaceable(out, MARKER)  # before any work: never replace a folder not ours
    with scratch_folder("phasebench-tokenizer-") as tmp:
        tok_dir = Path(tmp)
        save_tokenizer(tok_dir)
        return _train(variant, out, settings, tok_dir, on_loss, on_log)


def _train(
    variant: str,
    out: Path,
    settings: TrainSettings,
    tok_dir: Path,
    on_loss: Callable[[int, float, float], None] | None,
    on_log: Callable[[int, PhaseRefModel], None] | None,
) -> dict:
    tok = load_tokenizer(str(tok_dir))
    model = make_model(variant, settings)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min(1.0, (s + 1) / settings.warmup) * max(0.05, 1 - s / max(1, settings.steps)),
    )
    stream = data.batches(tok, settings.length, settings.batch_size, settings.seed)
    log = []
    start = time.monotonic()
    model.train()
    running = 0.0
    for step in range(settings.steps):
        batch = next(stream)
        loss = _answer_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        running += loss.item()
        if (step + 1) % 25 == 0 or step + 1 == settings.steps:
            entry = {"step": step + 1, "loss": round(running / 25, 4)}
            entry["seconds"] = round(time.monotonic() - start, 1)
            log.append(entry)
            running = 0.0
            if on_loss is not None:
                on_loss(entry["step"], entry["loss"], entry["seconds"])
            if on_log is not None:
                on_log(step + 1, model)
    model.eval()
    save(model, tok_dir, out, {"variant": variant, "settings": asdict(settings), "log": log})
    return {"variant": variant, "out": str(out), "log": log}


def save(model: PhaseRefModel, tok_dir: Path, out: Path, info: dict) -> None:
    """Write the model folder beside ``out`` and swap it in (:func:`phasebench.atomic.
    staged_folder`): a previous ``out`` is replaced only if it is a reference model folder
    (it holds :data:`MARKER`, the training log every one of them has) or empty."""
    with staged_folder(out, marker=MARKER) as staging:
        model.save_pretrained(staging, safe_serialization=True)  # into the staging folder
        for name in ("tokenizer.json", "tokenizer_config.json"):
            atomic_copy(tok_dir / name, staging / name)
        atomic_write_text(staging / MARKER, json.dumps(info, indent=1) + "\n")
