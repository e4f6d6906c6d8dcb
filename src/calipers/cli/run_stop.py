"""`calipers run --stop`: the options turned into a `Stopper`, and what the run's report says
about the stop (the decision, the look it stopped at, what it saved)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.cli.main import stdout_console
from calipers.errors import GateFailed, InputError
from calipers.render.sequential import stop_text
from calipers.render.text import escape
from calipers.running.run_suite import SuiteRun
from calipers.running.stopping import Stopper, StopPlan
from calipers.running.suite import Suite
from calipers.verdicts.sequential_compare import SequentialComparison


def make_stopper(
    suite: Suite,
    run: str,
    db: Path,
    seed: int,
    *,
    design: str | None,
    baseline: str | None,
    metric: str | None,
    bounds: str | None,
    margin: str | None,
    gate: str,
) -> Stopper | None:
    """The run's stopper, or None without --stop (its options then refused if given)."""
    if design is None:
        given = [
            f
            for f, v in (
                ("--baseline", baseline),
                ("--metric", metric),
                ("--bounds", bounds),
                ("--margin", margin),
            )
            if v is not None
        ]
        if given:
            raise InputError(f"{', '.join(given)} belong to --stop", hint="Add --stop DESIGN.")
        return None
    if baseline is None:
        raise InputError(
            "--stop needs the run to compare with: --baseline RUN",
            hint="A stored run of the same suite (calipers runs).",
        )
    if baseline == run:
        raise InputError(f"--baseline {baseline} is the run being made (--run)")
    if gate == "worth-it":
        raise InputError(
            "--gate worth-it is calipers compare's: the sequential decision weighs no cost",
            hint="Gate the finished runs with `calipers compare … --value-per-solved V --gate "
            "worth-it`.",
        )
    if gate == "non-inferior" and margin is None:
        raise InputError("--gate non-inferior needs a margin", hint="Add --margin M.")
    options: dict[str, Any] = {}
    if metric is not None:
        options["metric"] = metric
    if bounds is not None:
        options["bounds"] = bounds
    plan = StopPlan(
        design=design,
        baseline=baseline,
        scheme="metric" if metric else "layered",
        options=options,
        margin=margin,
        seed=seed,
    )
    return Stopper(plan, db=db, task_ids=[t.id for t in suite.tasks], run=run)


def stop_section(
    stopper: Stopper, result: SuiteRun, gate: str
) -> tuple[dict[str, Any], GateFailed | None]:
    """The report's `stop` section and the gate's failure, if it fails."""
    comparison = SequentialComparison(
        stopper.plan.scheme,
        "calipers run",
        {
            **stopper.plan.options,
            "design": stopper.plan.design,
            "order": "random",
            "seed": stopper.plan.seed,
            "cluster": "sample_id",
            "baseline": stopper.plan.baseline,
            "n_planned": stopper.n_planned,
            "errors": "worst",
        },
        stopper.result(),
    )
    body = comparison.to_dict()
    counted = stopper.counted
    left = stopper.n_planned - counted
    section: dict[str, Any] = {
        "design": body["design"],
        "baseline": stopper.plan.baseline,
        "seed": stopper.plan.seed,
        "verdict": body["verdict"],
        "reason": body["reason"],
        "decided": body["decided"],
        "tasks_planned": stopper.n_planned,
        "tasks_counted": counted,
        "tasks_not_needed": left if body["decided"] else 0,
        "pairs": body["pairs"],
        "saved": _saved(result.rows, counted, left if body["decided"] else 0),
        "skipped": stopper.skipped,
    }
    failure = comparison.gate_failure(gate)
    section["gate"] = {"name": gate, "passed": failure is None, "failure": failure}
    return section, None if failure is None else GateFailed(failure, hint=comparison.reason)


def _saved(rows: list[dict[str, Any]], counted: int, left: int) -> dict[str, Any]:
    """What the tasks not run would have cost, at the mean per task of those that ran (where
    the pipeline reported it): an estimate, said as one."""
    tasks = {r["task"] for r in rows}
    out: dict[str, Any] = {"tasks": left}
    for key in ("cost_usd", "tokens_in", "tokens_out"):
        values = [r[key] for r in rows if isinstance(r.get(key), int | float)]
        if values and tasks:
            out[key] = left * sum(values) / len(tasks)
    return out


def stop_lines(section: dict[str, Any]) -> None:
    console = stdout_console()
    pair = section["pairs"][0] if section["pairs"] else None
    head = "decided" if section["decided"] else "not decided"
    console.print(
        f"[bold]--stop {escape(section['design']['kind'])}[/] vs "
        f"{escape(section['baseline'])}: [bold]{escape(section['verdict'])}[/] ({head}) "
        f"{escape(section['reason'])}",
        highlight=False,
    )
    if pair is not None:
        console.print(f"  {escape(stop_text(pair))}", highlight=False)
    saved = section["saved"]
    extra = ", ".join(
        f"~{saved[k]:.4g} {k}" for k in ("cost_usd", "tokens_in", "tokens_out") if k in saved
    )
    if section["tasks_not_needed"]:
        console.print(
            f"  saved {section['tasks_not_needed']} of {section['tasks_planned']} task(s)"
            + (f" ({escape(extra)}, at the mean per task run)" if extra else ""),
            highlight=False,
        )
