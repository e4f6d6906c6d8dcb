"""Terminal views of the comparable schemes: per-run summaries, and a comparison's verdict in one
line followed by a table of variants and a table of pairs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render.changes import tasks_terminal
from calipers.render.terminal import notes as print_notes
from calipers.render.terminal import num
from calipers.render.text import escape
from calipers.schemes.layered.scoring import SummaryResult, value_label
from calipers.verdicts.by_task import adjustment_label
from calipers.verdicts.compare import CompareResult, PairResult
from calipers.verdicts.difference import Difference
from calipers.verdicts.gates import Verdict
from calipers.verdicts.paired import PairedComparison
from calipers.verdicts.run_summary import RunSummary

VERDICT_STYLE = {
    Verdict.PROGRESS: "bold green",
    Verdict.CAUTIOUS: "bold yellow",
    Verdict.REGRESS: "bold red",
    Verdict.NOISE: "bold blue",
    Verdict.UNDERPOWERED: "bold magenta",
    Verdict.SOLO: "bold",
}


def _interval(low: float | None, high: float | None, fmt: str = ".2f") -> str:
    return "—" if low is None or high is None else f"[{low:{fmt}}, {high:{fmt}}]"


def _variants_table(
    runs: dict[str, RunSummary], title: str, control: str | None, *, label: str = "composite"
) -> Table:
    """`label`: what the per-run value is called (`value_label`: composite, or the metric)."""
    any_run = next(iter(runs.values()))
    components = list(any_run.components) if any_run.layers_used else []  # metric: no layers
    table = Table(title=escape(title), title_justify="left", pad_edge=False)
    table.add_column("run", overflow="fold")
    table.add_column("n", justify="right")
    table.add_column(escape(label), justify="right", overflow="fold")
    for name in components:
        table.add_column(escape(name), justify="right")
    if components:
        table.add_column("layers", overflow="fold")
    for run in runs.values():
        label = escape(run.run) + (" (control)" if run.run == control else "")
        c = run.composite
        ci = _interval(c.interval.low, c.interval.high) if c.interval else ""
        cells = [label, str(run.n_samples), f"{num(c.mean, '.2f')}\n{ci}"]
        for name in components:
            comp = run.components[name]
            mark = "" if comp.gate is not False else " ✗"
            cells.append(num(comp.mean, ".2f") + mark)
        if components:
            cells.append(_layers_used(run.layers_used))
        table.add_row(*cells)
    return table


def _layers_used(used: dict[str, int]) -> str:
    """fact+behavior+judge → FBJ; counts only when samples differ in the layers they have."""
    short = {
        k: "".join(p[0].upper() for p in k.split("+")) if k != "none" else "none" for k in used
    }
    if len(used) == 1:
        return short[next(iter(used))]
    return ", ".join(f"{short[k]} {v}" for k, v in sorted(used.items(), key=lambda kv: -kv[1]))


def _estimate_cell(found: list[Any], k: int) -> str:
    e = next((e for e in found if e["k"] == k), None)
    if e is None:
        return "—"
    return f"{e['estimate']:.2f}\n" + _interval(e.get("low"), e.get("high"))


def _needs(plan: dict[str, Any] | None, half_width: str) -> str:
    """The epochs a half-width needs, with the 90% range of that figure: "6 (5–9)"; "more
    samples" when no number of epochs reaches it with these samples."""
    if plan is None:
        return "—"
    k = plan["epochs_for"].get(half_width)
    if k is None:
        return "more samples"
    low, high = plan.get("epochs_range", {}).get(half_width, [None, None])
    span = f" ({low}–{high if high is not None else '∞'})" if low is not None else ""
    return f"{k}{span}"


