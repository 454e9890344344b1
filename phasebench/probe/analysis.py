"""What the answers say: per shift the outcome, per phase its mean, the permutation p-value and
the dominant period from :func:`phasebench.stats.summarize`, and one line that says what it means.

The phase matrix has one row per (padding style, round) and one column per phase: a round is
``modulus`` consecutive shifts, so it visits every phase once, and the permutation test shuffles
phase labels within a row (a style's content and the padding's length are shared by a row). The
value is the margin log p(right) - log p(other) with ``--choices`` (the study's measure), whether
the answer starts with ``--expect`` (answer-prefix match, as the kv and niah tasks score), or,
with neither, whether the answer is the most common answer of the run.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phasebench.formatting import TERMINAL, format_interval, format_value
from phasebench.metrics import N_BOOT, N_PERM, SEED
from phasebench.probe.run import Answer
from phasebench.probe.shifts import ShiftPlan


@dataclass(frozen=True)
class ProbeResult:
    """The whole probe as JSON-ready data (``to_dict``) plus the verdict line."""

    data: dict[str, Any]

    @property
    def verdict(self) -> str:
        return str(self.data["verdict"])

    def to_dict(self) -> dict[str, Any]:
        return self.data


def answer_matches(response: str, expect: str) -> bool:
    """Answer-prefix match, as the phasebench kv and niah tasks score."""
    from phasebench.lmeval.tasks import answer_matches as matches

    return matches(response, expect)


def outcomes(answers: Sequence[Answer], expect: str | None) -> tuple[list[float], str, bool]:
    """Per answer the value the statistics use, its name, and whether it is binary."""
    if answers and answers[0].margin is not None:
        return [float(a.margin) for a in answers], "margin", False  # type: ignore[arg-type]
    texts = [(a.response or "").strip() for a in answers]
    if expect is not None:
        return [float(answer_matches(t, expect)) for t in texts], "correct", True
    modal = Counter(texts).most_common(1)[0][0] if texts else ""
    return [float(t == modal) for t in texts], "modal answer", True


def analyse(
    plan: ShiftPlan,
    answers: Sequence[Answer],
    *,
    expect: str | None,
    provenance: dict[str, Any],
) -> ProbeResult:
    """Statistics and verdict of one probe (see the module docstring)."""
    from phasebench.stats import summarize

    values, measure, binary = outcomes(answers, expect)
    P, R = plan.modulus, plan.rounds
    kept = [a.witnessed is not False for a in answers]  # a server that counted another prompt
    excluded = kept.count(False)
    tested, slopes = _detrend(answers, values, kept) if R >= 2 else (list(values), {})
    rows = {style: i for i, style in enumerate(plan.styles)}
    matrix = np.full((len(plan.styles) * R, P), np.nan)
    raw = np.full_like(matrix, np.nan)
    for a, v, t, keep in zip(answers, values, tested, kept, strict=True):
        if keep:
            r = a.rendering
            matrix[rows[r.style] * R + r.round, r.phase] = t
            raw[rows[r.style] * R + r.round, r.phase] = v
    if np.isnan(matrix).all(axis=0).any():
        summary = None
    else:
        binary_test = binary and not slopes
        summary = summarize(matrix, binary=binary_test, n_boot=N_BOOT, n_perm=N_PERM, seed=SEED)
    shifts = []
    for a, v in zip(answers, values, strict=True):
        entry = a.rendering.to_dict() | {"value": v}
        if a.response is not None:
            entry["response"] = a.response
        if a.logprobs:
            entry["logprobs"] = list(a.logprobs)
            entry["correct"] = bool(a.margin is not None and a.margin > 0)
        if a.expected_tokens is not None:
            entry["server_prompt_tokens"] = a.server_tokens
            entry["witnessed"] = a.witnessed
        shifts.append(entry)
    witness = _witness(answers)
    right = _rightness(answers, values, measure, expect)
    controls = (
        _control_folds(answers, _phase_residuals(answers, tested, kept, P), kept, P)
        if summary is not None
        else {}
    )
    with np.errstate(all="ignore"):
        raw_means = [float(x) for x in np.nanmean(raw, axis=0)]
    data = {
        "probe": provenance
        | {
            "prompt_sha256": hashlib.sha256(plan.prompt.plain.encode()).hexdigest(),
            "modulus": P,
            "rounds": R,
            "shifts_per_style": plan.n_shifts,
            "design": "paired" if plan.prompt.paired else "unpaired",
            "styles": list(plan.styles),
            "styles_refused": dict(plan.refused),
            "chat_template": plan.frame.chat,
            "choices": list(plan.choices),
            "expect": expect,
            "measure": measure,
            "reference_tokens": len(plan.ref.ids),
            "shift_marker_token": plan.ref.tokens["{{shift}}"],
        },
        "shifts": shifts,
        "summary": summary.to_dict() if summary is not None else None,
        "per_phase_raw": raw_means,
        "drift": {"removed": bool(slopes), "slope_per_token": slopes},
        "controls": controls,
        "witness": witness | {"excluded_from_statistics": excluded},
        "right": right,
    }
    data["verdict"] = verdict(data)
    return ProbeResult(data)


def _detrend(
    answers: Sequence[Answer], values: Sequence[float], kept: Sequence[bool]
) -> tuple[list[float], dict[str, float]]:
    """Each value minus its style's drift with the shift, and the drift's slopes.

    A longer padding also moves the key passage away from the start and the question (and,
    unpaired, lengthens the prompt): a smooth drift with the shift. Within a round, the phase
    rises with the shift, so a drift alone would read as a phase profile. The slope is fitted
    *within* each phase (the same phase one round later is ``modulus`` tokens further), pooled
    over the phases, so a pure phase profile has slope 0 and is left as it is, and only a rhythm
    that repeats every round survives. Needs two rounds or more."""
    out = list(values)
    slopes: dict[str, float] = {}
    groups: dict[str, dict[int, list[int]]] = {}
    for i, a in enumerate(answers):
        if kept[i]:
            r = a.rendering
            groups.setdefault(r.style, {}).setdefault(r.phase, []).append(i)
    for style, by_phase in groups.items():
        num = den = 0.0
        for idx in by_phase.values():
            k = np.array([answers[i].rendering.shift for i in idx], dtype=float)
            v = np.array([values[i] for i in idx], dtype=float)
            num += float(np.sum((k - k.mean()) * (v - v.mean())))
            den += float(np.sum((k - k.mean()) ** 2))
        if den <= 0:
            continue
        slope = num / den
        slopes[style] = slope
        for idx in by_phase.values():
            for i in idx:
                out[i] = float(values[i] - slope * answers[i].rendering.shift)
    return out, slopes


def _control_moduli(modulus: int, n_shifts: int) -> list[int]:
    """Fold periods that share no factor with the modulus (so no stride dividing it folds onto
    them) and fit at least twice into the shifts: 5, 7, 9, 11, 13, 15 for modulus 8 and 32."""
    return [
        q
        for q in range(max(3, modulus // 2 + 1), 2 * modulus)
        if math.gcd(q, modulus) == 1 and n_shifts // q >= 2
    ]


def _phase_residuals(
    answers: Sequence[Answer], tested: Sequence[float], kept: Sequence[bool], modulus: int
) -> list[float]:
    """``tested`` less its mean at each phase (over the kept shifts): what the phase does not
    explain. The control folds are taken of this, so a phase effect itself cannot leak into
    them: folded at q = P + 1 a period-P pattern moves one column per row and, over the two or
    three rows a probe has, stays nearly aligned (measured: a pure period-8 effect, 3 rounds x 4
    styles, was vetoed by the fold at 9 in 20 of 20 simulations)."""
    sums = np.zeros(modulus)
    counts = np.zeros(modulus)
    for a, t, keep in zip(answers, tested, kept, strict=True):
        if keep:
            sums[a.rendering.phase] += t
            counts[a.rendering.phase] += 1
    means = np.divide(sums, counts, out=np.zeros(modulus), where=counts > 0)
    return [float(t - means[a.rendering.phase]) for a, t in zip(answers, tested, strict=True)]


def _control_folds(
    answers: Sequence[Answer], tested: Sequence[float], kept: Sequence[bool], modulus: int
) -> dict[str, float]:
    """The permutation p-value (:func:`phasebench.stats.summarize`) of the values (the phase
    residuals, :func:`_phase_residuals`) folded at each control period (:func:`_control_moduli`):
    rows are runs of q consecutive shifts.

    A rhythm of phase mod P averages out when folded at a period coprime with P; a margin that
    wanders with the padding's length (the neighbouring shifts alike) does not, so it shows up
    at the control periods too. Only a result that the controls do not share is called a phase
    effect."""
    from phasebench.stats import summarize

    by_style: dict[str, list[int]] = {}
    for i, a in enumerate(answers):
        by_style.setdefault(a.rendering.style, []).append(i)
    n = min(len(v) for v in by_style.values())
    out = {}
    for q in _control_moduli(modulus, n):
        rows = []
        for idx in by_style.values():
            for start in range(0, len(idx) - q + 1, q):
                row = np.full(q, np.nan)
                for i in idx[start : start + q]:
                    if kept[i]:
                        row[answers[i].rendering.anchor % q] = tested[i]
                rows.append(row)
        matrix = np.array(rows)
        if np.isnan(matrix).all(axis=0).any():
            continue
        s = summarize(matrix, binary=False, n_boot=0, n_perm=N_PERM, seed=SEED)
        out[str(q)] = float(s.p_value)
    return out


def _witness(answers: Sequence[Answer]) -> dict[str, Any]:
    checked = [a for a in answers if a.expected_tokens is not None]
    if not checked:
        kind = "backend tok_encode" if all(a.backend_checked for a in answers) else "none"
        return {"kind": kind, "agreed": None, "disagreed": None, "missing": None}
    agreed = sum(a.witnessed is True for a in checked)
    disagreed = sum(a.witnessed is False for a in checked)
    return {
        "kind": "usage.prompt_tokens",
        "agreed": agreed,
        "disagreed": disagreed,
        "missing": len(checked) - agreed - disagreed,
    }


def _rightness(
    answers: Sequence[Answer], values: Sequence[float], measure: str, expect: str | None
) -> dict[str, Any]:
    """How often the answer was right, and how many distinct answers there were."""
    n = len(values)
    if measure == "margin":
        k = sum(v > 0 for v in values)
    elif expect is not None:
        k = int(sum(values))
    else:
        k = None
    distinct = len({(a.response or "").strip() for a in answers}) if measure != "margin" else None
    return {"shifts": n, "right": k, "distinct_answers": distinct}


def verdict(data: dict[str, Any]) -> str:
    """The one line at the end: what the probe says."""
    s, right, probe = data["summary"], data["right"], data["probe"]
    witness = data["witness"]
    notes = []
    if witness["kind"] == "usage.prompt_tokens":
        if witness["disagreed"]:
            notes.append(
                f"{witness['disagreed']} shifts left out: the server counted another prompt "
                f"length than phasebench checked"
            )
        if witness["missing"]:
            notes.append(f"{witness['missing']} shifts unverified: the server reported no count")
    tail = f" ({'; '.join(notes)})" if notes else ""
    what = "margin" if probe["measure"] == "margin" else "answer"
    if s is None:
        return f"not enough shifts to test for a phase effect{tail}"
    p = s["p_value"]
    alpha = s["alpha"]
    controls = data.get("controls", {})
    # Bonferroni over the control folds: each is a null once the phase means are taken out, and
    # with six of them one under 0.05 by chance is likely (about 1 in 4)
    limit = alpha / max(1, len(controls))
    shared = {q: cp for q, cp in controls.items() if cp <= limit}
    if s["significant"] and s["dominant_period"] and not shared:
        return f"{what} depends on phase mod {s['dominant_period']}, p = {p:.3g}{tail}"
    if s["significant"] and shared:
        folds = ", ".join(f"mod {q}: p = {cp:.3g}" for q, cp in shared.items())
        return (
            f"no phase effect: the {what} changes with the shift (p = {p:.3g} at mod "
            f"{probe['modulus']}), but as much folded at periods no stride explains ({folds}): "
            f"it wanders with the padding's length, not with the phase{tail}"
        )
    line = f"no phase dependence detected at this sample size (p = {p:.3g})"
    n, k = right["shifts"], right["right"]
    if k is not None and k == 0:
        line += "; wrong at every shift: not a phase effect"
    elif k is not None and k == n:
        line += "; right at every shift"
    elif right["distinct_answers"] == 1:
        line += "; the same answer at every shift"
    return line + tail


# -- terminal view -------------------------------------------------------------------------------


def terminal_plot(result: ProbeResult, width: int = 24, bars: bool = False) -> str:
    """The per-phase means and the test, then with ``bars`` the value at each shift, per style,
    as a bar (margin) or a mark (right / wrong), with the phase of each shift (one line per
    shift: 128 for the default design, after the summary). Plain ASCII, for a terminal."""
    data = result.data
    lines = _phase_lines(data)
    if bars:
        lines += ["", *_shift_lines(data, width)]
    return "\n".join(lines) + "\n"


def _shift_lines(data: dict, width: int) -> list[str]:
    probe = data["probe"]
    binary = probe["measure"] != "margin"
    lines = []
    shifts = data["shifts"]
    scale = max((abs(e["value"]) for e in shifts), default=1.0) or 1.0
    for style in probe["styles"]:
        lines.append(f"{style}  (shift: phase, {probe['measure']})")
        for e in (e for e in shifts if e["style"] == style):
            if binary:
                mark = "#" if e["value"] else "."
                text = e.get("response", "")
                lines.append(f"  {e['shift']:3d}: {e['phase']:2d}  {mark}  {text!r}"[:100])
                continue
            v = e["value"]
            n = int(round(abs(v) / scale * width))
            bar = (" " * (width - n) + "=" * n + "|") if v < 0 else (" " * width + "|" + "=" * n)
            lines.append(f"  {e['shift']:3d}: {e['phase']:2d}  {v:+7.3f} {bar}")
    return lines


def _phase_lines(data: dict) -> list[str]:
    probe = data["probe"]
    P = probe["modulus"]
    lines = []
    s = data["summary"]
    if s is not None:
        lines.append(f"per phase (mod {P}), mean {probe['measure']}:")
        head = " ".join(f"{p:>6d}" for p in range(P))
        lines.append(f"  phase    {head}")
        lines.append("  mean     " + " ".join(f"{v:+6.2f}" for v in data["per_phase_raw"]))
        if data["drift"]["removed"]:
            tested = " ".join(f"{e['acc']:+6.2f}" for e in s["per_phase"])
            lines.append(f"  -drift   {tested}")
        period = s["dominant_period"] or "none"
        gap = format_value("measure", s["gap"], style=TERMINAL)
        interval = format_interval("measure", s["gap_ci"], style=TERMINAL)
        lines.append(
            f"  gap {gap} {interval}, permutation p = {s['p_value']:.3g}, dominant period {period}"
        )
        if data.get("controls"):
            folds = ", ".join(f"mod {q}: {cp:.3g}" for q, cp in data["controls"].items())
            lines.append(f"  control folds (periods no stride explains), p: {folds}")
    return lines
