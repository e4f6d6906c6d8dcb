"""Compact GitHub-flavoured Markdown summaries (`--markdown PATH|-` on `compare`, `check` and
`score`), for a pull-request comment or `$GITHUB_STEP_SUMMARY`: the verdict, the interval with its
confidence level and method, the decision at a margin, the tasks that moved and every task's
numbers, the seed and the numbers of samples, and the samples that flipped.

They are built from the JSON reports (the dicts `--json` writes), so one renderer serves every
scheme, and they are link-free: no URL, no image, and no HTML but the <details> and <summary>
tags that fold the flips (and a long task table) away. Every piece of text that comes from the
data — run, task and case names, reasons and notes that quote them — goes through `escape`, which
makes it inert as Markdown and against GitHub's own rewriting of text (mentions, issue
references, emoji)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from calipers.render import cost as cost_text
from calipers.render import cost_leaderboard
from calipers.render.changes import FLIPS_SHOWN, flips_markdown, tasks_markdown
from calipers.render.json_report import clean, write_report_text
from calipers.render.markdown_text import bounds as _bounds
from calipers.render.markdown_text import escape
from calipers.render.markdown_text import level as _level
from calipers.render.markdown_text import num as _num
from calipers.render.markdown_text import signed as _signed
from calipers.render.markdown_text import table as _table

MAX_MOVED = 10  # tasks (or cases) listed before "and N more"


def _capped(items: list[str], what: str = "") -> list[str]:
    """At most MAX_MOVED bullet lines, then one saying how many more there are."""
    lines = [f"- {item}" for item in items[:MAX_MOVED]]
    if len(items) > MAX_MOVED:
        lines.append(f"- and {len(items) - MAX_MOVED} more{what}")
    return lines


def _notes(report: Mapping[str, Any]) -> list[str]:
    return [f"> note: {escape(n)}" for n in report.get("notes") or []]


def _finish(lines: list[str]) -> str:
    text = "\n".join(lines).rstrip("\n")
    return re.sub(r"\n{3,}", "\n\n", text) + "\n"


# ------------------------------------------------------------------------------- compare


def compare_markdown(
    report: Mapping[str, Any],
    *,
    gate: str | None = None,
    gate_failure: str | None = None,
    flips: int = FLIPS_SHOWN,
) -> str:
    """A comparison report (`kind` compare: layered, metric and plugins built on them; or
    objective-compare) as Markdown; `gate` and `gate_failure` say how the run's gate went;
    `flips`: the largest regressions and improvements listed per pair (`--flips N`)."""
    report = clean(report)
    if report.get("kind") == "objective-compare":
        lines = _objective_compare(report)
    elif report.get("pairs") is not None:
        lines = _paired_compare(report)
    else:  # a plugin's comparison of another shape: what every comparison has
        lines = [
            f"### calipers compare · {escape(report.get('scheme', '?'))}: "
            f"**{escape(report.get('verdict', '?'))}**",
            "",
            escape(report.get("reason", "")),
        ]
    if gate is not None and gate != "none":
        lines[1:1] = ["", _gate_line(gate, gate_failure)]
    cost = cost_markdown(report)
    return _finish([*lines, "", *cost, *flips_markdown(report, top=flips), *_notes(report)])


def cost_markdown(report: Mapping[str, Any]) -> list[str]:
    """The cost section (`calipers.render.cost`): per run and pair, as a list, and the table of
    P(net benefit > 0) over the value per solved item; nothing when the report has none."""
    cost = report.get("cost")
    if not cost:
        return []
    per = escape(cost.get("outcome", "solved item"))
    lines = [f"**Cost** per {per} (the system's cost_usd; graders' cost apart):", ""]
    lines += [
        ("  " if line.startswith("  ") else "") + f"- {escape(line.strip())}"
        for line in cost_text.run_lines(cost) + cost_text.pair_lines(cost)
    ]
    for p in cost.get("pairs") or []:
        rows = cost_text.curve_rows(p)
        if rows:
            lines += [
                "",
                f"P(net benefit > 0) for {escape(p.get('treatment'))} by value per {per}:",
                "",
                *_table(["value", "P(net > 0)"],
                        [[cost_text.money(v), f"{prob:.3f}"] for v, prob in rows]),
            ]  # fmt: skip
    if any(p.get("curve") for p in cost.get("pairs") or []):
        lines += ["", f"_{escape(cost_text.curve_meaning(cost))}._"]
    lines += [f"> note: {escape(n)}" for n in cost.get("notes") or []]
    return [*lines, ""]


def _gate_line(gate: str, failure: str | None) -> str:
    if failure is None:
        return f"✅ Passes the gate {escape(gate)}."
    return f"❌ Fails the gate {escape(gate)} (exit 3): {escape(failure)}."


def _quantity(report: Mapping[str, Any]) -> str:
    """What the comparison differences are differences of: the metric's name, or the composite."""
    metric = (report.get("parameters") or {}).get("metric")
    return f"{escape(metric)}" if report.get("scheme") == "metric" and metric else "composite"