def repeats_table(runs: dict[str, RunSummary], console: Console) -> None:
    """pass@k, pass^k, flaky samples and the variance split of the runs with repeats."""
    rows = {name: r.repeats.to_dict() for name, r in runs.items() if r.repeats is not None}
    if not rows:
        return
    binary = [body for body in rows.values() if body.get("pass@k")]
    k = max((body["pass@k"][-1]["k"] for body in binary), default=None)
    table = Table(title="repeats (epochs per sample)", title_justify="left", pad_edge=False)
    for head in ("run", "epochs"):
        table.add_column(head, overflow="fold")
    if k is not None:
        for head in ("pass@1", f"pass@{k}", f"pass^{k}", "flaky"):
            table.add_column(head, justify="right")
    table.add_column("within", justify="right")
    table.add_column("±0.05 needs", justify="right")
    for name, body in rows.items():
        epochs = body["epochs"]
        span = str(epochs["min"]) + (f"–{epochs['max']}" if epochs["max"] != epochs["min"] else "")
        cells = [escape(name), span]
        if k is not None:
            if body.get("pass@k"):
                cells += [
                    _estimate_cell(body["pass@k"], 1),
                    _estimate_cell(body["pass@k"], k),
                    _estimate_cell(body["pass^k"], k),
                    f"{body['n_flaky']} of {body['n_samples']}",
                ]
            else:
                cells += ["—"] * 4
        variance = body["variance"] or {}
        share = variance.get("within_share")
        cells.append("—" if share is None else f"{share:.0%}")
        cells.append(_needs(body["planning"], "0.05"))
        table.add_row(*cells)
    console.print(table)
    for name, body in rows.items():
        judged = body.get("judge_repeats")
        if judged:
            console.print(
                f"{escape(name)}: judges asked again on the same output differ by a variance of "
                f"{judged['variance']:.3f} (1–5 scale, {judged['df']} degrees of freedom)",
                highlight=False,
            )
        plan, variance = body["planning"], body["variance"]
        if plan is None or variance is None:
            continue
        widths = ", ".join(f"{k} ±{w:.3f}" for k, w in plan["half_width_at"].items())
        console.print(
            f"{escape(name)}: variance between samples {variance['between']:.4f}, within "
            f"{variance['within']:.4f} · half-width at 1, 2, 4, 8 epochs: {widths} · epochs "
            "for ±0.02: " + _needs(plan, "0.02"),
            highlight=False,
        )
    console.print(
        "[dim]pass@k: one of k epochs passes · pass^k: all k pass (unbiased, intervals over "
        "samples) · flaky: samples whose epochs disagree · within: the share of a score's "
        "variance that is between epochs of a sample · ±0.05 needs: epochs per sample for a "
        "±0.05 interval with these samples, and its 90% range (docs/repeats.md)[/]"
    )


def summary(result: SummaryResult, console: Console, *, detail: bool = False) -> None:
    """Each run's value with its interval and components; `detail` (`score --tasks`): each
    run's mean and observations per task as well."""
    label = value_label(result.scheme, result.parameters)
    console.print(_variants_table(result.runs, f"{result.scheme} scores", None, label=label))
    if detail:
        task_means(result, console, label=label)
    if result.scheme == "layered":
        console.print("[dim]✗ layer mean below the gate · layers: F fact, B behavior, J judge[/]")
    console.print(f"[dim]intervals clustered by {escape(clustering(result.parameters))}[/]")
    ranking_lines(result.ranking, console)
    agreement_lines(result.runs, console)
    calibration_lines(result.judge_calibration, console)
    repeats_table(result.runs, console)
    print_notes(result.notes, console)


def agreement_figure(name: str, found: Mapping[str, Any] | None) -> str | None:
    """ "α 0.78 [0.60, 0.88]", or with the reason when refused: "α 0.71 (no interval: …)"."""
    if found is None or found.get("estimate") is None:
        return None
    text = f"{name} {found['estimate']:.2f}"
    if found.get("low") is not None and found.get("high") is not None:
        return text + f" [{found['low']:.2f}, {found['high']:.2f}]"
    return text + f" (no interval: {found.get('refusal')})"


def agreement_lines(runs: Mapping[str, RunSummary], console: Console) -> None:
    """Per run with judges or human labels: the judges' Pearson r (each pair's when several),
    Krippendorff's α and the judge against human labels, each with its interval."""
    lines = []
    for name, run in runs.items():
        if run.agreement is None:
            continue
        body = run.agreement.to_dict()
        figures = [agreement_figure("judges r", body["judge_pearson"])]
        if len(body["judge_pairs"]) > 1:
            figures += [agreement_figure(" ~ ".join(p["judges"]) + " r", p)
                        for p in body["judge_pairs"]]  # fmt: skip
        figures.append(agreement_figure("α", body["judge_krippendorff_alpha"]))
        figures.append(agreement_figure("human r", body["human_pearson"]))
        shown = [f for f in figures if f is not None]
        if shown:
            lines.append(escape(f"  {name}: " + " · ".join(shown)))
            level = next(f["confidence_level"] for f in (body["judge_pearson"],
                         body["judge_krippendorff_alpha"], body["human_pearson"]) if f)  # fmt: skip
    if not lines:
        return
    console.print(f"judge agreement ({level:.0%} intervals, over the samples' means; "
                  "docs/judges.md):")  # fmt: skip
    for line in lines:
        console.print(line, highlight=False)


