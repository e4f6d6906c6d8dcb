"""The ReasonScore leaderboard: tiers in difficulty order (known names, numbers, observed
difficulty, or as given), runs ranked only within groups that cover the same (tier, task) pairs,
and the --run filter. Every number here is computed by the scheme from samples; expectations are
derived from those computed numbers or from the rules in docs/reasonscore.md."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import calipers
from calipers.cli.main import main
from calipers.demo.synthetic import DEMO_MODELS, generate_samples
from calipers.errors import DataError, InputError
from calipers.report.score_pages import score_page
from calipers.schemes.reasonscore import ReasonScoreResult
from calipers.schemes.reasonscore.html import _difficulty_curves
from calipers.schemes.reasonscore.ordering import order_tiers


def rows(
    run: str,
    tiers: dict[str, int],
    tasks: tuple[str, ...] = ("a", "b"),
    *,
    n: int = 20,
    tokens: int = 100,
    points: tuple[str, ...] = ("p1",),
) -> list[dict[str, Any]]:
    """`n` samples per (tier, task, point), `tiers[tier]` of them right, no guessing."""
    out = []
    for tier, correct in tiers.items():
        for task in tasks:
            for point in points:
                out += [
                    {
                        "run": run,
                        "task": task,
                        "tier": tier,
                        "point": point,
                        "sample_id": f"{tier}/{task}/{point}/{i}",
                        "correct": i < correct,
                        "guess_chance": 0.0,
                        "tokens_out": tokens,
                    }
                    for i in range(n)
                ]
    return out


def write(path: Path, samples: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path


def score(make_samples: Any, samples: list[dict[str, Any]], **options: Any) -> ReasonScoreResult:
    result = calipers.score(make_samples(samples), "reasonscore", **options)
    assert isinstance(result, ReasonScoreResult)
    return result


# ----------------------------------------------------------------------------- tier order


def test_known_names_in_difficulty_order_whatever_the_runs_have(make_samples: Any) -> None:
    # run "a" (first by name) has no medium tier: first-seen order would be easy, hard, medium
    samples = rows("a", {"easy": 18, "hard": 6}) + rows("b", {"hard": 5, "Medium": 9, "easy": 17})
    samples += rows("c", {"extreme": 2, "trivial": 20})
    result = score(make_samples, samples)
    assert result.tier_order == ["trivial", "easy", "Medium", "hard", "extreme"]
    assert result.tier_order_rule == "vocabulary"
    assert list(result.runs["a"].tiers) == ["easy", "hard"]
    assert list(result.runs["b"].tiers) == ["easy", "Medium", "hard"]
    report = result.to_dict()
    assert list(report["runs"]["b"]["tiers"]) == ["easy", "Medium", "hard"]
    assert [g["tiers"] for g in report["groups"]] == [
        ["easy", "Medium", "hard"],
        ["easy", "hard"],
        ["trivial", "extreme"],
    ]


def test_difficulty_curves_follow_the_tier_order(make_samples: Any) -> None:
    samples = rows("a", {"easy": 18, "hard": 6}, points=("x=8", "x=16"))
    samples += rows("b", {"hard": 5, "medium": 9, "easy": 17}, points=("x=8", "x=16"))
    report = score(make_samples, samples).to_dict()
    order = [name for g in report["groups"] for name in g["ranking"]]
    panels = _difficulty_curves(report["runs"], report["tier_order"], order)
    labels, series = panels["a"]
    assert labels == [f"{t}: x={p}" for t in ("easy", "medium", "hard") for p in (8, 16)]
    # the curve of each run falls from tier to tier (no V from a misplaced tier); a run without a
    # tier has gaps there
    for name, values in series.items():
        known = [v for v in values if v is not None]
        assert known == sorted(known, reverse=True), name
    assert series["a"][2:4] == [None, None]


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        (["10", "2", "1"], ["1", "2", "10"]),
        (["L10", "L2", "l1"], ["l1", "L2", "L10"]),
        (["depth=16", "depth=2", "depth=4"], ["depth=2", "depth=4", "depth=16"]),
        (["0.5", "-1", "2"], ["-1", "0.5", "2"]),
    ],
)
def test_numbered_tiers_in_numeric_order(
    make_samples: Any, tiers: list[str], expected: list[str]
) -> None:
    # the scores rise with the number, so only the rule (not observed difficulty) gives `expected`
    samples = rows("m", {tier: 2 + 3 * k for k, tier in enumerate(tiers)})
    result = score(make_samples, samples)
    assert (result.tier_order, result.tier_order_rule) == (expected, "numeric")


def test_unknown_names_by_observed_difficulty(make_samples: Any) -> None:
    samples = rows("a", {"basic": 19, "tricky": 4, "normal": 11})
    samples += rows("b", {"basic": 17, "tricky": 7, "normal": 12})
    result = score(make_samples, samples)
    mean = {
        t: sum(r.tiers[t].score for r in result.runs.values()) / 2  # type: ignore[misc]
        for t in ("basic", "tricky", "normal")
    }
    assert result.tier_order == sorted(mean, key=lambda t: -mean[t])
    assert result.tier_order == ["basic", "normal", "tricky"]
    assert result.tier_order_rule == "observed"
    assert any("observed difficulty" in n and "--tier-order" in n for n in result.notes)


def test_unknown_names_merged_into_known_ones_by_their_mean(make_samples: Any) -> None:
    samples = rows("m", {"warmup": 20, "easy": 16, "expert": 2, "hard": 6, "medium": 11})
    result = score(make_samples, samples)
    score_of = {t: s.score for t, s in result.runs["m"].tiers.items()}
    assert score_of["warmup"] > score_of["easy"] and score_of["expert"] < score_of["hard"]
    assert result.tier_order == ["warmup", "easy", "medium", "hard", "expert"]
    samples = rows("m", {"easy": 15, "medium": 9, "hard": 3, "x": 12})
    assert score(make_samples, samples).tier_order == ["easy", "x", "medium", "hard"]
    # the known names keep their order even when the scores disagree; an unknown one goes before
    # the first known tier with a lower mean (here easy, 9 right against x's 12)
    samples = rows("m", {"easy": 9, "medium": 15, "hard": 3, "x": 12})
    assert score(make_samples, samples).tier_order == ["x", "easy", "medium", "hard"]


def test_order_rule_on_given_means() -> None:
    scores = {"easy": [900.0], "hard": [300.0], "u1": [950.0], "u2": [None], "u3": [500.0]}
    order = order_tiers(["hard", "u3", "easy", "u1", "u2"], scores)
    assert order.tiers == ("u1", "easy", "u3", "hard", "u2")  # undefined last
    assert order_tiers(["x10", "y2"], {}).rule == "observed"  # two prefixes: not numbered
    assert order_tiers(["default"], {"default": [1.0]}).notes == ()  # one tier: nothing inferred


def test_given_order_overrides_in_python_and_on_the_command_line(
    make_samples: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = rows("a", {"easy": 18, "medium": 10, "hard": 6}) + rows("b", {"x": 3, "easy": 15})
    result = score(make_samples, samples, tier_order=["hard", "medium", "easy", "nope"])
    assert result.tier_order == ["hard", "medium", "easy", "x"]
    assert result.tier_order_rule == "given"
    assert result.parameters["tier_order"] == ["hard", "medium", "easy", "nope"]
    assert any("nope" in n for n in result.notes) and any("x" in n for n in result.notes)
    assert score(make_samples, samples, tier_order="hard, easy").tier_order[:2] == ["hard", "easy"]
    for bad in ("easy,,hard", "easy,easy", ""):
        with pytest.raises(InputError, match="tier_order"):
            score(make_samples, samples, tier_order=bad if bad else [])
    data = write(tmp_path / "s.jsonl", samples)
    code = main(["leaderboard", str(data), "--tier-order", "hard,medium,easy,x", "--json", "-"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tier_order"] == ["hard", "medium", "easy", "x"]
    assert [g["tiers"] for g in report["groups"]] == [["hard", "medium", "easy"], ["easy", "x"]]
    assert main(["leaderboard", str(data), "--tier-order", "hard,medium,easy"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"hard\s*┃\s*medium\s*┃\s*easy", out)
    assert "easiest first (as given): hard, medium, easy, x" in out
    assert main(["leaderboard", str(data), "--tier-order", "hard,hard"]) == 1
    assert "names a tier twice: hard" in capsys.readouterr().err


# ----------------------------------------------------------------------------- groups


@pytest.fixture(scope="module")
def users_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three runs of every task in three tiers, and a 2-token fixture with one task in one tier."""
    samples = list(generate_samples(models=DEMO_MODELS[:3], samples_per_point=4, epochs=1))
    samples += rows("fixture", {"easy": 4}, ("arithmetic",), n=4, tokens=2)
    return write(tmp_path_factory.mktemp("lb") / "users_case.jsonl", samples)


