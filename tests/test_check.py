"""`calipers check` end to end on the six reference cases with a deterministic pipeline: kelvin's
numbers and layout, the store, faults recorded per variant, exit codes, a run killed and resumed,
and inputs that try to escape (shell or directory)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from calipers.cli.main import main
from calipers.running.cases import load_cases
from calipers.running.perturb import generate_variants
from conftest import validate_schema

ROOT = Path(__file__).parent.parent
CASES = Path(__file__).parent / "fixtures" / "kelvin" / "cases"
EXPERIMENT = CASES.parent / "experiments" / "pillar2_decomposition_demo"
PIPELINE = Path(__file__).parent / "fixtures" / "pipelines" / "stage_pipeline.py"
CALIPERS = Path(sys.executable).parent / "calipers"


def project(
    tmp_path: Path,
    *,
    decision_field: str = "stage_assessment",
    extra: str = "",
    cases: Path = CASES,
) -> Path:
    """A directory with kelvin.yaml, a copy of the cases and nothing else (`extra` may set
    timeout_s again: it replaces the default, since a key given twice is refused)."""
    root = tmp_path / "project"
    shutil.copytree(cases, root / "cases")
    timeout = "" if extra.startswith("timeout_s:") else "timeout_s: 20\n"
    (root / "kelvin.yaml").write_text(
        f'run: "{sys.executable} {PIPELINE} {{input}} {{output}}"\n'
        f"cases: cases\ndecision_field: {decision_field}\n"
        f"governing_types: [gate_rule]\nseed: 0\n{timeout}{extra}"
    )
    return root


def check(root: Path, *args: str) -> int:
    return main(["check", "--config", str(root / "kelvin.yaml"), "--db",
                 str(root / "store.duckdb"), "-q", *args])  # fmt: skip


def report(root: Path, case: str | None = None) -> dict[str, Any]:
    path = root / "kelvin" / (f"{case}/report.json" if case else "report.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_check_writes_kelvins_layout_and_scores(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert check(root) == 0
    run = report(root)
    assert run["schema_version"] == 1 and run["seed"] == 0
    assert run["cases"]["baseline_ok"] == sorted(p.stem for p in CASES.glob("*.md"))
    assert run["invariance_sample"] == 54 and run["sensitivity_sample"] == 6
    # the numbers, recomputed from the per-case reports kelvin's way
    distances = [
        p["distance"]
        for case in run["cases"]["run"]
        for p in report(root, case)["perturbations"]
        if p["kind"] != "swap"
    ]
    assert run["invariance"] == pytest.approx(1 - sum(distances) / len(distances))
    assert run["kelvin_score"] == pytest.approx(2 - run["invariance"] - run["sensitivity"])
    assert run["intervals"]["invariance"]["n_units"] == len(run["cases"]["run"])  # cases as units
    case = report(root, "artisanflow")
    assert case["baseline"]["decision_value"] == "build"
    for p in case["perturbations"]:
        variant = root / "kelvin" / "artisanflow" / "perturbations" / p["variant_id"]
        assert (variant / "input.md").is_file() and (variant / "output.json").is_file()
    baseline = (root / "kelvin" / "artisanflow" / "baseline" / "input.md").read_text()
    written_by_kelvin = EXPERIMENT / "artisanflow" / "baseline" / "input.md"
    assert baseline == written_by_kelvin.read_text()


def published(kind: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["schema", "--report", kind]) == 0
    schema: dict[str, Any] = json.loads(capsys.readouterr().out)
    return schema


def test_store_and_directory_give_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    assert check(root, "--run", "stage-v1") == 0
    expected = report(root)
    validate_schema(expected, published("check", capsys))
    capsys.readouterr()
    assert main(["score", "--scheme", "robustness", "--db", str(root / "store.duckdb"),
                 "--json", "-"]) == 0  # fmt: skip
    scored = json.loads(capsys.readouterr().out)
    validate_schema(scored, published("robustness", capsys))
    stored = scored["runs"]["stage-v1"]
    assert main(["score", str(root / "kelvin"), "--scheme", "robustness", "--json", "-"]) == 0
    imported = json.loads(capsys.readouterr().out)["runs"]["project"]
    for scores in (stored, imported):
        for key in ("invariance", "invariance_sample", "sensitivity", "kelvin_score"):
            assert scores[key] == expected[key]


def test_a_warm_rerun_invokes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("STAGE_LOG", str(log))
    assert check(root) == 0
    first = log.read_text().splitlines()
    assert len(first) == 6 + 60  # baselines and variants, once each
    assert check(root) == 0
    assert log.read_text().splitlines() == first
    assert report(root)["calipers"] == {"invocations": 0, "cached": 66, "run": "check"}
    assert check(root, "--no-cache") == 0
    assert len(log.read_text().splitlines()) == 2 * 66


def test_a_warm_rerun_leaves_the_job_files_in_place(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert check(root) == 0
    first = report(root)
    files = sorted((root / "kelvin").rglob("*/input.md")) + sorted(
        (root / "kelvin").rglob("*/output.json")
    )
    assert len(files) == 2 * 66

    def stamps() -> list[tuple[int, int, bytes]]:
        return [(p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in files]

    before = stamps()
    assert check(root) == 0
    assert stamps() == before  # neither rewritten nor renamed over: same inode, same time
    second = report(root)
    assert second.pop("calipers") == {"invocations": 0, "cached": 66, "run": "check"}
    assert first.pop("calipers")["invocations"] == 66
    assert second == first
    changed = root / "kelvin" / "envelop" / "baseline"
    (changed / "input.md").write_text("edited\n")
    (changed / "output.json").write_text('{"stage_assessment": "edited"}')
    assert check(root) == 0  # edited files are put back, from the case and from the cache
    after = {p: b for p, (*_, b) in zip(files, stamps(), strict=True)}
    for path, (*_, held) in zip(files, before, strict=True):
        if path.suffix == ".json":  # the cached value, in calipers' layout where it was edited
            assert json.loads(after[path]) == json.loads(held)
        else:
            assert after[path] == held
    assert report(root) == {**first, "calipers": {"invocations": 0, "cached": 66, "run": "check"}}


def test_seed_and_only(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert check(root, "--only", "meridian", "--seed", "7") == 0
    run = report(root)
    assert run["seed"] == 7 and run["only"] == "meridian"
    assert run["cases"]["run"] == ["meridian"]
    case = load_cases(root / "cases")
    expected = generate_variants(
        next(c for c in case if c.name == "meridian"), case, seed=7, governing_types=["gate_rule"]
    )
    for p in expected.perturbations:
        written = root / "kelvin" / "meridian" / "perturbations" / p.variant_id / "input.md"
        assert written.read_text() == p.text


def test_nested_decision_field(tmp_path: Path) -> None:
    root = project(tmp_path, decision_field="result.stage")
    assert check(root) == 0
    assert report(root, "artisanflow")["baseline"]["decision_value"] == "build"


def faults_for(root: Path, wanted: dict[str, str]) -> dict[str, str]:
    """Map the input of chosen variants of 'envelop' to faults (by the hash of their text)."""
    cases = load_cases(root / "cases")
    envelop = next(c for c in cases if c.name == "envelop")
    batch = generate_variants(envelop, cases, seed=0, governing_types=["gate_rule"])
    variants = {p.variant_id: p.text for p in batch.perturbations}
    return {digest(variants[v]): fault for v, fault in wanted.items()}


def test_faults_are_recorded_per_variant_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5 s: the 50 MB output of "big" took over 2 s on a loaded 2-core machine (2026-11-27)
    root = project(tmp_path, extra="timeout_s: 5\n")
    wanted = {
        "reorder-01": "exit", "reorder-02": "timeout", "reorder-03": "invalid",
        "pad_length-01": "missing", "pad_length-02": "binary", "pad_length-03": "big",
    }  # fmt: skip
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps(faults_for(root, wanted)))
    monkeypatch.setenv("STAGE_FAULTS", str(faults))
    assert check(root) == 0
    by_id = {p["variant_id"]: p for p in report(root, "envelop")["perturbations"]}
    errors = {v: by_id[v]["invocation"]["error"] for v in wanted}
    assert "exited with code 4" in errors["reorder-01"]
    assert "pipeline broke on purpose" in by_id["reorder-01"]["invocation"]["stderr_tail"]
    assert "timed out after 5s" in errors["reorder-02"]
    assert "not valid JSON" in errors["reorder-03"]
    assert "'stage_assessment' missing" in errors["pad_length-01"]
    assert "could not read the output file" in errors["pad_length-02"]
    assert errors["pad_length-03"] is None and by_id["pad_length-03"]["distance"] == 0.0
    for v in wanted:
        if v != "pad_length-03":
            assert by_id[v]["distance"] is None and by_id[v]["invocation"]["ok"] is False
    run = report(root)
    assert run["failed_variants"] == 5
    assert run["invariance_sample"] == 54 - 5  # failures are left out, not counted as 0 or 1
    assert run["cases"]["baseline_ok"] == sorted(p.stem for p in CASES.glob("*.md"))


def test_every_baseline_failing_exits_2_with_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    cases = load_cases(root / "cases")
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({digest(c.render()): "exit" for c in cases}))
    monkeypatch.setenv("STAGE_FAULTS", str(faults))
    assert check(root) == 2
    assert "every baseline failed" in capsys.readouterr().err
    run = report(root)
    assert len(run["cases"]["baseline_failed"]) == 6 and run["invariance"] is None


def test_a_baseline_without_the_decision_field_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, decision_field="verdict")
    assert check(root) == 2
    err = capsys.readouterr().err
    assert "'verdict' missing" in err and "stage_assessment" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("yaml_change", "message"),
    [
        ("governing_types: [gate_rules]\n", "gate_rules"),
        ("cases: nowhere\n", "does not exist"),
    ],
)
def test_config_and_cases_problems_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], yaml_change: str, message: str
) -> None:
    root = project(tmp_path)
    config = root / "kelvin.yaml"
    key = yaml_change.split(":")[0]
    lines = [line for line in config.read_text().splitlines() if not line.startswith(key)]
    config.write_text("\n".join(lines) + "\n" + yaml_change)
    assert check(root) == 1
    assert message in capsys.readouterr().err
    assert not (root / "kelvin").exists()


def test_no_config_points_to_init(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 1
    assert "calipers init" in capsys.readouterr().err


def test_init_scaffolds_a_project_that_checks_green(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["init", str(tmp_path / "new")]) == 0
    monkeypatch.chdir(tmp_path / "new")
    assert main(["check", "--db", "s.duckdb", "-q"]) == 0
    run = json.loads(Path("kelvin/report.json").read_text())
    assert run["sensitivity"] == 1.0 and run["invariance_sample"] == 27
    assert main(["init", str(tmp_path / "new")]) == 1  # never overwrites


# --- security ---------------------------------------------------------------------------------


HOSTILE = """Preamble with $(touch pwned-preamble) and `touch pwned-backtick`.

