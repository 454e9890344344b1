"""``--out DIR``: the probe as ``probe.json`` and ``probe.png``, each written atomically (a
failure leaves no half-written file), drawn from the result dict (no statistic computed here).
The PNG carries no date or software version, so the same result gives the same bytes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from phasebench import metrics
from phasebench.atomic import (
    atomic_write_bytes,
    atomic_write_text,
    check_writable_dir,
    make_folder,
)
from phasebench.formatting import TERMINAL, format_note
from phasebench.probe.analysis import ProbeResult

JSON_NAME = "probe.json"
PNG_NAME = "probe.png"


def check_out(folder: str | Path) -> Path:
    """Refuse an output folder that cannot be written, before the model runs."""
    return check_writable_dir(folder, "--out")


def can_draw() -> bool:
    """Whether matplotlib (the ``plots`` extra) is installed: the kvpress environment, for one,
    has no reason to carry it."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def write_outputs(result: ProbeResult, folder: str | Path) -> list[Path]:
    """``probe.json``, and ``probe.png`` where matplotlib is installed (:func:`can_draw`; the
    figure can be drawn later from the JSON with :func:`figure_png`)."""
    folder = make_folder(Path(folder))
    text = json.dumps(result.to_dict(), indent=2, sort_keys=True, allow_nan=False) + "\n"
    written = [atomic_write_text(folder / JSON_NAME, text)]
    if can_draw():
        written.append(atomic_write_bytes(folder / PNG_NAME, figure_png(result.to_dict())))
    return written


def figure_png(data: dict[str, Any]) -> bytes:
    """Value against shift, one line per padding style, each point coloured by its phase; and
    the per-phase means with the permutation p-value and dominant period in the title."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    probe = data["probe"]
    P = probe["modulus"]
    with matplotlib.rc_context({"font.family": "DejaVu Sans", "font.size": 9}):
        fig, (left, right) = plt.subplots(
            1, 2, figsize=(9.5, 3.2), gridspec_kw={"width_ratios": [2.4, 1]}
        )
        cmap = plt.get_cmap("viridis", P)
        for style in probe["styles"]:
            pts = [e for e in data["shifts"] if e["style"] == style]
            xs = [e["shift"] for e in pts]
            ys = [e["value"] for e in pts]
            left.plot(xs, ys, lw=0.8, alpha=0.6, label=style)
            left.scatter(xs, ys, c=[e["phase"] for e in pts], cmap=cmap, vmin=-0.5,
                         vmax=P - 0.5, s=14, zorder=3)  # fmt: skip
        if probe["measure"] == "margin":
            left.axhline(0.0, color="0.4", lw=0.6)
        left.set_xlabel("shift (tokens added at {{shift}})")
        left.set_ylabel(probe["measure"])
        left.legend(fontsize=7, frameon=False, loc="best")
        s = data["summary"]
        if s is not None:
            means = [e["acc"] for e in s["per_phase"]]
            right.bar(range(P), means, color=[cmap(p) for p in range(P)])
            period = s["dominant_period"] or "none"
            p = format_note(metrics.get("p_value"), s["p_value"], style=TERMINAL)
            right.set_title(f"{p}, period {period}", fontsize=9)
        right.set_xlabel(f"phase (key position mod {P})")
        right.set_ylabel(f"mean {probe['measure']}")
        right.set_xticks(range(P))
        fig.suptitle(data["verdict"], fontsize=9)
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
        plt.close(fig)
    return buffer.getvalue()