def test_a_run_with_fewer_tasks_is_not_ranked_against_runs_with_all(users_case: Path) -> None:
    result = calipers.score(users_case, "reasonscore")
    assert isinstance(result, ReasonScoreResult)
    full = [m.name for m in DEMO_MODELS[:3]]
    fixture = result.runs["fixture"]
    # in one list the fixture would lead: its score/token beats every complete run's
    assert all(fixture.score_per_token > result.runs[n].score_per_token for n in full)  # type: ignore[operator]
    groups = result.groups()
    assert [sorted(r.run for r in g.runs) for g in groups] == [sorted(full), ["fixture"]]
    first, alone = groups
    assert first.ranked and not alone.ranked
    per_token = [r.score_per_token for r in first.runs]
    assert per_token == sorted(per_token, reverse=True)  # type: ignore[type-var]
    assert first.shared.tiers == ("easy", "medium", "hard") and len(first.shared.tasks) == 12
    assert first.shared.full
    assert alone.shared.pairs == (("easy", ("arithmetic",)),)
    assert first.pareto_frontier() and set(first.pareto_frontier()) <= set(full)
    assert any("2 groups" in n for n in result.notes)
    frame = result.to_frame("run").set_index("run")
    assert frame.loc["fixture", "group"] == 2 and frame["rank"].isna()["fixture"]
    assert [frame.loc[r.run, "rank"] for r in first.runs] == [1, 2, 3]
    with pytest.raises(DataError, match="groups"):
        result.ranked()
    with pytest.raises(DataError, match="groups"):
        result.pareto_frontier()