## Gate Rule
Advance from Seed to Build requires: "quotes", 'single'; rm -rf {home} ; touch pwned-semicolon
All conditions are met. $(touch pwned-gate) && echo `id` > pwned-id

## Team
Line one
'; touch pwned-quote; echo '
"$(touch pwned-dq)"
"""


def test_case_text_never_executes(tmp_path: Path) -> None:
    cases = tmp_path / "hostile-cases"
    cases.mkdir()
    for name in ("alpha", "beta"):
        (cases / f"{name}.md").write_text(HOSTILE.format(home=tmp_path))
    root = project(tmp_path, cases=cases)
    assert check(root) == 0
    assert not list(root.rglob("pwned*")) and not list(tmp_path.rglob("pwned*"))
    assert report(root, "alpha")["baseline"]["decision_value"] == "build"
    assert (root / "cases" / "alpha.md").exists()  # nothing was removed


def test_names_that_escape_the_output_directory_are_refused(tmp_path: Path) -> None:
    cases = tmp_path / "escape-cases"
    cases.mkdir()
    for name in ("alpha", "beta"):
        (cases / f"{name}.md").write_text("## ../../evil\n\nbody\n\n## Team\n\nt\n")
    root = project(tmp_path, cases=cases)
    config = root / "kelvin.yaml"
    config.write_text(config.read_text().replace("[gate_rule]", '["../../evil"]'))
    assert check(root) == 1
    assert not (root / "kelvin").exists() and not (tmp_path / "evil").exists()
    assert not list(tmp_path.rglob("*evil*-01"))


def test_a_case_file_named_dot_dot_is_refused(tmp_path: Path) -> None:
    cases = tmp_path / "dots"
    cases.mkdir()
    (cases / "...md").write_text("## Gate Rule\n\nAdvance from A to B requires: x.\n")  # stem ".."
    (cases / "ok.md").write_text("## Gate Rule\n\nAdvance from A to B requires: y.\n")
    root = project(tmp_path, cases=cases)
    assert check(root) == 1
    assert not (root / "kelvin").exists() and not (root / "baseline").exists()


# --- a run killed part-way ----------------------------------------------------------------------


def run_cli(root: Path, log: Path, out: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "STAGE_LOG": str(log), "STAGE_SLEEP": "0.05"}
    return subprocess.Popen(
        [str(CALIPERS), "check", "--config", str(root / "kelvin.yaml"), "--out",
         str(root / out), "-j", "2", "-q", "--no-store"],
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def scores_of(path: Path) -> dict[str, Any]:
    run = json.loads((path / "report.json").read_text())
    keys = ("invariance", "invariance_sample", "sensitivity", "sensitivity_sample",
            "kelvin_score", "sensitivity_by_type", "cases", "warnings", "caps")  # fmt: skip
    per_case = {
        c: [
            (p["variant_id"], p["invocation"]["decision_value"], p["distance"])
            for p in json.loads((path / c / "report.json").read_text())["perturbations"]
        ]
        for c in run["cases"]["run"]
    }
    return {**{k: run[k] for k in keys}, "per_case": per_case}


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_report_without_repeating_work(tmp_path: Path) -> None:
    reference_root = project(tmp_path / "a")
    assert run_cli(reference_root, tmp_path / "a.log", "kelvin").wait(timeout=120) == 0
    root = project(tmp_path / "b")
    log = tmp_path / "b.log"
    proc = run_cli(root, log, "kelvin")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        not log.exists() or len(log.read_text().splitlines()) < 25
    ):
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = log.read_text().splitlines()
    assert 25 <= len(before) < 66  # killed part-way
    assert run_cli(root, log, "kelvin").wait(timeout=120) == 0
    calls = log.read_text().splitlines()
    repeated = len(calls) - len(set(calls))
    assert repeated <= 2  # at most the invocations in flight (-j 2) when it was killed
    assert set(calls) == set((tmp_path / "a.log").read_text().splitlines())
    assert scores_of(root / "kelvin") == scores_of(reference_root / "kelvin")
