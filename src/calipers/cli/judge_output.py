"""What `run` and `grade` print about their judges: the table, and the error when too many calls
failed. Its own module so that `grade` does not import the suite runner to print a table."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.errors import DataError
from calipers.render.text import escape
from calipers.running.judging import CallCounts, JudgeSummary, judge_failures


def judge_failure(summaries: list[JudgeSummary], max_fraction: float | None) -> DataError | None:
    why = judge_failures(summaries, max_fraction)
    if why is None:
        return None
    return DataError(
        why,
        hint="Check the judge's key (--judge-key-env), endpoint and model; the samples are "
        "stored with those judgments missing, and a re-run asks again (failures are never "
        "cached).",
    )


def raise_judge_failures(summaries: list[JudgeSummary], max_fraction: float | None) -> None:
    failure = judge_failure(summaries, max_fraction)
    if failure is not None:
        raise failure


def with_calls(summaries: list[JudgeSummary], calls: dict[str, CallCounts]) -> list[dict[str, Any]]:
    """Each judge's summary with its calls of this command: from the cache, made."""
    out = []
    for s in summaries:
        count = calls.get(s.judge, CallCounts())
        out.append({**s.to_dict(), "cached": count.cached, "called": count.called})
    return out


def judges_table(judging: dict[str, Any], console: Console) -> None:
    def num(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    table = Table(box=None, pad_edge=False, show_edge=False)
    columns = ("judge", "scale", "samples", "cached", "called", "failed", "mean", "SD repeats")
    for column in columns:
        table.add_column(column, justify="left" if column == "judge" else "right")
    for j in judging["judges"]:
        failed = f"{j['failed']}/{j['calls']}"
        table.add_row(
            escape(j["judge"]), f"{j['scale_min']:g}–{j['scale_max']:g}", str(j["samples"]),
            str(j.get("cached", "—")), str(j.get("called", "—")),
            f"[red]{failed}[/]" if j["failed"] else failed, num(j["mean"]), num(j["repeat_sd"]),
        )  # fmt: skip
    console.print(table)
    for j in judging["judges"]:
        if j["failed"]:
            console.print(
                f"  [red]{escape(j['judge'])}: {j['failed']} of {j['calls']} calls failed[/]; "
                f"first error: {escape(j.get('first_error') or 'unknown')}",
                highlight=False,
            )
    for pair in judging["agreement"]:
        a, b = (escape(n) for n in pair["judges"])
        if pair.get("low") is not None and pair.get("high") is not None:
            bounds = f" [{pair['low']:.2f}, {pair['high']:.2f}]"
        elif pair.get("refusal"):
            bounds = f" (no interval: {escape(pair['refusal'])})"
        else:
            bounds = ""
        console.print(
            f"  agreement {a} ~ {b}: Pearson r {num(pair['pearson'])}{bounds} on "
            f"{pair['samples']} samples",
            highlight=False,
        )