def _interval_method(pairs: list[Mapping[str, Any]], report: Mapping[str, Any]) -> str:
    formulas = sorted(
        {
            str(((p.get("composite") or {}).get("interval") or {}).get("formula"))
            for p in pairs
            if ((p.get("composite") or {}).get("interval") or {}).get("formula")
        }
    )
    method = "/".join(escape(f) for f in formulas) or "none"
    if any(f in ("percentile", "bca") for f in formulas):
        method += f", {report.get('n_resamples')} resamples"
    return method


def _paired_compare(report: Mapping[str, Any]) -> list[str]:
    params = report.get("parameters") or {}
    pairs: list[Mapping[str, Any]] = list(report.get("pairs") or [])
    quantity = _quantity(report)
    level = _level(params.get("pair_confidence_level", params.get("confidence_level")))
    margin_given = params.get("margin_given")
    lines = [
        f"### calipers compare · {escape(report.get('scheme', '?'))}: "
        f"**{escape(report.get('verdict', '?'))}**",
        "",
        escape(report.get("reason", "")),
        "",
    ]
    header = ["treatment", "verdict", f"{quantity} difference", f"{level} interval", "paired"]
    if margin_given is not None:
        header.append(f"margin {escape(margin_given)}")
    rows = []
    for p in pairs:
        c = p.get("composite") or {}
        interval = _bounds(c.get("low"), c.get("high"))
        if c.get("refusal"):
            interval = f"no interval: {escape(c['refusal'])}"
        row = [
            escape(p.get("treatment", "?")),
            f"**{escape(p.get('verdict', '?'))}**",
            _signed(c.get("estimate")),
            interval,
            str(p.get("n_pairs", "—")),
        ]
        if margin_given is not None:
            row.append(escape((p.get("margin") or {}).get("decision") or "—"))
        rows.append(row)
    control = report.get("control")
    lines += [f"Against the control {escape(control or '?')}:", ""]
    lines += _table(header, rows) if rows else ["No treatment to compare with the control."]
    for p in pairs:
        m = p.get("margin")
        if m:
            lines += [
                "",
                f"Margin {escape(m.get('given'))} ({_num(m.get('margin'), 3)} on the "
                f"{quantity}'s scale): {escape(p.get('treatment'))} is "
                f"**{escape(m.get('decision'))}** — {escape(m.get('reason', ''))}.",
            ]
        missing = _missing_outcomes(p, quantity)
        if missing:
            lines += ["", missing]
    lines += ["", *_tasks_moved(pairs, quantity, level)]
    variants = report.get("variants") or {}
    counts = " · ".join(
        f"{escape(name)}{' (control)' if name == control else ''} {v.get('n_samples', '—')} samples"
        for name, v in variants.items()
    )
    lines += [
        "",
        f"Samples: {counts}." if counts else "",
        f"Interval {_interval_method(pairs, report)} at {level} · paired by "
        f"{escape(_clustering(params))} · seed {report.get('seed')}.",
    ]
    if params.get("scale_source"):
        lines.append(f"Scale: {escape(str(params['scale_source']))}.")
    for p in pairs:
        made: Mapping[str, Any] = (p.get("composite") or {}).get("interval") or {}
        if made.get("method") in ("betting", "studentized") and made.get("reason"):
            lines.append(
                f"{escape(p.get('treatment'))}: {escape(str(made.get('formula')))} interval, "
                f"{escape(str(made.get('reason')))}."
            )
    return lines


