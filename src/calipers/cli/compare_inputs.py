"""What `calipers compare` reads: FILEs (or directories) or the store, and with `--vs` two
sides, each one run (`compare BASE... --vs CANDIDATE...`), named without an import step.

`--vs` takes every word after it up to the next option, so a shell glob works on both sides:
`calipers compare logs/v1/*.eval --vs logs/v2/*.eval --scheme metric --metric match`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from calipers import api
from calipers.cli.main import stderr_console
from calipers.cli.options import LocalPath
from calipers.errors import InputError
from calipers.render.text import escape


class VsCommand(click.Command):
    """A command whose `--vs` takes several values: `--vs a b c` is read as `--vs a --vs b
    --vs c` (click gives an option one value per occurrence)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            spread = spread_vs(args)
        except click.UsageError:
            if not ctx.resilient_parsing:  # shell completion of `--vs <TAB>` goes on
                raise
            spread = list(args)
        return super().parse_args(ctx, spread)


def spread_vs(args: Sequence[str]) -> list[str]:
    """`--vs` followed by words up to the next option (or `--`) → one `--vs` per word; a bare
    `--vs` is a usage error."""
    out: list[str] = []
    taking = False
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--":
            out += [word, *rest]
            break
        if word == "--vs" or word.startswith("--vs="):
            value = word[len("--vs=") :] if "=" in word else None
            if value is None and (not rest or (rest[0].startswith("-") and rest[0] != "-")):
                raise click.UsageError(
                    "--vs needs the candidate's files or directories: compare BASE... --vs "
                    "CANDIDATE..."
                )
            if value is not None:
                out += ["--vs", value]
            taking = True
            continue
        if taking and not (word.startswith("-") and word != "-"):
            out += ["--vs", word]
            continue
        taking = False
        out.append(word)
    return out


def vs_option(func: Any) -> Any:
    return click.option(
        "--vs",
        "vs",
        multiple=True,
        type=LocalPath(path_type=Path),
        metavar="CANDIDATE...",
        help="Compare two sides, each one run: FILEs/directories before --vs are the baseline, "
        "those after it the candidate (globs work: --vs logs/v2/*.eval). --baseline and "
        "--candidate name them; else the tool's run names when they differ, else the "
        "directories', else the files'.",
    )(func)


def open_compared(
    files: tuple[Path, ...],
    vs: tuple[Path, ...],
    baseline: str | None,
    candidates: tuple[str, ...],
    *,
    db: Path,
    column_map: str | None,
) -> tuple[api.Samples, str, list[str]]:
    """The samples to compare, the baseline run and the candidates: with --vs the two sides;
    else FILEs or the store, the baseline as given (or the input's only run, said)."""
    if vs:
        if len(candidates) > 1:
            raise InputError(
                "--vs compares two sides: one --candidate names the candidate side",
                parameters=["candidates"],
            )
        samples, sides = api.open_sides(
            list(files),
            list(vs),
            names=(baseline, candidates[0] if candidates else None),
            map=column_map,
        )
        _note(sides.note)
        return samples, sides.baseline, [sides.candidate]
    source = None if not files else files[0] if len(files) == 1 else list(files)
    samples = api.open(source, db=None if files else db, map=column_map)
    if baseline is None:
        try:
            baseline = api.only_run(
                samples, "the run to compare against: --baseline RUN (or --control RUN)"
            )
        except BaseException:
            samples.close()
            raise
        _note(f"baseline run '{baseline}': the only run in {samples.origin}")
    return samples, baseline, list(candidates)


def _note(text: str) -> None:
    stderr_console().print(f"[dim]note:[/] {escape(text)}", highlight=False)