def test_the_leaderboard_shows_each_group_with_what_it_shares(
    users_case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json = tmp_path / "lb.json"
    assert main(["leaderboard", str(users_case), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    report = json.loads(out_json.read_text())
    first, alone = report["groups"]
    assert alone == {
        "tiers": ["easy"],
        "tasks": ["arithmetic"],
        "pairs": {"easy": ["arithmetic"]},
        "ranked": False,
        "ranking": ["fixture"],
        "pareto_frontier": ["fixture"],
        "rank_intervals": None,  # a lone run has no rank to bound
    }
    ranks = first["rank_intervals"]  # the three comparable runs: ranks with intervals
    assert sorted(r["run"] for r in ranks["runs"]) == sorted(first["ranking"])
    assert [r["run"] for r in ranks["runs"]] == first["ranking"]
    assert all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in ranks["runs"])
    assert "group 1 of 2 · 3 runs ranked by score/token, sharing tiers easy, medium, hard × 12 " \
        "tasks" in " ".join(out.split())  # fmt: skip
    assert "group 2 of 2 · not ranked: the only run with tier easy × 1 task: arithmetic" in (
        " ".join(out.split())
    )
    lines = out.splitlines()
    ranked_rows = [line for line in lines if re.match(r"│\d+ ", line)]
    assert [row.split("│")[2].strip() for row in ranked_rows] == first["ranking"]
    assert next(line for line in lines if "fixture" in line).startswith("│— ")
    # the page: one table per group, the lone run unranked, the shared tiers and tasks named
    page = score_page(report)
    tables = re.findall(r'<table id="(leaderboard[^"]*)" class="leaderboard">(.*?)</table>', page,
                        re.S)  # fmt: skip
    assert [t[0] for t in tables] == ["leaderboard", "leaderboard-2"]
    cells = [re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td>", t[1]) for t in tables]
    assert [name.removesuffix(" ◆") for _, name in cells[0]] == first["ranking"]
    assert [rank for rank, _ in cells[0]] == ["1", "2", "3"]
    assert cells[1] == [("—", "fixture")]
    assert "fixture is the only run with tier easy × 1 task: arithmetic" in page
    assert "Group 2 of 2 · not ranked" in page


def test_runs_missing_one_pair_are_another_group(make_samples: Any) -> None:
    samples = rows("a", {"easy": 15, "hard": 8}) + rows("b", {"easy": 12, "hard": 9})
    samples += [
        s for s in rows("c", {"easy": 14, "hard": 7}) if (s["tier"], s["task"]) != ("hard", "b")
    ]
    samples += rows("d", {"easy": 13, "hard": 6}, tasks=("a", "b", "c"))
    result = score(make_samples, samples)
    groups = result.groups()
    per_token = {n: result.runs[n].score_per_token or 0.0 for n in ("a", "b")}
    assert [[r.run for r in g.runs] for g in groups] == [
        sorted(per_token, key=lambda n: -per_token[n]),
        ["d"],  # alone, with more pairs (6) than c (3)
        ["c"],
    ]
    assert groups[2].heading() == "easy: a, b · hard: a"
    assert groups[0].heading() == "tiers easy, hard × 2 tasks: a, b"


def test_one_group_is_one_ranking(make_samples: Any) -> None:
    samples = rows("a", {"easy": 15, "hard": 8}, tokens=300) + rows("b", {"easy": 12, "hard": 9})
    result = score(make_samples, samples)
    assert len(result.groups()) == 1 and not any("groups" in n for n in result.notes)
    assert [r.run for r in result.ranked()] == [r.run for r in result.groups()[0].runs]


# ----------------------------------------------------------------------------- --run


def test_run_filter_on_a_file_and_on_the_store(
    users_case: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = [m.name for m in DEMO_MODELS[:3]]
    args = ["leaderboard", str(users_case), "--run", full[0], "--run", full[2], "--json", "-"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["runs"]) == sorted([full[0], full[2]])
    assert len(report["groups"]) == 1 and report["groups"][0]["ranked"]
    assert not any("groups" in n for n in report["notes"])
    db = tmp_path / "s.duckdb"
    assert main(["import", str(users_case), "--db", str(db), "-q"]) == 0
    assert main(["leaderboard", "--db", str(db), "--run", "fixture", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["runs"]) == ["fixture"] and report["groups"][0]["ranked"] is False
    assert main(["leaderboard", "--db", str(db), "--run", full[1]]) == 0
    out = capsys.readouterr().out
    assert full[1] in out and "fixture" not in out and full[0] not in out
    assert main(["leaderboard", "--db", str(db), "--run", "nope"]) == 1
    assert "no such run" in capsys.readouterr().err


def test_rank_intervals_reproduce_the_scores_and_are_seeded() -> None:
    """The bootstrap rescoring (guessing correction, truncation, tokens) reproduces every run's
    own score/token on the data — else the intervals are left out with a note — and the same
    seed gives the same intervals."""
    import calipers

    example = Path(__file__).parent.parent / "docs" / "examples" / "reasonscore.jsonl"
    first = calipers.score(example, "reasonscore", seed=4).to_dict()  # type: ignore[attr-defined]
    again = calipers.score(example, "reasonscore", seed=4).to_dict()  # type: ignore[attr-defined]
    assert not any("does not reproduce" in n for n in first["notes"])
    ranks = first["groups"][0]["rank_intervals"]
    assert ranks is not None and ranks["seed"] == 4
    assert ranks == again["groups"][0]["rank_intervals"]