def _missing_outcomes(pair: Mapping[str, Any], quantity: str) -> str | None:
    """One line when some outcome is missing: what each run lacks and why (system errors,
    grader failures), and the worst/best-case bounds of the difference; None otherwise."""
    b = pair.get("missing_bounds") or {}
    arms = []
    for name in ("treatment", "control"):
        a = b.get(name) or {}
        if a.get("units"):
            arms.append(
                f"{name} lacks {a['units']} sample(s) ({a.get('observations')} observations: "
                f"{a.get('system_errors')} system errors, {a.get('grader_failures')} grader "
                "failures)"
            )
        if a.get("scored_worst"):
            arms.append(f"{a['scored_worst']} {name} system errors scored at the scale's low bound")
    if not arms:
        return None
    if b.get("unbounded"):
        where = "the scale has no declared bounds, so the difference is unbounded"
    elif b.get("low") is not None:
        where = f"at worst/best the {quantity} difference is in {_bounds(b['low'], b['high'])}"
    else:
        where = ""
    text = f"Missing outcomes for {escape(pair.get('treatment', '?'))}: " + "; ".join(arms)
    text += f" — {where}" if where else ""
    if b.get("triggered"):
        why = escape(b.get("trigger") or "")
        text += f"; a PROGRESS or REGRESS must hold across these bounds ({why})"
    return text + "."


def _clustering(params: Mapping[str, Any]) -> str:
    """The independent unit and why: "group (the samples name 14 groups)"."""
    reason = params.get("cluster_reason")
    unit = str(params.get("cluster", "sample_id"))
    return f"{unit} ({reason})" if reason else unit


def _tasks_moved(pairs: list[Mapping[str, Any]], quantity: str, level: str) -> list[str]:
    """Per pair, the tasks whose difference survived the multiplicity adjustment (none listed
    when the comparison was not split by task), then every task's numbers
    (`calipers.render.changes.tasks_markdown`)."""
    lines: list[str] = []
    for p in pairs:
        tasks: Mapping[str, Any] = p.get("tasks") or {}
        adjust = p.get("task_adjust")
        every = tasks_markdown(p, quantity=quantity, level=level)
        if adjust is None or not tasks:
            if every:
                lines += [f"**Per task** for {escape(p.get('treatment', '?'))} (not tested one "
                          "by one):", *every]  # fmt: skip
            continue
        tested = [t for t in tasks.values() if t.get("p_adjusted") is not None]
        moved = sorted(
            ((name, t) for name, t in tasks.items() if t.get("moved") in ("up", "down")),
            key=lambda nt: (nt[1].get("p_adjusted") or 0.0, nt[0]),
        )
        how = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "unadjusted"}.get(
            str(adjust), escape(adjust)
        )
        alpha = p.get("alpha")
        alpha_text = f", α {alpha:.3g}" if isinstance(alpha, int | float) else ""
        if not tested:
            lines += [
                f"**Tasks that moved** for {escape(p.get('treatment', '?'))}: none of the "
                f"{len(tasks)} tasks could be tested on its own (too few samples in each).",
                *every,
                "",
            ]
            continue
        lines.append(
            f"**Tasks that moved** for {escape(p.get('treatment', '?'))}: {len(moved)} of "
            f"{len(tested)} ({how}{alpha_text})"
        )
        items = [
            f"{'▲' if t['moved'] == 'up' else '▼'} {escape(name)} {_signed(t.get('diff'))} "
            f"{_bounds(t.get('low'), t.get('high'))}"
            for name, t in moved
        ]
        lines += ["", *_capped(items)] if items else []
        lines += [*every, ""]
    return lines


