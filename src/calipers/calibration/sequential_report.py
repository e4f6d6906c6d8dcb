"""The sequential grid's targets, its section of docs/calibration.md and its JSON file.

`python -m calipers.calibration --sequential --full` runs the grid, writes
benchmarks/results/calibration_sequential.json and puts the section between its markers in the
page; the main grid's run (`make calibrate`) puts the section back from the JSON, so neither
run erases the other's figures.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calipers.calibration.sequential import ALPHA, TARGET_N, TARGET_POWER_LOSS
from calipers.errors import InputError

SEQUENTIAL_JSON = Path("benchmarks/results/calibration_sequential.json")
BEGIN = "<!-- sequential:begin (generated: python -m calipers.calibration --sequential) -->"
END = "<!-- sequential:end -->"
LABELS = {
    "hybrid": "hybrid",
    "sequence": "sequence (no N)",
    "sequence-N": "sequence (tuned at N)",
    "obf": "O'Brien–Fleming ×5",
    "pocock": "Pocock ×5",
}


@dataclass(frozen=True)
class Check:
    cell: str
    design: str
    what: str
    value: float
    target: float
    se: float
    upper: bool  # the value must be ≤ the target (else ≥)

    def excess(self) -> float:
        """How far the value is on the wrong side of the target, in standard errors."""
        gap = self.value - self.target if self.upper else self.target - self.value
        if gap <= 0:
            return 0.0
        return math.inf if self.se <= 0 else gap / self.se

    def describe(self) -> str:
        sign = "≤" if self.upper else "≥"
        return (
            f"{self.cell} {LABELS.get(self.design, self.design)}: {self.what} {self.value:.4f} "
            f"(target {sign} {self.target:.4f}, ± {self.se:.4f})"
        )


def checks(result: dict[str, Any]) -> list[Check]:
    """Every target a cell's figures are held to."""
    cell = result["cell"]
    out: list[Check] = []
    if cell.get("stress") == "naive":
        return out  # not a design: the contract's reason, shown, not held to a target
    for label, got in result["designs"].items():
        f = got["false"]
        out.append(
            Check(cell["id"], label, "false PROGRESS/REGRESS", f["rate"], ALPHA, f["se"], True)
        )
        if "false_ni" in got:
            g = got["false_ni"]
            out.append(
                Check(cell["id"], label, "false non-inferior", g["rate"], ALPHA, g["se"], True)
            )
        if label == "hybrid" and "power_loss" in got:
            p = got["power_loss"]
            out.append(
                Check(cell["id"], label, "power loss vs the fixed test", p["rate"],
                      TARGET_POWER_LOSS, p["se"], True)
            )  # fmt: skip
        if label in TARGET_N and "twice" in got:
            t = got["twice"]
            out.append(
                Check(cell["id"], label, "mean n/N at 2×MDE", t["mean_n"], TARGET_N[label],
                      t["se"], True)
            )  # fmt: skip
    return out


def assess(results: list[dict[str, Any]], *, allowance: float, noise: float) -> dict[str, Any]:
    """Failures (beyond `allowance` standard errors) and figures within noise (beyond 0, within
    `noise`), and whether every cell was reproducible."""
    failed, noisy = [], []
    for r in results:
        for c in checks(r):
            e = c.excess()
            if e > max(allowance, noise):
                failed.append(c)
            elif e > allowance:
                noisy.append(c)
    irreproducible = [r["cell"]["id"] for r in results if not r["reproducible"]]
    total = sum(len(checks(r)) for r in results)
    return {"checks": total, "failed": failed, "noisy": noisy, "irreproducible": irreproducible}


def _pct(x: float | None, se: float | None = None) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.1f}" + ("" if se is None else f"±{100 * se:.1f}")


def _mark(value: float, target: float, se: float, *, upper: bool) -> str:
    gap = (value - target) if upper else (target - value)
    if gap <= 0:
        return ""
    return " ≈" if se > 0 and gap / se <= 2 else " **✗**"


