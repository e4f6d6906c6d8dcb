"""The sections of docs/calibration.md made from the separate studies' figures: "Judge
calibration (PPI++)" from `python -m calipers.calibration.ppi --json`, "Rank intervals" from
`python -m calipers.calibration.rankings --json` and "Cost" from `python -m
calipers.calibration.cost --json`. `python -m calipers.calibration` adds them to the
page it writes (so `make calibrate` regenerates them from whatever figures are there), and
`python -m calipers.calibration --sections-only --out docs/calibration.md` puts them into the
existing page without running the grid. The sections sit between two markers; anything else on
the page is left as it is."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from calipers.calibration.cost import DEFAULT_JSON as COST_JSON
from calipers.calibration.cost import cost_section
from calipers.calibration.cost_families import DEFAULT_JSON as FAMILIES_JSON
from calipers.calibration.cost_families import families_section
from calipers.calibration.cost_selection import SELECTION_JSON, selection_section
from calipers.calibration.ppi import TARGET_COVERAGE as PPI_COVERAGE
from calipers.calibration.ppi import TARGET_NOT_WIDER as PPI_NOT_WIDER
from calipers.calibration.ppi import minimum_table
from calipers.calibration.rankings import TARGET as RANK_COVERAGE
from calipers.errors import InputError
from calipers.stats.ppi import MIN_LABELS

PPI_JSON = Path("benchmarks/results/ppi_calibration.json")
RANK_JSON = Path("benchmarks/results/rank_calibration.json")
BEGIN = "<!-- studies:begin (generated from the studies' JSON: calipers.calibration.studies) -->"
END = "<!-- studies:end -->"


def _status(passed: bool) -> str:
    return "PASS" if passed else "**FAIL**"


def _share(value: float, n: int) -> str:
    """A simulated share ± its Monte Carlo standard error."""
    return f"{value:.3f}±{math.sqrt(max(value * (1 - value), 0.0) / n):.3f}"


def ppi_passes(cell: dict[str, Any]) -> bool:
    return bool(cell["coverage"] >= PPI_COVERAGE and cell["not_wider"] >= PPI_NOT_WIDER)


def ppi_section(body: dict[str, Any] | None, source: Path = PPI_JSON) -> str:
    """The PPI++ study's cells with at least MIN_LABELS labels, one row each, and the worst
    figures per labelled-slice size (below the minimum too: what decided it)."""
    lines = ["## Judge calibration (PPI++)", ""]
    if body is None:
        return "\n".join([*lines, _missing(source, "ppi --reps 5000")]) + "\n"
    cells = body["cells"]
    names = list(dict.fromkeys(c["id"].rsplit("/n", 1)[0] for c in cells))
    kept = sorted(
        (c for c in cells if c["cell"]["n"] >= MIN_LABELS),
        key=lambda c: (names.index(c["id"].rsplit("/n", 1)[0]), c["cell"]["n"]),
    )
    failed = [c for c in kept if not ppi_passes(c)]
    lines += [
        'The judge-calibration study (docs/judges.md, "Calibration"): simulated runs of '
        f"{body['n_total']:,} samples with a known human-scale mean θ, a judge score on every "
        "sample and a random labelled slice of n, through `ppi_mean` / `ppi_paired_difference` "
        "as calipers calls them (PPI++, or the labels' own interval when that is narrower). "
        f"`python -m calipers.calibration.ppi --reps {body['reps']} --json {source}` (seed "
        f"{body['seed']}, variant {body['variant']}, {body['wall_s'] / 60:.0f} min); this "
        "section is rendered from that file.",
        "",
        f"Targets, every cell with n ≥ {MIN_LABELS} labels (calipers refuses fewer, "
        f"`MIN_LABELS`): coverage of θ ≥ {PPI_COVERAGE:.2f}, and the interval shown no wider "
        f"than the labels' alone in ≥ {PPI_NOT_WIDER:.0%} of simulations. "
        f"**{len(kept) - len(failed)} of {len(kept)} cells pass.** Columns: labels n; "
        "simulated runs; coverage ± its Monte Carlo standard error; never wider (the share of "
        "runs whose interval is no wider than the labels' alone); width (the mean ratio of its "
        "width to the labels' alone).",
        "",
        "| cell | labels | sims | coverage | never wider | width | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in kept:
        lines.append(
            f"| `{c['id'].rsplit('/n', 1)[0]}` | {c['cell']['n']} | {c['reps']} "
            f"| {_share(c['coverage'], c['reps'])} | {c['not_wider']:.3f} | {c['width_ratio']:.2f} "
            f"| {_status(ppi_passes(c))} |"
        )
    lines += [
        "",
        f"Per labelled-slice size, every cell (below {MIN_LABELS} labels calipers refuses: these "
        "rows are why):",
        "",
        minimum_table(cells).rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


def rank_passes(cell: dict[str, Any]) -> bool:
    return bool(cell["marginal"]["worst_run"] >= RANK_COVERAGE)


def rank_section(body: dict[str, Any] | None, source: Path = RANK_JSON) -> str:
    """The rank-interval study's cells, one row each, for the method calipers uses (marginal)."""
    lines = ["## Rank intervals", ""]
    if body is None:
        return "\n".join([*lines, _missing(source, "rankings")]) + "\n"
    cells = body["cells"]
    failed = [c for c in cells if not rank_passes(c)]
    estimand = body.get("estimand", "limit")
    lines += [
        'The rank-interval study (docs/rankings.md, "Measured coverage"): leaderboards whose '
        "true order is known — K runs' means over shared items (`means`), pairwise judgements "
        "ranked by Bradley–Terry strengths (`bt`), and ReasonScore leaderboards scored by the "
        "reasonscore scheme, T tiers × J tasks × 2 points × m questions, whose truth is the "
        "rank of score/token's infinite-sample limit (`reasonscore`). "
        f"`python -m calipers.calibration.rankings --sims {body['sims']} --resamples "
        f"{body['resamples']} --json {source}` (seed {body['seed']}, {body['wall_s'] / 60:.0f} "
        f"min{'' if estimand == 'limit' else f', estimand {estimand}'}); this section is "
        "rendered from that file.",
        "",
        f"Target: the 95% rank interval calipers reports (`marginal`, the default) covers the "
        f"true rank in ≥ {RANK_COVERAGE:.2f} of simulations for every run of every cell (the "
        f"worst run's coverage). **{len(cells) - len(failed)} of {len(cells)} cells pass.** "
        "Columns: K runs; simulated leaderboards; coverage over (simulation, run) and the worst "
        "run's, ± their Monte Carlo standard errors; joint (every run's interval holds at "
        "once); width (mean interval length in ranks, of K). The simultaneous and percentile "
        "intervals are in docs/rankings.md.",
        "",
        "| cell | K | sims | coverage | worst run | joint | width | status |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        m = c["marginal"]
        lines.append(
            f"| `{c['cell']}` | {c['runs']} | {c['sims']} "
            f"| {_share(m['coverage'], c['sims'] * c['runs'])} "
            f"| {_share(m['worst_run'], c['sims'])} | {m['joint']:.3f} | {m['width']:.2f} "
            f"| {_status(rank_passes(c))} |"
        )
    return "\n".join(lines) + "\n"


def _missing(source: Path, study: str) -> str:
    return (
        f"Not measured yet: {source} is missing (`python -m calipers.calibration.{study} "
        f"--json {source}` writes it)."
    )


def _load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not JSON ({exc.msg}, line {exc.lineno})",
            hint="Write it again with the study's --json option.",
        ) from exc
    if not isinstance(body, dict) or not isinstance(body.get("cells"), list):
        raise InputError(
            f"{path} has no list of `cells`: not a study's figures",
            hint="Write it again with the study's --json option.",
        )
    return body


def sections(ppi: Path = PPI_JSON, ranks: Path = RANK_JSON, cost: Path = COST_JSON) -> str:
    """The sections, between the markers, from the studies' JSON files (a missing file says
    how to make it)."""
    body = ppi_section(_load(ppi), ppi) + "\n" + rank_section(_load(ranks), ranks)
    body += "\n" + cost_section(_load(cost), cost) + selection_section(_load(SELECTION_JSON))
    body += "\n" + families_section(_load(FAMILIES_JSON), FAMILIES_JSON)
    return f"{BEGIN}\n\n{body}\n{END}\n"


def splice(page: str, generated: str) -> str:
    """`page` with its generated sections replaced by `generated`, or `generated` added at the
    end when it has none."""
    if BEGIN in page and END in page:
        head, rest = page.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + generated.rstrip("\n") + tail
    return page.rstrip("\n") + "\n\n" + generated