def _objective_compare(report: Mapping[str, Any]) -> list[str]:
    params = report.get("parameters") or {}
    promote = "promote" if report.get("promote") else "do not promote"
    gain = params.get("min_composite_gain", 0.0) or 0.0
    lines = [
        f"### calipers compare · objective: **{escape(str(report.get('verdict', '?')).upper())}** "
        f"· {promote}",
        "",
        f"{escape(report.get('candidate', '?'))} against {escape(report.get('baseline', '?'))}: "
        f"{escape(report.get('reason', ''))}",
        "",
    ]
    interval = report.get("net_gain_interval")
    net = f"Net gain {_signed(report.get('net_gain'), 4)} (threshold ±{gain:g})"
    if interval:
        net += (
            f"; {_level(interval.get('confidence_level'))} interval "
            f"{_bounds(interval.get('low'), interval.get('high'), digits=4)} "
            f"({escape(interval.get('method', 'bootstrap'))}, {interval.get('n_resamples')} "
            f"resamples, seed {interval.get('seed')}; beside the verdict, it does not change it)"
        )
    lines += [net + ".", ""]
    flagged: dict[str, list[Mapping[str, Any]]] = {}
    for r in report.get("regressions") or []:
        flagged.setdefault(str(r.get("task")), []).append(r)
    tasks = list(report.get("tasks") or [])
    moved = [
        t
        for t in tasks
        if str(t.get("task")) in flagged
        or (isinstance(t.get("delta"), int | float) and abs(t["delta"]) > gain + 1e-9)
    ]
    moved.sort(key=lambda t: (str(t.get("task")) not in flagged, -abs(t.get("delta") or 0.0)))
    items = []
    for t in moved:
        delta = t.get("delta")
        arrow = "▲" if isinstance(delta, int | float) and delta > 0 else "▼"
        item = (
            f"{arrow} {escape(t.get('task', '?'))} {_signed(delta)} "
            f"({_num(t.get('baseline'))} → {_num(t.get('candidate'))}; cost adjustment "
            f"{_signed(t.get('cost_adjustment'))})"
        )
        for r in flagged.get(str(t.get("task")), []):
            item += f" · ✗ {escape(r.get('kind'))}: {escape(r.get('detail', ''))}"
        items.append(item)
    for name, regressions in flagged.items():  # a dropped task has no row
        if not any(str(t.get("task")) == name for t in tasks):
            items += [f"✗ {escape(name)} {escape(r.get('kind'))}: {escape(r.get('detail', ''))}"
                      for r in regressions]  # fmt: skip
    lines.append(
        f"**Tasks that moved** (a hard regression, or a composite change beyond ±{gain:g}): "
        f"{len(items)} of {len(tasks)}"
    )
    lines += ["", *_capped(items)] if items else []
    scores = report.get("scores") or {}
    counts = " · ".join(
        f"{escape(run)} {sum(int(t.get('n') or 0) for t in rows)} samples in {len(rows)} tasks"
        for run, rows in scores.items()
        if run in (report.get("baseline"), report.get("candidate"))
    )
    lines += ["", f"Samples: {counts}." if counts else ""]
    if not interval:
        lines.append("No resampling (no interval on the net gain), so no seed.")
    return lines


# ------------------------------------------------------------------------------- score


