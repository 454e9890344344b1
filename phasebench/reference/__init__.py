"""Small reference models with and without chunked KV compression (optional extra
``reference``: torch). They prove the benchmark detects phase sensitivity where it exists and
stays silent where it does not; see docs/reference.md."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEMO_N_BASE", "EVAL_LENGTH", "VARIANTS", "weights_dir"]

#: Variant name -> attention settings. Names say what the model does to distant context. Kept
#: here, away from torch, so the command line can list them at once.
VARIANTS: dict[str, dict] = {
    "full": {"attention": "full"},
    "gate-w8s4": {"attention": "gate", "window": 8, "stride": 4},
    "mean-w8s4": {"attention": "mean", "window": 8, "stride": 4},
    "gate-w8s2": {"attention": "gate", "window": 8, "stride": 2},
    "mean-w8s2": {"attention": "mean", "window": 8, "stride": 2},
}

#: Context length (tokens) of the ``kv`` split the reference models are checked on (``phasebench
#: demo``, ``phasebench reference evaluate``): about 120 records per prompt, enough distractors
#: that the compressed models sit well below 100%. The models train on 128-token prompts; the
#: compressed entries carry no rotary phase and keep working at 512, while the full-attention
#: control (RoPE) does not carry retrieval much past its training length (measured: 78% at 192
#: tokens, 43% at 256, 11% at 512; flat across phases at every length). docs/reference.md.
EVAL_LENGTH = 512
#: Base items (each at all 8 phases) of that split: 1,024 prompts per model, enough power for the
#: checks of tests/test_reference.py (a gap of about 8 points at p < 0.01).
DEMO_N_BASE = 128


def weights_dir() -> Path:
    """Folder of the committed weights, one sub-folder per variant (``full``, ``gate-w8s4``...)."""
    from phasebench.resources import reference_weights_dir

    return reference_weights_dir()
