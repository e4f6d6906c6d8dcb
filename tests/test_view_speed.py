"""The faster paths behind `calipers view` (issue 37's speed targets) give what the slow ones gave:
the flips of a pair alone are the comparison's flips; rows sorted in numpy are the ORDER BY's; the
rank intervals' kept resamples are the drawn ones; the flips page shows its flips before the
comparison is made and its verdict after; the leaderboard computed ahead is the command's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

import calipers
from calipers.data.duck import ordered
from calipers.data.store import Store
from calipers.render.json_report import clean, dumps
from calipers.schemes import get_scheme
from calipers.stats import rankings
from calipers.view import create_app
from calipers.view.reading import Reader
from test_view_pages import build_store

BASE = "http://127.0.0.1"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five runs of 40 samples × 3 epochs with judges, human labels and errors."""
    return build_store(tmp_path_factory.mktemp("speed") / "store.duckdb")


def _same_flips(alone: Any, within: Any) -> None:
    assert dumps(clean(alone.to_dict())) == dumps(clean(within.to_dict()))
    assert alone.samples.keys() == within.samples.keys()
    for name, column in alone.samples.items():
        np.testing.assert_array_equal(column, within.samples[name], err_msg=name)


@pytest.mark.parametrize(
    ("scheme", "options"),
    [
        ("metric", {"metric": "correct"}),
        ("metric", {"metric": "accuracy", "errors": "worst", "confidence_level": 0.9}),
        ("layered", {}),
        ("layered", {"adjust": "bh", "flips": 3}),
    ],
)
def test_a_pairs_flips_alone_are_the_comparisons(
    db: Path, scheme: str, options: dict[str, Any]
) -> None:
    with Store(db, read_only=True) as store:
        runs = store.samples().runs()
        for candidate in runs[1:3]:
            within = calipers.compare(store.samples(), scheme, baseline=runs[0],
                                      candidates=[candidate], **options)  # fmt: skip
            alone = get_scheme(scheme).flips(  # type: ignore[attr-defined]
                store.samples(), baseline=runs[0], candidate=candidate, **options
            )
            _same_flips(alone, within.flips[candidate])


@pytest.mark.parametrize("kind", ["sparse", "dense", "repeated"])
def test_rows_sorted_in_numpy_are_the_order_by_s(kind: str) -> None:
    rng = np.random.default_rng(4)
    n = 5_000
    run, sid, epoch = rng.integers(0, 3, n), rng.permutation(n) % 1_700, rng.integers(0, 4, n)
    keys = np.unique(np.c_[run, sid, epoch], axis=0)  # unique keys, as stage_rows' are
    if kind == "dense":  # every sample in every epoch of every run: put in place, not sorted
        keys = np.array([(r, s, e) for r in range(3) for s in range(400) for e in range(3)])
    if kind == "repeated":  # a key twice (never in a store): sorted, the two in fetched order
        keys = np.r_[keys, keys[:50]]
    shuffled = keys[rng.permutation(len(keys))]
    value = np.ma.masked_array(rng.random(len(keys)), mask=rng.random(len(keys)) < 0.2)
    columns = {"run_code": shuffled[:, 0], "sid": shuffled[:, 1], "epoch": shuffled[:, 2],
               "value": value}  # fmt: skip
    got = ordered(columns, ("run_code", "sid", "epoch"))
    step = np.lexsort((shuffled[:, 2], shuffled[:, 1], shuffled[:, 0]))  # stable, as ORDER BY
    for name in ("run_code", "sid", "epoch"):
        np.testing.assert_array_equal(got[name], columns[name][step])
    assert np.ma.isMaskedArray(got["value"])  # NULLs stay NULL
    np.testing.assert_array_equal(got["value"].mask, value.mask[step])
    np.testing.assert_array_equal(got["value"].data, value.data[step])
    assert ordered(got, ("run_code", "sid", "epoch")) is got  # in order: left as it is


