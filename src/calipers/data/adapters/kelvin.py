"""kelvin output directories (`kelvin check` writes `./kelvin/`, and `calipers check` the same
layout): `report.json` for the run, and per case `<case>/report.json`, `<case>/baseline/` and
`<case>/perturbations/<variant>/{input.md,output.json}`.

One sample per baseline and variant: `task` and `perturbation_of` the case, `sample_id` the variant
id (`baseline` for the baseline, whose noise-floor replays are epochs 1…), `perturbation` the kind
(the variant id up to its first `-`), `decision` the decision value, `error` why it failed. A
variant the case report does not list (kelvin 0.3.0 leaves swap_condition variants out of it) is
read from its `output.json` with the run's decision field. The run is named after the directory
(its parent's name when the directory is called `kelvin`) unless `--run` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters.unimported import Unimported, held
from calipers.data.adapters.values import Rows, key
from calipers.data.decision import DecisionField, DecisionFieldMissing
from calipers.errors import InputError

REPORT = "report.json"
TOOL = "kelvin"
RUN_READ = {"schema_version", "decision_field", "cases"}
CASE_READ = {"schema_version", "case", "baseline", "perturbations", "noise_floor"}
VARIANT_READ = {"variant_id", "kind", "invocation"}
VARIANT_SKIPPED = {
    "notes": "how the variant was made (kelvin's perturbation parameters)",
    "distance": "kelvin's distance of the variant's decision from the baseline's",
    "input_path": "where kelvin wrote the variant's input",
    "output_path": "where kelvin wrote the variant's output",
}
CONFIG = {"seed", "only", "governing_types", "single_case_run", "warnings", "caps"}


def detect(path: Path) -> bool:
    """A directory whose report.json has kelvin's run fields."""
    report = path / REPORT
    if not (path.is_dir() and report.is_file()):
        return False
    try:
        data = jsontext.loads_tool(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "kelvin_score" in data and "cases" in data


def _load(path: Path, what: str) -> dict[str, Any]:
    try:
        data = jsontext.loads_tool(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{path}: missing ({what})",
            hint="Pass the directory kelvin or `calipers check` wrote (it holds report.json).",
        ) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not readable JSON ({what}): {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object ({what})")
    return data


def run_name(path: Path) -> str:
    resolved = path.resolve()
    if resolved.name == "kelvin" and resolved.parent.name:
        return resolved.parent.name
    return resolved.name or "kelvin"


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every baseline and variant of a kelvin output directory as sample rows."""
    if not path.is_dir():
        raise InputError(
            f"{path}: not a directory",
            hint="--format kelvin reads the output directory of `kelvin check` (./kelvin).",
        )
    run_report = _load(path / REPORT, "the run report")
    if run_report.get("schema_version") != 1:
        raise InputError(
            f"{path / REPORT}: schema_version {run_report.get('schema_version')!r} is not "
            "supported (expected 1, kelvin 0.2–0.3)"
        )
    field = str(run_report.get("decision_field") or "")
    cases = (run_report.get("cases") or {}).get("run") or []
    run = run_name(path)
    rows: list[dict[str, Any]] = []
    left = Unimported(TOOL)
    _totals(path / REPORT, run_report, RUN_READ, left)
    for number, case in enumerate(cases):
        name = key(case, f"{path / REPORT}", f"cases.run[{number}]")
        rows += _case_rows(path, name, run, field, left)
    return Rows(rows, [], left.entries())


def _totals(file: Path, report: dict[str, Any], read: set[str], left: Unimported) -> None:
    """kelvin's scores (invariance, sensitivity, kelvin_score, their sample sizes): its summaries
    of the variants, which calipers' robustness scheme computes from the imported rows."""
    found = held(report)
    scores = found.pop("scores", None)
    for name, value in (scores if isinstance(scores, dict) else found).items():
        prefix = "scores." if isinstance(scores, dict) else ""
        if name in read:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            left.metric(file, prefix + name, "aggregate-only", "kelvin's summary of the variants",
                        kind="total", value=value)  # fmt: skip
        elif name not in CONFIG:
            left.field(file, prefix + name, "aggregate-only", "the report",
                       "kelvin's summary of the variants")  # fmt: skip
    config = {k: v for k, v in found.items() if k in CONFIG}
    left.fields(file, config, set(), dict.fromkeys(CONFIG, "kelvin's configuration"), "the report")


def _row(run: str, case: str, sample_id: str, kind: str, epoch: int = 0) -> dict[str, Any]:
    return {
        "run": run,
        "task": case,
        "sample_id": sample_id,
        "epoch": epoch,
        "perturbation": kind,
        "perturbation_of": case,
    }


def _case_rows(
    root: Path, case: str, run: str, field: str, left: Unimported
) -> list[dict[str, Any]]:
    case_dir = root / case
    report = _load(case_dir / REPORT, f"the report of case '{case}'")
    _totals(case_dir / REPORT, report, CASE_READ, left)
    baseline = report.get("baseline") or {}
    replays = (report.get("noise_floor") or {}).get("baseline_replays") or []
    rows = []
    first = _row(run, case, "baseline", "baseline")
    if baseline.get("ok"):
        first["decision"] = baseline.get("decision_value")
    else:
        first["error"] = baseline.get("error") or "baseline failed"
    rows.append(first)
    for epoch, value in enumerate(replays[1:], start=1):
        rows.append({**_row(run, case, "baseline", "baseline", epoch), "decision": value})
    listed = set()
    for number, p in enumerate(report.get("perturbations") or []):
        variant = key(
            p["variant_id"], f"{case_dir / REPORT}", f"perturbations[{number}].variant_id"
        )
        listed.add(variant)
        row = _row(run, case, variant, str(p.get("kind") or variant.split("-", 1)[0]))
        left.fields(case_dir / REPORT, held(p), VARIANT_READ, VARIANT_SKIPPED,
                    f"perturbations[{number}]", "perturbations[].")  # fmt: skip
        invocation = p.get("invocation") or {}
        if invocation.get("ok"):
            row["decision"] = invocation.get("decision_value")
        else:
            row["error"] = invocation.get("error") or "invocation failed"
        rows.append(row)
    variants_dir = case_dir / "perturbations"
    if baseline.get("ok") and variants_dir.is_dir():
        for variant_dir in sorted(p for p in variants_dir.iterdir() if p.is_dir()):
            if variant_dir.name not in listed:
                rows.append(_from_output(run, case, variant_dir, field))
    return rows


def _from_output(run: str, case: str, variant_dir: Path, field: str) -> dict[str, Any]:
    row = _row(run, case, variant_dir.name, variant_dir.name.split("-", 1)[0])
    output = variant_dir / "output.json"
    try:
        parsed = jsontext.loads_tool(output.read_text(encoding="utf-8"))
        if not isinstance(parsed, dict):
            raise ValueError("not a JSON object")
        row["decision"] = DecisionField.parse(field).lookup(parsed)
    except FileNotFoundError:
        row["error"] = "no output.json"
    except (OSError, ValueError) as exc:
        row["error"] = f"output.json: {exc}"
    except DecisionFieldMissing as exc:
        row["error"] = str(exc)
    return row