def score_markdown(report: Mapping[str, Any], *, reading: Callable[..., str] | None = None) -> str:
    """A score report (`calipers score --json`) as Markdown: one row per run with its headline
    score and interval. `reading`, for robustness, names the band of a score (kelvin's words)."""
    report = clean(report)
    scheme = str(report.get("scheme", "?"))
    lines = [f"### calipers score · {escape(scheme)}", ""]
    runs: Mapping[str, Any] = report.get("runs") or {}
    render = _SCORE_VIEWS.get(scheme)
    if scheme == "robustness":
        lines += _robustness_runs(report, reading)
    elif render is not None:
        lines += render(report, runs)
        lines += _agreement_rows(runs) + cost_leaderboard.markdown_lines(report)
    else:
        lines += [f"Runs: {', '.join(escape(r) for r in runs) or 'none'}."]
    params = report.get("parameters") or {}
    methods = {str((r.get("composite") or {}).get("method")) for r in runs.values()}
    boot = scheme == "rubric" or bool(methods & {"percentile", "bca"})
    if "seed" in params:
        lines += [
            "",
            f"Intervals at {_level(params.get('confidence_level'))} · seed {params['seed']}"
            + (f" · {params['n_resamples']} bootstrap resamples"
               if boot and params.get("n_resamples") else "")
            + (f" · clustered by {escape(_clustering(params))}" if "cluster" in params else "")
            + ".",
        ]  # fmt: skip
    elif scheme == "reasonscore" and params.get("z") is not None:
        lines += ["", f"Wilson intervals with z {params['z']:g}; no resampling, so no seed."]
    return _finish([*lines, "", *_notes(report)])


def _paired_scores(report: Mapping[str, Any], runs: Mapping[str, Any]) -> list[str]:
    quantity = _quantity(report)
    level = _level((report.get("parameters") or {}).get("confidence_level"))
    layered = report.get("scheme") == "layered"
    header = ["run", quantity, f"{level} interval", "method", "samples"]
    header += ["layer gates"] if layered else []
    rows = []
    for name, r in runs.items():
        c = r.get("composite") or {}
        row = [
            escape(name),
            _num(c.get("mean")),
            _bounds(c.get("low"), c.get("high"), _num),
            escape(c.get("method") or "—"),
            str(r.get("n_samples", "—")),
        ]
        if layered:
            gate = r.get("gate_passed")
            row.append("—" if gate is None else ("pass" if gate else "**fail**"))
        rows.append(row)
    return _table(header, rows)


def _agreement_cell(found: Mapping[str, Any] | None) -> str:
    if not found or found.get("estimate") is None:
        return "—"
    if found.get("low") is None or found.get("high") is None:
        return f"{_num(found['estimate'], 2)} (no interval: {escape(found.get('refusal'))})"
    return f"{_num(found['estimate'], 2)} {_bounds(found['low'], found['high'], _num, 2)}"


def _agreement_rows(runs: Mapping[str, Any]) -> list[str]:
    """layered: per run, the judges' r, Krippendorff's α and the judge against human labels,
    each with its interval (docs/judges.md)."""
    found = {name: r["agreement"] for name, r in runs.items() if r.get("agreement")}
    if not found:
        return []
    rows = []
    for name, body in found.items():
        pairs = body.get("judge_pairs") or []
        judges = _agreement_cell(body.get("judge_pearson"))
        if len(pairs) > 1:
            judges += "; " + "; ".join(
                f"{escape(' ~ '.join(p['judges']))} {_agreement_cell(p)}" for p in pairs
            )
        rows.append([escape(name), judges, _agreement_cell(body.get("judge_krippendorff_alpha")),
                     _agreement_cell(body.get("human_pearson"))])  # fmt: skip
    header = ["run", "judges: Pearson r", "Krippendorff's α", "judge vs human r"]
    return ["", "Judge agreement (intervals over the samples' means):", "", *_table(header, rows)]


def _objective_scores(report: Mapping[str, Any], runs: Mapping[str, Any]) -> list[str]:
    rows = [
        [escape(name), _num(r.get("mean_composite")), str(r.get("n_tasks", "—")),
         str(sum(int(t.get("n") or 0) for t in r.get("tasks") or []))]
        for name, r in runs.items()
    ]  # fmt: skip
    return _table(["run", "mean composite (0–1)", "tasks", "samples"], rows)