def test_kept_resamples_give_the_drawn_rank_intervals() -> None:
    rng = np.random.default_rng(5)
    values = {f"r{i}": rng.random(300) + 0.01 * i for i in range(6)}
    rankings._KEPT_COUNTS.clear()
    drawn = rankings.paired_mean_draws(values, n_resamples=500, rng=11)
    assert rankings._KEPT_COUNTS  # kept for the next ranking over as many items
    kept = rankings.paired_mean_draws(values, n_resamples=500, rng=11)
    for name in values:
        np.testing.assert_array_equal(drawn[1][name], kept[1][name])
    other = rankings.paired_mean_draws(values, n_resamples=500, rng=12)
    assert not np.array_equal(other[1]["r0"], drawn[1]["r0"])  # another seed, other draws


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url=BASE) as test_client:
        yield test_client


def _until(fetch: Any, done: Any, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    found = fetch()
    while not done(found) and time.monotonic() < deadline:
        time.sleep(0.05)
        found = fetch()
    return found


def test_flips_page_shows_the_flips_first_and_the_verdict_when_made(
    client: TestClient, db: Path
) -> None:
    """The first view of a pair's flips waits for the flips alone; the comparison (and so the
    verdict) is made on a thread, the page says so and reloads; its numbers are the same."""
    pair = {"baseline": "alpha-v1", "candidate": "alpha-v3", "scheme": "metric",
            "metric": "correct"}  # fmt: skip
    first = client.get("/flips.json", params=pair).json()
    if first["verdict"] is None:  # (the thread may be done already on a fast machine)
        assert first["verdict_pending"] is True
        page = client.get("/flips", params=pair).text
        if 'id="verdict-pending"' in page:
            assert '<meta http-equiv="refresh"' in page
    later = _until(lambda: client.get("/flips.json", params=pair).json(),
                   lambda d: d["verdict"] is not None)  # fmt: skip
    twin = client.get("/compare.json", params=pair).json()
    assert later["verdict"] == twin["pairs"][0]["verdict"] and not later["verdict_pending"]
    assert later["summary"] == first["summary"] and later["items"] == first["items"]
    flips = {k: v for k, v in twin["flips"][0].items()
             if k not in ("regressions", "improvements")}  # fmt: skip
    assert dumps(later["summary"]) == dumps(flips)  # the comparison's own counts
    page = client.get("/flips", params=pair).text
    assert 'id="verdict"' in page and '<meta http-equiv="refresh"' not in page
    item = first["items"][0]
    at = {"run": "alpha-v1", "other": "alpha-v3", "scheme": "metric", "metric": "correct",
          "task": item["task"], "id": item["sample_id"]}  # fmt: skip
    sample = client.get("/sample.json", params=at).json()
    assert sample["change"]["difference"] == item["difference"]


def test_a_verdict_that_cannot_be_made_is_said_not_awaited(db: Path) -> None:
    """An error met by the comparison made on a thread is the page's, once: no reload loop."""
    reader = Reader(db)

    def fails(store: Store) -> None:
        raise calipers.errors.DataError("no verdict for these runs")

    first = reader.later(("k",), fails)
    assert first.pending and first.value is None
    found = _until(lambda: reader.later(("k",), fails), lambda f: not f.pending)
    assert found.error is not None and "no verdict" in str(found.error)


def test_the_leaderboard_computed_ahead_is_the_commands(db: Path) -> None:
    """The leaderboard the page opens with is computed ahead once nobody waits (`prepare_board`),
    and its twin is then `calipers leaderboard --json`'s document."""
    app = create_app(db)
    viewer = app.state.viewer
    viewer.prepare_board(lambda: True)
    opened = []
    read = viewer.reader.read
    viewer.reader.read = lambda fn: opened.append(fn) or read(fn)
    with TestClient(app, base_url=BASE) as fresh:
        twin = fresh.get("/leaderboard.json").text
    assert opened == []  # the page read nothing: it was computed ahead
    with calipers.open(db=db) as samples:
        expected = calipers.score(samples, "layered")  # the runs have judgments: layered
    assert twin == dumps(clean(expected.to_dict()))


@pytest.mark.parametrize("page_first", [True, False])
@pytest.mark.parametrize(
    "candidates", [["alpha-v2"], ["alpha-v2", "alpha-v3"]], ids=["pair", "several"]
)
def test_the_twin_with_its_cost_is_the_commands_whether_a_page_came_first(
    db: Path, tmp_path: Path, page_first: bool, candidates: list[str]
) -> None:
    """A page's comparison is made without the cost section (it shows none); the twin adds it,
    and is then `calipers compare --json`'s document byte for byte, as when asked first."""
    from calipers.cli.main import main

    out = tmp_path / "compare.json"
    flags = [a for c in candidates for a in ("--candidate", c)]
    assert main(["compare", "--db", str(db), "--baseline", "alpha-v1", *flags, "--scheme",
                 "metric", "--metric", "correct", "--gate", "none", "--json", str(out),
                 "-q"]) == 0  # fmt: skip
    assert '"cost"' in out.read_text(encoding="utf-8")  # the samples have cost_usd
    params: list[tuple[str, str]] = [("baseline", "alpha-v1"), ("scheme", "metric"),
                                     ("metric", "correct")]  # fmt: skip
    params += [("candidate", c) for c in candidates]
    with TestClient(create_app(db), base_url=BASE) as fresh:
        if page_first:
            assert fresh.get("/compare", params=params).status_code == 200
        twin = fresh.get("/compare.json", params=params)
        assert twin.text == out.read_text(encoding="utf-8")
        assert fresh.get("/compare", params=params).status_code == 200  # the page after it


def test_the_compare_page_draws_its_forest_as_bars_of_the_twins_numbers(db: Path) -> None:
    """The forest of paired differences (the value, then each layer) is a table of bars on one
    scale with zero and the margin — no figure to draw — holding the twin's numbers."""
    pair = {"baseline": "alpha-v1", "candidate": "alpha-v2", "scheme": "layered", "margin": "0.1"}
    with TestClient(create_app(db), base_url=BASE) as fresh:
        page = fresh.get("/compare", params=pair).text
        twin = fresh.get("/compare.json", params=pair).json()["pairs"][0]
    table = page.split('<table id="forest">', 1)[1].split("</table>", 1)[0]
    assert "<svg" not in page
    rows = table.split("<tr")[2:]  # after the header
    assert [r.split('name">', 1)[1].split("<", 1)[0] for r in rows] == [
        "composite",
        *twin["layers"],
    ]
    assert f"{twin['composite']['estimate']:+.3f}" in rows[0]
    assert table.count('class="mark"') == 2 * sum('class="track"' in r for r in rows)  # ±margin


@pytest.mark.parametrize(
    ("scheme", "flags"),
    [("metric", ["--metric", "correct"]), ("layered", [])],
)
def test_leaderboards_with_other_options_stage_once_and_are_the_commands(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, flags: list[str]
) -> None:
    """A leaderboard with other intervals, confidence or seed ranks the runs staged for the last
    one (`Reader.staged`), each store closed after its page: its twin is still `calipers
    leaderboard --json`'s document byte for byte, flaky samples' names included."""
    from calipers.cli.main import main

    kind: Any = type(get_scheme(scheme))
    stage = kind.stage
    staged: list[object] = []

    def counted(self: Any, *args: Any) -> Any:
        staged.append(args)
        return stage(self, *args)

    monkeypatch.setattr(kind, "stage", counted)
    variants = [[], ["--confidence", "0.9"], ["--seed", "7", "--interval", "t"]]
    with TestClient(create_app(db), base_url=BASE) as fresh:
        for extra in variants:
            out = tmp_path / "board.json"
            assert main(["leaderboard", "--db", str(db), "--scheme", scheme, *flags, *extra,
                         "--json", str(out), "-q"]) == 0  # fmt: skip
            staged.clear()  # the command's own staging
            params = {"scheme": scheme} | dict(zip(flags[::2], flags[1::2], strict=True))
            params |= {k.lstrip("-"): v for k, v in zip(extra[::2], extra[1::2], strict=True)}
            params = {k.lstrip("-"): v for k, v in params.items()}
            twin = fresh.get("/leaderboard.json", params=params)
            assert twin.text == out.read_text(encoding="utf-8"), extra
            assert extra == [] or staged == [], extra  # staged for the first only
    if scheme == "metric":  # pass/fail outcomes over 3 epochs: the flaky samples were named
        assert '"flaky": [\n' in out.read_text(encoding="utf-8")


def test_sample_names_are_read_once_and_kept_past_the_store(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every run's summary names its flaky samples: the names are read once, then kept (they
    need the store no more), and are those the per-ask query gives."""
    from calipers.verdicts import persample

    with Store(db, read_only=True) as store:
        samples = store.samples()
        staged = get_scheme("metric").stage(  # type: ignore[attr-defined]
            samples, samples.runs(), get_scheme("metric").options(metric="correct")
        )
        rows = staged.names.__self__
        sids = [0, 3, 7, 11, 10_000]  # the last: no such sample
        monkeypatch.setattr(persample, "NAMES_KEPT", 0)
        asked = rows.names(sids)  # too many to keep: the store is asked
        assert rows._names is None and len(asked) == 4
        monkeypatch.setattr(persample, "NAMES_KEPT", 1_000_000)
        assert not persample.names_kept(staged, most=3)  # more samples than that
        assert persample.names_kept(staged, most=1_000)
        queries: list[str] = []
        execute = samples.con.execute

        class Counted:
            def execute(self, query: str, *args: Any) -> Any:
                queries.append(query)
                return execute(query, *args)

        monkeypatch.setattr(samples, "con", Counted())
        assert rows.names(sids) == asked and queries == []
    assert rows.names(sids[:2]) == {i: asked[i] for i in sids[:2]}  # the store closed


def test_every_metrics_leaderboard_is_computed_ahead_and_is_the_commands(db: Path) -> None:
    """Ahead of any request (`prepare_board`), beside the page's own leaderboard: each metric's
    and the layered one, each then shown without reading the store, each the command's."""
    app = create_app(db)
    viewer = app.state.viewer
    viewer.prepare_board(lambda: True)
    opened = []
    read = viewer.reader.read
    viewer.reader.read = lambda fn: opened.append(fn) or read(fn)
    boards = [("metric", {"metric": "correct"}), ("metric", {"metric": "accuracy"}),
              ("layered", {})]  # fmt: skip
    with TestClient(app, base_url=BASE) as fresh:
        twins = [fresh.get("/leaderboard.json", params={"scheme": s, **o}).text for s, o in boards]
    assert opened == []  # computed ahead, every one
    with calipers.open(db=db) as samples:
        for twin, (scheme, options) in zip(twins, boards, strict=True):
            assert twin == dumps(clean(calipers.score(samples, scheme, **options).to_dict()))


def test_counts_and_sums_over_every_row_are_those_over_the_picked_rows() -> None:
    """The flips count and sum per sample over every row, the rows not picked weighing 0
    (`flips.pair_flips`, `_counts`), rather than over the picked rows: the same to the bit, with
    NaN, infinities and −0.0 among the values left out and among those kept."""
    from calipers.verdicts.flips import _counts

    rng = np.random.default_rng(11)
    n, k = 20_000, 3_000
    codes = np.sort(rng.integers(0, k, n))
    values = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8, n)
    values[rng.random(n) < 0.05] = np.nan
    values[rng.random(n) < 0.01] = -0.0
    values[rng.random(n) < 0.001] = np.inf
    rows = rng.random(n) < 0.7
    picked = np.bincount(codes[rows], weights=values[rows], minlength=k)
    every = np.bincount(codes, weights=np.where(rows, values, 0.0), minlength=k)
    assert picked.tobytes() == every.tobytes()
    counted = np.bincount(codes, weights=rows, minlength=k).astype(np.int64)
    np.testing.assert_array_equal(counted, np.bincount(codes[rows], minlength=k))
    # per group, as the flips' tables count: against counting the picked members
    group = rng.integers(0, 7, k)
    has, delta = rng.random(k) < 0.9, rng.normal(size=k)
    way = rng.integers(-1, 3, k).astype(np.int8)
    base, cand = rng.random(k), rng.random(k)
    found = _counts(group, 7, has, base, cand, delta, way, rng.random(k) < 0.1, True)
    for g, body in enumerate(found):
        assert body["n_samples"] == int(np.sum(has & (group == g)))
        assert body["down"] == int(np.sum(has & (delta < 0) & (group == g)))
        assert body["table"]["only_candidate"] == int(
            np.sum(has & (base < 0.5) & (cand >= 0.5) & (group == g))
        )


