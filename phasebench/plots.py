"""Phase-profile plots and code heat strips, drawn from a report dict (never computing a
statistic). PNG and SVG, byte-identical for the same report: Agg backend, fixed SVG hash salt,
no dates or software versions in the file metadata."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from phasebench import metrics
from phasebench.errors import DependencyError
from phasebench.formatting import TERMINAL, format_note

if TYPE_CHECKING:
    from phasebench.atomic import FileSet

#: Folded views drawn next to the profile (those that divide the modulus).
FOLD_STRIDES = (2, 4, 8)


def plot_report(report: dict[str, Any], folder: Path, files: FileSet | None = None) -> list[Path]:
    """Write ``<run>__<task>__<length>.profile.{png,svg}`` (and ``.margin.*`` for code), each
    file atomically, or all of them together through ``files``
    (:func:`phasebench.atomic.atomic_files`)."""
    matplotlib = _matplotlib()
    written: list[Path] = []
    with matplotlib.rc_context(_RC):
        for run, body in report["runs"].items():
            for task, lengths in body["tasks"].items():
                for length, entry in sorted(lengths.items(), key=lambda kv: int(kv[0])):
                    stem = _slug(f"{run}__{task}__{length}")
                    fig = _profile_figure(run, task, length, entry)
                    written += _save(fig, folder, f"{stem}.profile", files)
                    if "margin_sweeps" in entry:
                        fig = _margin_figure(run, task, length, entry)
                        written += _save(fig, folder, f"{stem}.margin", files)
    return written


_RC = {
    "svg.hashsalt": "phasebench",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _matplotlib():
    """matplotlib on its file-only backend, or a one-line error naming the extra that installs
    it (the ``plots`` extra is optional; without it, plots are the one thing that cannot run)."""
    try:
        import matplotlib
    except ImportError:
        raise DependencyError(
            "drawing plots needs matplotlib, which is not installed; pip install "
            "'phasebench[plots]' (or leave out the option that asks for plots)"
        ) from None
    matplotlib.use("Agg", force=True)
    return matplotlib


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:150]


def _save(fig, folder: Path, stem: str, files: FileSet | None = None) -> list[Path]:
    import matplotlib.pyplot as plt

    from phasebench.atomic import atomic_write_bytes

    out = []
    for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=ext, dpi=120, metadata=meta)
        write = files.add_bytes if files is not None else atomic_write_bytes
        out.append(write(folder / f"{stem}.{ext}", buffer.getvalue()))
    plt.close(fig)
    return out


def _profile_figure(run: str, task: str, length: str, e: dict[str, Any]):
    import matplotlib.pyplot as plt
    import numpy as np

    modulus = int(e["modulus"])
    strides = [s for s in FOLD_STRIDES if modulus % s == 0]
    fig, axes = plt.subplots(
        1,
        1 + len(strides),
        figsize=(3.6 + 1.9 * len(strides), 2.8),
        gridspec_kw={"width_ratios": [2.2] + [1] * len(strides)},
        squeeze=False,
    )
    axes = axes[0]
    rows = e["per_phase"]
    phase = np.array([r["phase"] for r in rows])
    acc = np.array([np.nan if r["acc"] is None else 100 * r["acc"] for r in rows])
    lo = np.array([100 * r["ci"][0] if r["ci"][0] is not None else np.nan for r in rows])
    hi = np.array([100 * r["ci"][1] if r["ci"][1] is not None else np.nan for r in rows])
    ax = axes[0]
    ax.fill_between(phase, lo, hi, color="#9ecae1", alpha=0.6, lw=0, label="95% interval")
    ax.plot(phase, acc, "o-", color="#08519c", lw=1.5, ms=4, label="accuracy")
    ax.axhline(100 * e["acc"], color="#636363", ls="--", lw=1, label="average")
    if e["lowest_phase_index"] is not None:
        ax.plot(e["lowest_phase_index"], 100 * e["lowest_phase"], "v", color="#cb181d", ms=7)
    ax.set_xticks(phase)
    ax.set_xlabel(f"phase (anchor position mod {modulus})")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    p = format_note(metrics.get("p_value"), e.get("p_value"), style=TERMINAL)  # as tables
    period = e["dominant_period"] or "none"
    lowest = f"{100 * e['lowest_phase']:.1f} (phase {e['lowest_phase_index']})"
    ax.set_title("per-phase accuracy", fontsize=9, loc="left")
    ax.legend(fontsize=7, frameon=False, loc="lower left")
    for ax, stride in zip(axes[1:], strides, strict=True):
        folded = e["folded"].get(str(stride), [])
        values = [np.nan if v is None else 100 * v for v in folded]
        ax.bar(range(stride), values, color="#6baed6", width=0.7)
        ax.set_xticks(range(stride))
        ax.set_ylim(0, 100)
        ax.set_title(f"mod {stride}", fontsize=9)
        ax.set_xlabel("residue")
    fig.suptitle(
        f"{run}  |  {task} @ {length}: average {100 * e['acc']:.1f}, lowest {lowest}, "
        f"gap {100 * e['gap']:.1f} pts ({p}), period {period}",
        fontsize=9,
        x=0.01,
        ha="left",
    )
    fig.tight_layout()
    return fig


def _margin_figure(run: str, task: str, length: str, e: dict[str, Any]):
    import matplotlib.pyplot as plt
    import numpy as np

    code = e["margin_sweeps"]
    grid = np.array(
        [[np.nan if v is None else v for v in row] for row in code["margins"]], dtype=float
    )
    bound = float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0
    bound = bound or 1.0
    # patterns are "<length>/<item>/<style>", sorted; regroup the rows by padding style
    styles = [label.rsplit("/", 1)[-1] for label in code["patterns"]]
    order = sorted(range(len(styles)), key=lambda i: (styles[i], i))
    grid, styles = grid[order], [styles[i] for i in order]
    starts = [i for i, style in enumerate(styles) if i == 0 or styles[i - 1] != style]
    height = min(9.0, 1.6 + 0.06 * len(styles) + 0.2 * len(starts))
    steps = grid.shape[1]
    fig, ax = plt.subplots(figsize=(max(4.5, 0.32 * steps + 2.5), height))
    image = ax.imshow(
        grid, aspect="auto", cmap="RdBu", vmin=-bound, vmax=bound, interpolation="nearest"
    )
    for start in starts[1:]:
        ax.axhline(start - 0.5, color="black", lw=0.8)
    ends = [*starts[1:], len(styles)]
    ax.set_yticks(
        [(a + b - 1) / 2 for a, b in zip(starts, ends, strict=True)], [styles[a] for a in starts]
    )
    ax.set_xticks(range(steps), [str(p) for p in range(steps)], fontsize=7)
    ax.set_xlabel("padding tokens added (sweep step)")
    ax.set_ylabel("padding style (one row per item)")
    rates = ", ".join(
        f"S={s}: {'n/a' if v is None else f'{100 * v:.0f}%'}"
        for s, v in code["phase_lock_rate"].items()
    )
    ax.set_title(f"{task} @ {length}: margin; phase-lock {rates}", fontsize=9, loc="left")
    fig.colorbar(image, ax=ax, label="log p(right) - log p(distractor)")
    fig.suptitle(run, fontsize=8, x=0.01, ha="left", color="#636363")
    fig.tight_layout()
    return fig


def plot_stacked_profiles(
    panels: list[tuple[str, dict[str, Any]]], folder: Path, stem: str, strides: list[int]
) -> list[Path]:
    """One figure of per-phase profiles stacked one panel per report entry (``(label, entry)``),
    sharing the phase axis; dotted lines mark the multiples of each panel's stride. Written as
    ``<stem>.png`` and ``<stem>.svg`` (the stride sweep's figure)."""
    matplotlib = _matplotlib()
    import matplotlib.pyplot as plt
    import numpy as np

    with matplotlib.rc_context(_RC):
        fig, axes = plt.subplots(
            len(panels), 1, figsize=(7.2, 1.45 * len(panels) + 0.6), sharex=True, squeeze=False
        )
        for ax, (label, e), stride in zip(axes[:, 0], panels, strides, strict=True):
            rows = e["per_phase"]
            phase = np.array([r["phase"] for r in rows])
            acc = np.array([np.nan if r["acc"] is None else 100 * r["acc"] for r in rows])
            lo = np.array([np.nan if r["ci"][0] is None else 100 * r["ci"][0] for r in rows])
            hi = np.array([np.nan if r["ci"][1] is None else 100 * r["ci"][1] for r in rows])
            if stride > 1:
                for x in range(0, int(e["modulus"]), stride):
                    ax.axvline(x, color="#bdbdbd", ls=":", lw=0.8)
            ax.fill_between(phase, lo, hi, color="#9ecae1", alpha=0.6, lw=0)
            ax.plot(phase, acc, "o-", color="#08519c", lw=1.2, ms=3)
            ax.axhline(100 * e["acc"], color="#636363", ls="--", lw=0.8)
            ax.set_ylim(0, 100)
            ax.set_ylabel("acc (%)")
            p = format_note(metrics.get("p_value"), e.get("p_value"), style=TERMINAL)
            ax.set_title(
                f"{label}: average {100 * e['acc']:.1f}, gap {100 * e['gap']:.1f} pts "
                f"({p}), period {e['dominant_period'] or 'none'}",
                fontsize=8,
                loc="left",
            )
        last = axes[-1, 0]
        last.set_xticks(phase)
        last.set_xlabel(f"phase (anchor position mod {panels[-1][1]['modulus']})")
        fig.tight_layout()
        return _save(fig, Path(folder), stem)