def task_means(result: SummaryResult, console: Console, *, label: str) -> None:
    """One row per task, one column per run: the run's mean on the task (of its samples' epoch
    means) and its observations."""
    tasks = sorted({t for r in result.runs.values() for t in r.tasks})
    table = Table(title=f"{escape(label)} per task (mean, observations)", title_justify="left",
                  pad_edge=False)  # fmt: skip
    table.add_column("task", overflow="fold")
    for name in result.runs:
        table.add_column(escape(name), justify="right", overflow="fold")
    for task in tasks:
        cells = []
        for r in result.runs.values():
            t = r.tasks.get(task)
            cells.append("—" if t is None else f"{num(t.get('mean'), '.3f')} ({t.get('n')})")
        table.add_row(escape(task), *cells)
    console.print(table)


def clustering(parameters: Mapping[str, Any]) -> str:
    """The unit the intervals cluster by, and why: "group (the samples name 14 groups)"."""
    unit = str(parameters.get("cluster", "sample_id"))
    reason = parameters.get("cluster_reason")
    return f"{unit} ({reason})" if reason else unit


def calibration_lines(found: dict[str, dict[str, Any]] | None, console: Console) -> None:
    """--calibrate-judges: per run (or pair) the judge alone, the corrected figure with its
    interval, the labels-only interval and what the judge added."""
    if not found:
        return
    console.print("judge layer corrected by human labels (PPI++, docs/judges.md):")
    for name, c in found.items():
        if "refusal" in c:
            console.print(f"  {escape(name)}: no correction — {escape(c['refusal'])}")
            continue
        human = c.get("human_only") or {}
        line = (
            f"  {escape(name)}: judge {c['judge_mean']:.2f} → {c['estimate']:.2f} "
            f"[{c['low']:.2f}, {c['high']:.2f}] from {c['n_labelled']} labels "
            f"(labels alone [{num(human.get('low'), '.2f')}, {num(human.get('high'), '.2f')}]; "
            f"worth {c['effective_labels']:.0f} labels)"
        )
        if c.get("judge_too_weak"):
            line += " · the judge adds little: the labels decide"
        console.print(line, highlight=False)


def ranking_lines(ranking: dict[str, Any] | None, console: Console) -> None:
    """Each run's rank with its interval, and the tie groups (runs the data cannot order)."""
    if not ranking:
        return
    level = f"{ranking['confidence_level']:.0%}"
    ranks = " · ".join(
        f"{escape(r['run'])} {r['rank']}"
        + (f" [{r['rank_low']}–{r['rank_high']}]" if r["rank_low"] != r["rank_high"] else "")
        for r in ranking["runs"]
    )
    console.print(f"ranks ({level} rank intervals): {ranks}", highlight=False)
    tied = [g for g in ranking["groups"] if len(g) > 1]
    if tied:
        console.print(
            "tied (not ordered by the data): "
            + "; ".join(", ".join(escape(r) for r in g) for g in tied),
            highlight=False,
        )
    console.print(
        f"[dim]over {ranking['n_samples']} samples every run has, {ranking['n_resamples']} "
        f"resamples, seed {ranking['seed']} (docs/rankings.md)[/]"
    )


def _diff_cell(d: Difference | None) -> str:
    if d is None or d.estimate is None:
        return "—"
    star = "*" if d.significant else ""
    if d.low is None or d.high is None:
        ci = " (all equal)" if d.unchanged or d.constant else " (no interval)"
    else:
        ci = f" [{d.low:+.2f}, {d.high:+.2f}]"
    return f"{d.estimate:+.3f}{star}{ci}"