def _rubric_scores(report: Mapping[str, Any], runs: Mapping[str, Any]) -> list[str]:
    level = _level((report.get("parameters") or {}).get("confidence_level"))
    rows = []
    for name, r in runs.items():
        grades = ", ".join(f"{escape(g)} {n}" for g, n in (r.get("grades") or {}).items() if n)
        rows.append([escape(name), _num(r.get("mean_final"), 2),
                     _bounds(r.get("low"), r.get("high"), _num, 2), str(r.get("n", "—")),
                     grades or "—"])  # fmt: skip
    return _table(["run", "mean final", f"{level} interval", "evaluations", "grades"], rows)


def _reasonscore_scores(report: Mapping[str, Any], runs: Mapping[str, Any]) -> list[str]:
    groups = report.get("groups")
    if not groups:
        groups = [{"ranking": report.get("ranking") or list(runs)}]
    lines: list[str] = []
    for i, group in enumerate(groups):
        order = [r for r in group.get("ranking") or [] if r in runs]
        if len(groups) > 1:
            lines += ["", f"Group {i + 1} (runs that share tasks and tiers):", ""]
        rows = [
            [str(rank), escape(name), _num(runs[name].get("score_per_token"), 4),
             _num(runs[name].get("avg_score"), 1), _num(runs[name].get("avg_tokens"), 0),
             str(runs[name].get("samples", "—"))]
            for rank, name in enumerate(order, 1)
        ]  # fmt: skip
        lines += _table(
            ["#", "run", "score/token", "score", "output tokens", "scored observations"], rows
        )
    return lines


_SCORE_VIEWS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[str]]] = {
    "layered": _paired_scores,
    "metric": _paired_scores,
    "objective": _objective_scores,
    "rubric": _rubric_scores,
    "reasonscore": _reasonscore_scores,
}


# ------------------------------------------------------------------------------- robustness


def _signal_rows(body: Mapping[str, Any], reading: Callable[..., str] | None) -> list[list[str]]:
    intervals = body.get("intervals") or {}
    rows = []
    for name in ("invariance", "sensitivity"):
        value = body.get(name)
        i = intervals.get(name) or {}
        if i.get("refusal"):
            bounds = f"no interval: {escape(i['refusal'])}"
        else:
            bounds = _bounds(i.get("low"), i.get("high"), _num, 2)
            if i.get("formula"):
                bounds += f" ({escape(i['formula'])})"
        band = reading(value, name, i or None) if reading and isinstance(value, int | float) else ""
        rows.append([name, _num(value, 2) if value is not None else "not measured", bounds,
                     str(body.get(f"{name}_sample", "—")), escape(band) or "—"])  # fmt: skip
    rows.append(["K", _num(body.get("kelvin_score"), 2), "—", "—",
                 "(1 − Inv) + (1 − Sens), 0–2, lower = more anchored"])  # fmt: skip
    return rows


def _level_of(body: Mapping[str, Any]) -> str:
    for i in (body.get("intervals") or {}).values():
        if i and i.get("confidence_level") is not None:
            return _level(i["confidence_level"])
    return "95%"


def _cases_moved(cases: Sequence[Mapping[str, Any]]) -> list[str]:
    """Cases whose decision changed under a perturbation that should not change it, or did not
    change under a swap that should."""
    moved = [
        c
        for c in cases
        if (c.get("invariance") is not None and c["invariance"] < 1.0)
        or (c.get("sensitivity") is not None and c["sensitivity"] < 1.0)
    ]
    moved.sort(key=lambda c: (c.get("invariance") or 0.0) + (c.get("sensitivity") or 0.0))
    lines = [
        f"**Cases that moved** (the decision changed under reorder or padding, or held under a "
        f"swap): {len(moved)} of {len(cases)}"
    ]
    items = [
        f"{escape(c.get('case', '?'))}: invariance {_num(c.get('invariance'), 2)} "
        f"(n {c.get('invariance_sample', 0)}), sensitivity {_num(c.get('sensitivity'), 2)} "
        f"(n {c.get('sensitivity_sample', 0)})"
        for c in moved
    ]
    return lines + (["", *_capped(items)] if items else [])


