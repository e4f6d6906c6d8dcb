"""ragas results and LangSmith experiment tables, made offline by ragas 0.4.3 and the langsmith
SDK 0.15.1 (tests/fixtures/importers/{ragas,langsmith}/make_fixtures.py), import to the tools'
own means; Braintrust's documented event shape (hand-made fixtures, see
tests/fixtures/importers/braintrust/README.md) is read as documented. Bad files are one clear
error naming the file, the record and the field."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from calipers.cli.main import main
from calipers.data.adapters import adapter_for, braintrust, langsmith, ragas
from calipers.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "importers"
RAGAS = FIXTURES / "ragas"
LANGSMITH = FIXTURES / "langsmith"
BRAINTRUST = FIXTURES / "braintrust"


def _mean(rows: list[dict], metric: str) -> tuple[float, int]:
    values = [r["scores"][metric] for r in rows if metric in r.get("scores", {})]
    return statistics.fmean(values), len(values)


def _scored(tmp_path: Path, paths: list[Path], metric: str) -> dict[str, float]:
    db, out = str(tmp_path / "s.duckdb"), tmp_path / "score.json"
    assert main(["import", *map(str, paths), "--db", db, "-q"]) == 0
    code = main(["score", "--db", db, "--scheme", "metric", "--metric", metric,
                 "--json", str(out), "-q"])  # fmt: skip
    assert code == 0
    return {run: r["composite"]["mean"] for run, r in json.loads(out.read_text())["runs"].items()}


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_ragas_results_give_ragas_means(suffix: str, tmp_path: Path) -> None:
    summary = json.loads((RAGAS / "summary.json").read_text())
    assert summary["ragas"] == "0.4.3"
    for system in ("lookup", "guess"):
        path = RAGAS / f"{system}.{suffix}"
        assert adapter_for(path, "auto") is ragas.read_rows
        rows = list(ragas.read_rows(path))
        assert {r["run"] for r in rows} == {system} and len(rows) == 6
        for metric, value in summary[system].items():
            assert _mean(rows, metric)[0] == pytest.approx(value)
    paths = [RAGAS / f"{s}.{suffix}" for s in ("lookup", "guess")]
    means = _scored(tmp_path, paths, "non_llm_string_similarity")
    assert means == pytest.approx(
        {s: summary[s]["non_llm_string_similarity"] for s in ("lookup", "guess")}
    )


def test_ragas_pairs_systems_by_question_and_notes_text(tmp_path: Path) -> None:
    ids = [
        {r["sample_id"] for r in ragas.read_rows(RAGAS / f"{s}.csv")} for s in ("lookup", "guess")
    ]
    assert ids[0] == ids[1]
    text = (RAGAS / "lookup.csv").read_text().replace(",1.0,1.0,1.0\n", ",high,1.0,1.0\n", 1)
    path = tmp_path / "lookup.csv"
    path.write_text(text)
    rows = ragas.read_rows(path)
    assert any("scores.exact_match is a string in 1 record" in w for w in rows.warnings)


@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_langsmith_tables_give_the_sdks_means(suffix: str, tmp_path: Path) -> None:
    summary = json.loads((LANGSMITH / "summary.json").read_text())
    assert summary["langsmith"] == "0.15.1"
    for name in ("lookup", "guess"):
        path = LANGSMITH / f"{name}.{suffix}"
        assert adapter_for(path, "auto") is langsmith.read_rows
        rows = list(langsmith.read_rows(path))
        for key, shown in summary[name].items():
            mean, count = _mean(rows, key)
            assert count == shown["count"] and mean == pytest.approx(shown["mean"])
    guess = list(langsmith.read_rows(LANGSMITH / f"guess.{suffix}"))
    assert {r["epoch"] for r in guess} == {0, 1} and len({r["sample_id"] for r in guess}) == 6
    assert sum("error" in r for r in guess) == 2  # the question it had no guess for, twice
    paths = [LANGSMITH / f"{n}.{suffix}" for n in ("lookup", "guess")]
    means = _scored(tmp_path, paths, "overlap")
    assert means == pytest.approx({n: summary[n]["overlap"]["mean"] for n in ("lookup", "guess")})


def test_a_bad_langsmith_table_names_the_item(tmp_path: Path) -> None:
    data = json.loads((LANGSMITH / "lookup.json").read_text())
    data[3]["example_id"] = None
    path = tmp_path / "lookup.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"lookup\.json, item 3, field 'example_id'"):
        langsmith.read_rows(path)


def test_braintrust_events_read_as_documented() -> None:
    base = list(braintrust.read_rows(BRAINTRUST / "baseline.json"))
    cand = list(braintrust.read_rows(BRAINTRUST / "candidate.jsonl"))
    assert adapter_for(BRAINTRUST / "baseline.json", "auto") is braintrust.read_rows
    assert adapter_for(BRAINTRUST / "candidate.jsonl", "auto") is braintrust.read_rows
    assert len(base) == 3 and len(cand) == 4  # root spans only; a second trial is epoch 1
    assert {r["sample_id"] for r in base} == {r["sample_id"] for r in cand}
    assert [r["tokens_in"] for r in base] == [12, 10, 11]  # summed from the llm spans
    assert _mean(base, "overlap")[0] == pytest.approx((1 + 0 + 1 / 3) / 3)
    (failed,) = [r for r in cand if "error" in r]
    assert "scores" not in failed and failed["error"].startswith("RateLimitError")


def test_a_bad_braintrust_export_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "exp.json"
    events = json.loads((BRAINTRUST / "baseline.json").read_text())["events"]
    events[0]["scores"] = [1, 0]
    path.write_text(json.dumps({"events": events}))
    with pytest.raises(InputError, match=r"exp\.json, event 0, field 'scores'"):
        braintrust.read_rows(path)
    assert main(["import", str(path), "--db", str(tmp_path / "s.duckdb")]) == 1
    assert "Traceback" not in capsys.readouterr().err