def _counts_cell(pair: PairedComparison) -> str:
    """paired units · unpaired observations · observations missing a composite on one side."""
    m = pair.missing.get("composite")
    one_side = f"{m.control_only}/{m.treatment_only}" if m else "0/0"
    return f"{pair.n_pairs} · {pair.unpaired_control}/{pair.unpaired_treatment} · {one_side}"


def _repeats_cell(pair: PairedComparison) -> str:
    r = pair.repeats
    if r is None:
        return "—"
    return f"{r.estimate:+.3f} (k {r.k})\n" + _interval(r.low, r.high, "+.3f")


def _means_cell(d: Difference) -> str:
    if d.control_mean is None or d.treatment_mean is None:
        return "—"
    return f"{d.control_mean:.3f} → {d.treatment_mean:.3f}"


def _method(result: CompareResult) -> str:
    formulas = sorted(
        {p.comparison.composite.interval.formula for p in result.pairs
         if p.comparison.composite.interval is not None}
    )  # fmt: skip
    return "/".join(formulas) or "none"


_DECISION_STYLE = {"superior": "green", "equivalent": "green", "non-inferior": "green",
                   "inferior": "red"}  # fmt: skip


def _margin_cell(pair: PairResult) -> str:
    """The decision and the bound that decided it, on the compared quantity's scale."""
    m = pair.margin
    if m is None:
        return "–"
    style = _DECISION_STYLE.get(m.decision, "yellow")
    if m.low is None or m.high is None:
        why = "no interval"
    elif m.decision == "inferior":
        why = f"high {m.high:+.3f} < -{m.margin:.3g}"
    elif m.decision == "equivalent":
        why = f"within ±{m.margin:.3g}"
    elif m.decision == "superior":
        why = f"low {m.low:+.3f} > 0"
    else:
        sign = ">" if m.low > -m.margin else "≤"
        why = f"low {m.low:+.3f} {sign} -{m.margin:.3g}"
    return f"[{style}]{m.decision}[/] ({escape(why)})"


def _margin_lines(result: CompareResult, console: Console) -> None:
    for pair in result.pairs:
        m = pair.margin
        if m is not None:
            style = _DECISION_STYLE.get(m.decision, "yellow")
            console.print(
                f"margin {escape(m.given)}: {escape(pair.comparison.treatment)} "
                f"[{style}]{m.decision.upper()}[/] — {escape(m.reason)}"
            )


def _tasks_moved(result: CompareResult, console: Console) -> None:
    """Per pair, how many tasks' differences survive the multiplicity correction, then every
    task's difference, interval, adjusted p and paired samples (`calipers.render.changes`)."""
    label = value_label(result.scheme, result.parameters)
    for pair in result.pairs:
        c = pair.comparison
        if c.task_adjust is not None:
            tested = [t for t in c.tasks.values() if t.get("p_adjusted") is not None]
            moved = [t for t in c.tasks.values() if t.get("moved")]
            how = adjustment_label(c.task_adjust)
            if tested:
                head = f"{escape(c.treatment)}: {len(moved)} of {len(tested)} tasks moved ({how}"
                console.print(head + f", α {pair.alpha:.3g})")
            else:  # as the Markdown says it, not "0 of 0 tasks moved"
                console.print(
                    f"{escape(c.treatment)}: none of the {len(c.tasks)} tasks could be tested on "
                    "its own (too few samples in each)"
                )
        tasks_terminal(
            {"control": c.control, "treatment": c.treatment, "tasks": c.tasks,
             "task_adjust": c.task_adjust},
            console, label=label,
        )  # fmt: skip


def _missing_lines(result: CompareResult, console: Console) -> None:
    """Per pair, only when some outcome is missing: what each run lacks and why, and the
    worst/best-case bounds of the difference (`calipers.verdicts.missing_bounds`)."""
    for pair in result.pairs:
        b = pair.comparison.missing_bounds
        if b is None:
            continue
        parts = []
        for name, a in (("treatment", b.treatment), ("control", b.control)):
            if a.units:
                parts.append(
                    f"{name} lacks {a.units} sample(s) ({a.observations} observations: "
                    f"{a.system_errors} system errors, {a.grader_failures} grader failures)"
                )
            if a.scored_worst:
                parts.append(f"{a.scored_worst} {name} system errors scored at the low bound")
        if not parts:
            continue
        if b.missing and (b.worst is None or b.best is None):
            parts.append("no declared bounds: the difference is unbounded")
        elif b.low is not None and b.high is not None:
            parts.append(f"at worst/best the difference is in [{b.low:+.3f}, {b.high:+.3f}]")
        style = "yellow" if b.triggered else "dim"
        line = f"missing outcomes, {pair.comparison.treatment}: " + "; ".join(parts)
        if b.triggered:
            line += f" — a PROGRESS or REGRESS must hold across these bounds ({b.trigger})"
        console.print(f"[{style}]{escape(line)}[/]", highlight=False)