def _scores_only(path: Path) -> Path:
    """Three runs of scores without any output or input text (as imported from another
    harness), with epochs and samples missing on some sides and errored rows."""
    rows = []
    for run, shift in (("a", 0.0), ("b", 0.2), ("c", -0.1)):
        for i in range(120):
            for epoch in range(3):
                if (run, i % 11, epoch) == ("b", 0, 2) or (run == "c" and i % 13 == 0):
                    continue  # an epoch, a sample, missing on one side
                row: dict[str, Any] = {"run": run, "task": f"t{i % 4}", "sample_id": f"q{i:03d}",
                                       "epoch": epoch}  # fmt: skip
                if (i * 7 + epoch) % 29 == 0:
                    row["error"] = "timeout"
                else:
                    row["correct"] = (i * 13 + epoch * 5) % 10 < 5 + 10 * shift
                    f1 = ((i * 37 + epoch) % 100) / 100 * 0.8 + 0.1 + shift / 2  # in [0, 1]
                    row["scores"] = {"f1": round(f1, 3)}
                rows.append(row)
    source = path.with_suffix(".jsonl")
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with Store(path) as store:
        store.import_files([source])
    return path


@pytest.mark.parametrize(
    "options",
    [{"metric": "correct"}, {"metric": "f1", "bounds": "0,1", "errors": "worst"}],
    ids=["correct", "f1-worst"],
)
def test_flips_without_text_name_their_samples_as_the_join_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
) -> None:
    """A pair staged alone whose rows have no output or input reads its samples' names in the
    codes' order (`flips._names_alone`) rather than joining the runs for facts it cannot have:
    the flips are those of the join, array by array, and the shortcut is taken."""
    from calipers.verdicts import flips as flips_module

    db = _scores_only(tmp_path / "scores.duckdb")
    taken: list[bool] = []
    alone = flips_module._names_alone

    def spy(*args: Any) -> Any:
        found = alone(*args)
        taken.append(found is not None)
        return found

    for baseline, candidate in (("a", "b"), ("c", "a")):
        with Store(db, read_only=True) as store:
            monkeypatch.setattr(flips_module, "_names_alone", spy)
            fast = get_scheme("metric").flips(  # type: ignore[attr-defined]
                store.samples(), baseline=baseline, candidate=candidate, **options
            )
            monkeypatch.setattr(flips_module, "_names_alone", lambda *a: None)
            joined = get_scheme("metric").flips(  # type: ignore[attr-defined]
                store.samples(), baseline=baseline, candidate=candidate, **options
            )
        _same_flips(fast, joined)
    assert taken == [True, True]


def test_the_runs_listing_counts_as_store_runs_with_stale_summaries(tmp_path: Path) -> None:
    """The runs page counts a run's keys from its layered summaries when they are current and
    with a DISTINCT over its rows when not (a sample written by SQL of its own): the counts are
    `Store.runs`' either way."""
    from calipers.view.runs import _run_counts

    db = build_store(tmp_path / "store.duckdb")
    with Store(db) as store:
        store.con.execute(
            "INSERT INTO samples (run, task, sample_id, epoch, correct) VALUES "
            "('alpha-v1', 'extra-task', 'x1', 0, true), ('sql-run', 'x', 'y', 0, false)"
        )
    with Store(db, read_only=True) as store:
        from calipers.data.layer_inputs import stale_runs

        stale = set(stale_runs(store.con))
        assert {"alpha-v1", "sql-run"} <= stale and len(stale) < len(store.runs())
        counted = _run_counts(store, stale)
        assert [info for info, _ in counted.values()] == store.runs()