def _robustness_body(
    body: Mapping[str, Any],
    cases: Sequence[Mapping[str, Any]] | None,
    reading: Callable[..., str] | None,
    diagnostic: str | None,
) -> list[str]:
    lines = _table(["signal", "value", f"{_level_of(body)} interval", "n", "reading"],
                   _signal_rows(body, reading))  # fmt: skip
    if body.get("noise_floor_eta") is not None:
        k_cal = body.get("kelvin_score_calibrated")
        lines += [
            "",
            f"Noise floor η {_num(body['noise_floor_eta'], 3)}; K_cal "
            + (_num(k_cal, 2) if k_cal is not None else "— (noise exceeds the invariance signal)")
            + ".",
        ]
    if diagnostic:
        lines += ["", escape(diagnostic)]
    if cases is not None:
        lines += ["", *_cases_moved(cases)]
    failed = (body.get("cases") or {}).get("baseline_failed") or []
    if failed:
        items = [f"{escape(f.get('case', '?'))}: {escape(f.get('error') or '')}" for f in failed]
        lines += ["", f"**Baselines that failed**: {len(failed)}", "", *_capped(items)]
    return lines


def _robustness_runs(report: Mapping[str, Any], reading: Callable[..., str] | None) -> list[str]:
    lines: list[str] = []
    all_cases = report.get("cases") or {}
    for name, body in (report.get("runs") or {}).items():
        n_cases = len((body.get("cases") or {}).get("run") or [])
        lines += [f"**{escape(name)}**: {n_cases} cases", ""]
        lines += [*_robustness_body(body, all_cases.get(name), reading, None), ""]
    return lines


def check_markdown(
    report: Mapping[str, Any],
    *,
    cases: Sequence[Mapping[str, Any]] | None = None,
    reading: Callable[..., str] | None = None,
    diagnostic: str | None = None,
) -> str:
    """A `calipers check` report (kelvin's report.json, `--json`) as Markdown. `cases` are the
    per-case scores (as in the robustness score report), `reading` names a score's band and
    `diagnostic` is the check's one finding; all three come from the robustness scheme."""
    report, cases = clean(report), None if cases is None else clean(cases)
    scored = (report.get("invariance_sample") or 0) + (report.get("sensitivity_sample") or 0)
    ran = (report.get("cases") or {}).get("run") or []
    names = {"invariance": "invariance", "sensitivity": "sensitivity", "kelvin_score": "K"}
    signals = [
        f"{name} {_num(report[key], 2)}"
        for key, name in names.items()
        if report.get(key) is not None
    ]
    lines = [f"### calipers check: {' · '.join(signals) or 'nothing measured'}", ""]
    lines += _robustness_body(report, cases, reading, diagnostic)
    run = report.get("calipers") or {}
    invocations = (
        f" · {run['invocations']} pipeline invocations, {run.get('cached', 0)} from the cache"
        if "invocations" in run
        else ""
    )
    lines += [
        "",
        f"Seed {report.get('seed')} · {len(ran)} cases · {scored} scored perturbations, "
        f"{report.get('failed_variants', 0)} failed{invocations}. Diagnostic signals — not "
        "truth metrics.",
    ]
    lines += [f"> note: {escape(w)}" for w in report.get("warnings") or []]
    return _finish(lines)


# ------------------------------------------------------------------------------- writing


def write_markdown(text: str, destination: str | Path) -> None:
    """Write to a path (temp file in the same directory, then rename: nothing half-written) or
    to stdout for "-"."""
    write_report_text(text, destination, option="--markdown")