def comparison(result: CompareResult, console: Console) -> None:
    style = VERDICT_STYLE[result.verdict]
    console.print(f"[{style}]{result.verdict.value}[/] {escape(result.reason)}")
    _margin_lines(result, console)
    label = value_label(result.scheme, result.parameters)
    console.print(_variants_table(result.variants, "variants", result.control, label=label))
    agreement_lines(result.variants, console)  # as `score` prints them, and --json holds them
    if result.pairs:
        # One column per treatment and one row per quantity: stays inside 80 columns.
        layers = list(result.pairs[0].comparison.components)
        table = Table(title="treatment − control", title_justify="left", pad_edge=False)
        table.add_column("")
        for pair in result.pairs:
            table.add_column(escape(pair.comparison.treatment), justify="right", overflow="fold")
        table.add_row("verdict", *(p.decision.verdict.value for p in result.pairs))
        table.add_row("paired · unpaired · missing", *(_counts_cell(p.comparison)
                      for p in result.pairs))  # fmt: skip
        table.add_row(escape(label), *(_diff_cell(p.comparison.composite) for p in result.pairs))
        table.add_row("  on those pairs", *(_means_cell(p.comparison.composite)
                      for p in result.pairs))  # fmt: skip
        for name in layers:
            table.add_row(
                escape(name),
                *(_diff_cell(p.comparison.components.get(name)) for p in result.pairs),
            )
        table.add_row("MDE", *(num(p.comparison.mde, ".3f") for p in result.pairs))
        if any(p.comparison.repeats for p in result.pairs):
            table.add_row("pass^k (k)", *(_repeats_cell(p.comparison) for p in result.pairs))
        if any(p.margin for p in result.pairs):
            table.add_row(
                f"margin {escape(str(result.parameters.get('margin_given')))}",
                *(_margin_cell(p) for p in result.pairs),
            )
        console.print(table)
        _tasks_moved(result, console)
        _missing_lines(result, console)
        calibration_lines(
            {
                p.comparison.treatment + " − " + result.control: p.judge_calibration
                for p in result.pairs
                if p.judge_calibration is not None
            },
            console,
        )
        unit = escape(clustering(result.parameters))
        boot = _method(result) in ("percentile", "bca")
        console.print(
            "[dim]* significant · paired units by "
            f"{unit} · unpaired and missing: control/treatment observations · interval "
            f"{_method(result)} · "
            + (f"{result.parameters['n_resamples']} resamples · " if boot else "")
            + f"seed {result.seed} · α {1 - result.parameters['confidence_level']:.3g}"
            + (f" split over {len(result.pairs)} treatments" if len(result.pairs) > 1 else "")
            + "[/]"
        )
        _scale_and_method_lines(result, console)
    else:
        console.print(f"[dim]intervals clustered by {escape(clustering(result.parameters))}[/]")
    if result.badges:
        console.print(
            "badges: "
            + " · ".join(
                f"{name.replace('_', ' ')} {'✓' if v else '✗' if v is False else 'n/a'}"
                for name, v in result.badges.items()
            )
        )
    print_notes(result.notes + [n for p in result.pairs for n in p.comparison.notes], console)


def _scale_and_method_lines(result: CompareResult, console: Console) -> None:
    """Where the scale came from, and why `auto` left the t interval when it did."""
    source = result.parameters.get("scale_source")
    if source:
        console.print(f"[dim]scale: {escape(str(source))}[/]")
    for pair in result.pairs:
        interval = pair.comparison.composite.interval
        if interval is not None and interval.method in ("betting", "studentized"):
            console.print(
                f"[dim]{escape(pair.comparison.treatment)}: {interval.formula} interval, "
                f"{escape(interval.reason or 'asked for')}[/]"
            )