def section(body: dict[str, Any] | None, source: Path = SEQUENTIAL_JSON) -> str:
    """The section, rendered from the grid's JSON (a missing file says how to make it)."""
    lines = ["## Sequential designs (issue 36)", ""]
    if body is None:
        lines.append(
            f"Not measured yet: {source} is missing (`python -m calipers.calibration "
            f"--sequential --full --json {source} --out docs/calibration.md` writes it)."
        )
        return "\n".join(lines) + "\n"
    results = body["cells"]
    verdict = assess(results, allowance=body["allowance"], noise=body["noise"])
    m = body["machine"]
    noisy = f" ({len(verdict['noisy'])} within noise)" if verdict["noisy"] else ""
    reproducible = "every cell reproducible"
    if verdict["irreproducible"]:
        reproducible = "NOT reproducible: " + ", ".join(verdict["irreproducible"])
    lines += [
        "Simulated paired runs with known truth replayed through the sequential engine "
        "(`calipers.calibration.sequential`, docs/sequential.md) with **a look after every "
        "unit**. "
        f"`python -m calipers.calibration --sequential --{body['grid']}` on {m['date']}, "
        f"{m['cpu']} ({body['jobs']} workers, {body['wall_s'] / 60:.1f} min); seed "
        f"{body['seed']}, {body['reps_null']} runs per cell under the null, "
        f"{body['reps_alt']} per alternative; this section is rendered from {source}.",
        "",
        f"Targets: false PROGRESS or REGRESS (any pair, any look) ≤ {ALPHA} in every cell; false "
        f"non-inferior at a true drop of exactly the margin ≤ {ALPHA}; the hybrid's power at "
        f"the fixed-N MDE ≥ the fixed test's − {100 * TARGET_POWER_LOSS:.0f} points (the same "
        f"runs); the mean stop at twice the MDE ≤ {TARGET_N['hybrid']}·N (hybrid) and ≤ "
        f"{TARGET_N['sequence']}·N (the sequence with no N: the open-ended design); the same "
        "seed gives the same stops. A figure on the wrong side of its target by less than 2 "
        "Monte Carlo standard errors is marked ≈ (within noise), by more **✗**. "
        f"**{verdict['checks'] - len(verdict['failed'])} of {verdict['checks']} checks pass"
        f"{noisy}; {reproducible}.**",
        "",
        "Columns: the cell (model, N planned units, e5: five epochs averaged per unit, "
        "clustered: 5 items per unit, K3: three treatments, stress cases); MDE, the fixed "
        "test's at N; per design the false PROGRESS/REGRESS rate under the null (%), the "
        "power at the MDE (%; the hybrid's with the fixed test's beside it) and the mean stop "
        "at twice the MDE as a share of N (median in brackets).",
        "",
        "| cell | MDE | design | false P/R % | power at MDE % | n/N at 2×MDE |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        cell = r["cell"]
        if cell.get("margin") is not None:
            continue
        for label, got in r["designs"].items():
            f = got["false"]
            target = None if cell.get("stress") == "naive" else ALPHA
            mark = "" if target is None else _mark(f["rate"], ALPHA, f["se"], upper=True)
            power = "–"
            if "power" in got:
                power = _pct(got["power"]["rate"])
                if label == "hybrid":
                    loss = got["power_loss"]
                    power += f" (fixed {_pct(got['fixed_power']['rate'])}; "
                    power += f"−{_pct(loss['rate'], loss['se'])}"
                    power += _mark(loss["rate"], TARGET_POWER_LOSS, loss["se"], upper=True)
                    power += ")"
            twice = "–"
            if "twice" in got:
                t = got["twice"]
                twice = f"{t['mean_n']:.3f} ({t['median_n']:.2f})"
                if label in TARGET_N:
                    twice += _mark(t["mean_n"], TARGET_N[label], t["se"], upper=True)
            shown = f"`{cell['id']}`" + (" (no buffer: not a design)" if target is None else "")
            lines.append(
                f"| {shown} | {r['mde']:.4f} | {LABELS[label]} | {_pct(f['rate'], f['se'])}"
                f"{mark} | {power} | {twice} |"
            )
    margins = [r for r in results if r["cell"].get("margin") is not None]
    if margins:
        lines += [
            "",
            "Margin cells (`--margin M`, non-inferiority): false non-inferior when the "
            "candidate is truly worse by exactly M (%), and with no true difference the share "
            "shown non-inferior and the mean stop (share of N; the hybrid's fixed test at N "
            "alone in brackets).",
            "",
            "| cell | design | false P/R % | false non-inferior % | non-inferior at no difference | n/N |",  # noqa: E501
            "|---|---|---|---|---|---|",
        ]
        for r in margins:
            for label, got in r["designs"].items():
                f, g, ni = got["false"], got.get("false_ni"), got.get("ni", {})
                fixed = f" (fixed {_pct(ni['fixed'])})" if "fixed" in ni else ""
                lines.append(
                    f"| `{r['cell']['id']}` | {LABELS[label]} | {_pct(f['rate'], f['se'])}"
                    f"{_mark(f['rate'], ALPHA, f['se'], upper=True)} | "
                    + ("–" if g is None else _pct(g["rate"], g["se"])
                       + _mark(g["rate"], ALPHA, g["se"], upper=True))
                    + f" | {_pct(ni.get('rate'))}{fixed} | {ni.get('mean_n', math.nan):.3f} |"
                )  # fmt: skip
    cost = body.get("look_cost_ms")
    if cost:
        lines += [
            "",
            "What a look after every unit costs (`SequentialMonitor`, three pairs, a look after "
            "each unit, 1,000 units, the best of three runs): "
            + ", ".join(f"{LABELS[k]} {v:.3f} ms" for k, v in cost.items())
            + " per unit, all pairs together (target ≤ 1 ms).",
        ]
    failures = verdict["failed"] + verdict["noisy"]
    if failures:
        lines += ["", "Off target:", ""]
        lines += [
            f"- {'within noise' if c in verdict['noisy'] else 'FAIL'}: {c.describe()}"
            for c in failures
        ]
    return "\n".join(lines) + "\n"


def load(path: Path = SEQUENTIAL_JSON) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path} is not JSON ({exc.msg}, line {exc.lineno})",
            hint="Write it again: python -m calipers.calibration --sequential --json PATH.",
        ) from exc
    if not isinstance(body, dict) or not isinstance(body.get("cells"), list):
        raise InputError(f"{path} has no list of `cells`: not the sequential grid's figures")
    return body


def generated(path: Path = SEQUENTIAL_JSON) -> str:
    return f"{BEGIN}\n\n{section(load(path), path)}\n{END}\n"


def splice(page: str, text: str) -> str:
    """`page` with its sequential section replaced by `text`, or `text` added at the end."""
    if BEGIN in page and END in page:
        head, rest = page.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + text.rstrip("\n") + tail
    return page.rstrip("\n") + "\n\n" + text
