"""See what changed (issue 34): the samples that flipped between two runs, and every task's
numbers, in the terminal, JSON, Markdown, HTML and Python — each count held against a count made
here with plain Python from the raw records (the inspect_ai logs' own sample entries, the demo's
generated samples), never against calipers' own arrays."""

from __future__ import annotations

import html as htmllib
import io
import json
import re
import shutil
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

import calipers
from calipers.cli.main import main
from calipers.data.store import Store
from calipers.demo.synthetic import DEMO_MODELS, generate_samples, write_jsonl
from calipers.verdicts.flips import LISTED, word_diff
from conftest import MakeSamples

INSPECT = Path(__file__).parent / "fixtures" / "importers" / "inspect"
BASE, CAND = "mockllm/model-a", "mockllm/model-b"


def _flat(text: str) -> str:
    return " ".join(text.split())  # the console wraps at 80 columns


def _cli(args: list[str], tmp_path: Path, capsys: Any, name: str) -> tuple[str, dict[str, Any],
                                                                         str, str]:  # fmt: skip
    """Terminal, JSON, Markdown and HTML of one `calipers compare`."""
    out = {k: tmp_path / f"{name}.{k}" for k in ("json", "md", "html")}
    code = main([*args, "--gate", "none", "--json", str(out["json"]), "--markdown",
                 str(out["md"]), "--html", str(out["html"])])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    terminal = capsys.readouterr().out
    return (terminal, json.loads(out["json"].read_text()), out["md"].read_text(),
            out["html"].read_text())  # fmt: skip


# ------------------------------------------------------------------------ direct counts


def _table(means: dict[Any, tuple[float, float]]) -> dict[str, int]:
    """The 2×2 of samples by pass (mean over epochs ≥ 0.5) on each side."""
    t = {"both_pass": 0, "only_baseline": 0, "only_candidate": 0, "neither": 0}
    for b, c in means.values():
        key = ("both_pass" if c >= 0.5 else "only_baseline") if b >= 0.5 else (
            "only_candidate" if c >= 0.5 else "neither")  # fmt: skip
        t[key] += 1
    return t


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _inspect_records(
    logs: dict[str, Path],
) -> tuple[str, dict[str, dict[tuple[str, int], dict[str, Any]]]]:
    """The task and, per run (its log), each (sample id, epoch) entry, read straight from the
    .eval zips."""
    from test_import_inspect import member  # zstd or deflate, independently of the importer

    records: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for run, path in logs.items():
        with zipfile.ZipFile(path) as archive:
            entries = [n for n in archive.namelist() if re.fullmatch(r"samples/[^/]+\.json", n)]
        records[run] = {}
        for entry in entries:
            sample = member(path, entry)
            records[run][(str(sample["id"]), int(sample["epoch"]))] = sample
    (task,) = {member(path, "header.json")["eval"]["task"] for path in logs.values()}
    return task, records


# Two logs of two models (run names from the logs), and two log directories of one model, as two
# versions of a prompt leave them (inspect names both runs after the model, so the directories
# name them), compared in one command: `compare v1 --vs v2`.
SETUPS = {
    "two models": ((BASE, "run-a.eval"), (CAND, "run-b.eval")),
    "one model, two directories": (("v1", "run-a.eval"), ("v2", "prompt-v2.eval")),
}


@pytest.mark.parametrize("setup", list(SETUPS))
def test_flips_of_two_inspect_logs_match_a_count_from_the_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    setup: str,
) -> None:  # fmt: skip
    (base, base_log), (cand, cand_log) = SETUPS[setup]
    task, records = _inspect_records({base: INSPECT / base_log, cand: INSPECT / cand_log})
    passed = {run: {k: float(s["scores"]["match"]["value"] == "C") for k, s in r.items()}
              for run, r in records.items()}  # fmt: skip
    ids = sorted({sid for sid, _ in passed[base]})
    epochs = {sid: sorted(e for s, e in passed[base] if s == sid) for sid in ids}
    means = {sid: (_mean([passed[base][sid, e] for e in epochs[sid]]),
                   _mean([passed[cand][sid, e] for e in epochs[sid]])) for sid in ids}  # fmt: skip
    table = _table(means)
    down = {sid for sid, (b, c) in means.items() if c < b}
    up = {sid for sid, (b, c) in means.items() if c > b}
    stable = {sid for sid in down | up
              if all((passed[cand][sid, e] - passed[base][sid, e]) * (means[sid][1] - means[sid][0])
                     > 0 for e in epochs[sid])}  # fmt: skip
    assert table["only_baseline"] + table["only_candidate"] > 0 and down and up  # a real test

    if setup == "two models":
        files = [str(INSPECT / base_log), str(INSPECT / cand_log)]
        args = ["compare", *files, "--scheme", "metric", "--metric", "match", "--baseline", base,
                "--candidate", cand, "--flips", "2"]  # fmt: skip
    else:  # each log in a directory of its own, the directories compared in one command
        monkeypatch.chdir(tmp_path)
        for run, log in SETUPS[setup]:
            (tmp_path / run).mkdir()
            shutil.copy(INSPECT / log, tmp_path / run)
        args = ["compare", base, "--vs", cand, "--scheme", "metric", "--metric", "match",
                "--flips", "2"]  # fmt: skip
    terminal, report, markdown, page = _cli(args, tmp_path, capsys, "inspect")
    assert report["schema_version"] == "2"
    assert (report["control"], report["pairs"][0]["treatment"]) == (base, cand)
    (f,) = report["flips"]
    assert f["outcome"] == "pass/fail" and f["table"] == table
    assert (f["n_samples"], f["up"], f["down"]) == (len(ids), len(up), len(down))
    assert {x["sample_id"] for x in f["regressions"]} == down
    assert {x["sample_id"] for x in f["improvements"]} == up
    for x in f["regressions"] + f["improvements"]:
        sid = x["sample_id"]
        assert x["task"] == task and x["kind"] == ("stable" if sid in stable else "flaky")
        assert x["difference"] == pytest.approx(means[sid][1] - means[sid][0])
        assert [e["epoch"] for e in x["epochs"]] == epochs[sid]
        # the text shown is the epoch that moved most that way (the first of equals)
        sign = 1 if x["direction"] == "improvement" else -1
        moves = [sign * (passed[cand][sid, e] - passed[base][sid, e]) for e in epochs[sid]]
        shown = epochs[sid][moves.index(max(moves))]
        assert x["epoch"] == shown
        b, c = records[base][sid, shown], records[cand][sid, shown]
        assert x["baseline_output"] == b["output"]["completion"]
        assert x["candidate_output"] == c["output"]["completion"]
        target = b["target"]  # a list target is its lines, as the importer reads it
        assert x["expected"] == (target if isinstance(target, str) else "\n".join(target))
        assert "".join(o["text"] for o in x["diff"] if o["op"] != "insert") == x["baseline_output"]
    # sorted by the size of the change, then by sample
    order = sorted(down, key=lambda sid: (round(means[sid][1] - means[sid][0], 9), sid))
    assert [x["sample_id"] for x in f["regressions"]] == order

    flat = _flat(terminal)
    line = (f"pass/fail per sample: both pass {table['both_pass']} · only the baseline "
            f"{table['only_baseline']} · only the candidate {table['only_candidate']} · neither "
            f"{table['neither']}")  # fmt: skip
    assert line in flat
    kinds = {k: sum(1 for sid in down if (sid in stable) == (k == "stable"))
             for k in ("stable", "flaky")}  # fmt: skip
    assert (f"Flips {cand} against {base}: {len(down)} regression{'s' if len(down) != 1 else ''} "
            f"({kinds['stable']} stable, {kinds['flaky']} flaky,") in flat  # fmt: skip
    assert "the 2 largest regressions:" in flat or len(down) < 2
    top = f["regressions"][0]
    assert f"▼ {task} · {top['sample_id']} " in flat
    assert f"Pass/fail per sample: both pass {table['both_pass']} · only the baseline" in markdown
    assert "<details>" in markdown and f"- ▼ {task} · {top['sample_id']}:" in markdown
    assert f"The largest flips: {min(2, len(down))} regression" in markdown
    rows = re.findall(r'<tr data-kind="([^"]+)" data-way="([^"]+)">', page)
    assert sorted(w for _, w in rows) == sorted(
        ["regression"] * len(down) + ["improvement"] * len(up)
    )  # every listed flip (at most LISTED each way) is a row of the filterable table
    cells = re.findall(r"<td>baseline passes</td><td>(\d+)</td><td>(\d+)</td>", page)
    assert cells == [(str(table["both_pass"]), str(table["only_baseline"]))]

    if setup == "two models":
        with calipers.open(files) as samples:
            result = calipers.compare(samples, "metric", baseline=base, candidates=[cand],
                                      metric="match")  # fmt: skip
    else:
        samples, sides = calipers.open_sides(tmp_path / base, tmp_path / cand)
        assert (sides.baseline, sides.candidate) == (base, cand)
        with samples:
            result = calipers.compare(samples, "metric", baseline=base, candidates=[cand],
                                      metric="match")  # fmt: skip
    frame = result.to_frame("sample")
    assert len(frame) == len(ids) and set(frame["sample_id"]) == set(ids)
    combos = frame.groupby(["baseline_pass", "candidate_pass"]).size().to_dict()
    assert combos.get((True, True), 0) == table["both_pass"]
    assert combos.get((True, False), 0) == table["only_baseline"]
    assert combos.get((False, True), 0) == table["only_candidate"]
    assert result.flips[cand].n_regressions == len(down)
    assert result.flips[cand].n_improvements == len(up)
    assert {x.sample_id for x in result.flips[cand].regressions} == down


# ------------------------------------------------------------------------ the demo store


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The demo's store as `calipers demo` builds it (its first two models: the same draws)."""
    directory = tmp_path_factory.mktemp("demo")
    rows = list(generate_samples(models=DEMO_MODELS[:2]))
    write_jsonl(directory / "samples.jsonl", iter(rows))
    with Store(directory / "demo.duckdb") as store:
        store.import_files([directory / "samples.jsonl"])
    return directory / "demo.duckdb", rows


def _per_sample(rows: list[dict[str, Any]], value: Any) -> dict[str, dict[tuple[str, str], float]]:
    values: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        values[r["run"]][r["task"], r["sample_id"]].append(value(r))
    return {run: {k: _mean(v) for k, v in by.items()} for run, by in values.items()}


def test_demo_store_pass_fail_flips_match_the_samples(
    demo: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, rows = demo
    means = _per_sample(rows, lambda r: float(r["correct"]))
    base, cand = means["atlas-small"], means["atlas-large"]
    table = _table({k: (base[k], cand[k]) for k in base})
    changes = {k: cand[k] - base[k] for k in base}
    args = ["compare", "--db", str(db), "--scheme", "metric", "--metric", "accuracy",
            "--baseline", "atlas-small", "--candidate", "atlas-large"]  # fmt: skip
    terminal, report, markdown, page = _cli(args, tmp_path, capsys, "demo")
    (f,) = report["flips"]
    assert f["table"] == table
    assert f["n_regressions"] == sum(d < 0 for d in changes.values())
    assert f["n_improvements"] == sum(d > 0 for d in changes.values())
    assert f["unchanged"] == sum(d == 0 for d in changes.values())
    # the largest regressions, ties in (task, sample_id) order
    expected = sorted((k for k, d in changes.items() if d < 0), key=lambda k: (changes[k], k))
    assert [(x["task"], x["sample_id"]) for x in f["regressions"]] == expected[:LISTED]
    flat = _flat(terminal)
    assert (f"both pass {table['both_pass']} · only the baseline {table['only_baseline']} · "
            f"only the candidate {table['only_candidate']}") in flat  # fmt: skip
    assert f"Pass/fail per sample: both pass {table['both_pass']}" in markdown
    assert len(re.findall(r'<tr data-kind="', page)) == 2 * LISTED
    # every task: its difference in the terminal and the Markdown, equal to the direct one
    by_task: dict[str, list[float]] = defaultdict(list)
    for (task, _), d in changes.items():
        by_task[task].append(d)
    pair = report["pairs"][0]
    assert len(pair["tasks"]) == 12
    for task, ds in by_task.items():
        diff = _mean(ds)
        assert pair["tasks"][task]["diff"] == pytest.approx(diff)
        shown = re.escape(f"{diff:+.3f}")
        assert re.search(rf"│{task}\s*│[^│]*│\s*{shown}", terminal), task
        assert re.search(rf"\| {task} \| [▲▼ ]*{shown} \| ", markdown), task
        assert f["tasks"][task]["n_regressions"] == sum(d < 0 for d in ds)


def test_demo_store_score_flips_match_the_layers(
    demo: tuple[Path, list[dict[str, Any]]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The layered composite, made here from the samples as seed 000 says: fact and behavior
    1 + 4·passed weight / total weight (one assertion each here), judge the mean of the judges,
    the composite the mean of the three."""
    db, rows = demo

    def composite(r: dict[str, Any]) -> float:
        layer = {"fact": [], "behavior": []}  # type: dict[str, list[tuple[float, bool]]]
        for a in r["assertions"]:
            layer[a["layer"]].append((a["weight"], a["passed"]))
        fb = [1 + 4 * sum(w for w, p in v if p) / sum(w for w, _ in v) for v in layer.values()]
        judge = _mean([j["score"] for j in r["judgments"]])
        return _mean([*fb, judge])

    means = _per_sample(rows, composite)
    base, cand = means["atlas-small"], means["atlas-large"]
    changes = sorted(cand[k] - base[k] for k in base)
    terminal, report, markdown, _ = _cli(
        ["compare", "--db", str(db), "--scheme", "layered", "--baseline", "atlas-small",
         "--candidate", "atlas-large"], tmp_path, capsys, "layered",
    )  # fmt: skip
    (f,) = report["flips"]
    assert f["outcome"] == "score" and f["table"] is None
    tol = 1e-9
    assert f["down"] == sum(d < -tol for d in changes)
    assert f["up"] == sum(d > tol for d in changes)
    assert f["unchanged"] == sum(abs(d) <= tol for d in changes)
    q = f["distribution"]
    assert q["min"] == pytest.approx(changes[0]) and q["max"] == pytest.approx(changes[-1])
    n = len(changes)
    median = (changes[(n - 1) // 2] + changes[n // 2]) / 2
    assert q["median"] == pytest.approx(median) and q["mean"] == pytest.approx(_mean(changes))
    # same output text on both sides in every epoch, other grade: judge-only
    outputs: dict[tuple[str, str, str], set[tuple[int, str]]] = defaultdict(set)
    for r in rows:
        outputs[r["run"], r["task"], r["sample_id"]].add((r["epoch"], r["output"]))
    judge_only = sum(
        1 for k in base
        if abs(cand[k] - base[k]) > tol
        and outputs["atlas-small", *k] == outputs["atlas-large", *k]
    )  # fmt: skip
    kinds = f["kinds"]
    assert kinds["regression"]["judge-only"] + kinds["improvement"]["judge-only"] == judge_only
    assert judge_only > 0
    assert f"{f['up']} up · {f['down']} down · {f['unchanged']} unchanged" in _flat(terminal)
    assert f"Changes: {f['up']} up · {f['down']} down" in markdown


# ------------------------------------------------------------------------ classes and rules


def _classes_rows() -> list[dict[str, Any]]:
    """One sample per class, two epochs, pass/fail `correct`."""
    spec = {  # sample: (baseline per epoch, candidate per epoch, outputs base, outputs cand)
        "s1-stable": ([1, 1], [0, 0], ["right", "right"], ["wrong answer", "wrong"]),
        "s2-flaky": ([0, 1], [1, 1], ["no", "yes"], ["yes", "yes"]),
        "s3-judge": ([1, 1], [0, 0], ["same", "same"], ["same", "same"]),
        "s4-error": ([1, 1], [1, None], ["a", "a"], ["a", None]),
        "s5-gone": ([1, 1], [None, None], ["a", "a"], [None, None]),
        "s6-same": ([1, 0], [1, 0], ["a", "b"], ["a", "c"]),
    }
    rows = []
    for sid, (b, c, ob, oc) in spec.items():
        for run, values, outs in (("base", b, ob), ("new", c, oc)):
            for epoch, (v, o) in enumerate(zip(values, outs, strict=True)):
                row: dict[str, Any] = {"run": run, "task": "t", "sample_id": sid, "epoch": epoch,
                                       "correct": None if v is None else bool(v), "output": o,
                                       "input": f"question {sid}", "expected": "right"}  # fmt: skip
                if v is None:
                    row["error"] = "timeout after 30 s"
                row["judgments"] = [{"judge": "j", "score": 3.0, "rationale": f"{run} {sid}"}]
                rows.append(row)
    return rows


def test_each_flip_has_its_class_and_text(make_samples: MakeSamples) -> None:
    result = calipers.compare(make_samples(_classes_rows()), "metric", baseline="base",
                              candidates=["new"], metric="correct")  # fmt: skip
    f = result.flips["new"]
    kinds = {x.sample_id: (x.direction, x.kind) for x in f.regressions + f.improvements}
    assert kinds == {
        "s1-stable": ("regression", "stable"),
        "s2-flaky": ("improvement", "flaky"),
        "s3-judge": ("regression", "judge-only"),
        "s4-error": ("regression", "error"),  # its paired epoch did not move; it lost one
        "s5-gone": ("regression", "error"),  # no outcome at all on the candidate's side
    }
    gone = next(x for x in f.regressions if x.sample_id == "s5-gone")
    assert (gone.baseline, gone.candidate, gone.difference) == (1.0, None, None)
    assert gone.candidate_error == "timeout after 30 s"
    # sized by the change (the errors have none: bounds are those of a proportion, 0–1, here)
    assert [x.sample_id for x in f.regressions][:2] == ["s1-stable", "s3-judge"]
    s1 = f.regressions[0]
    assert (s1.input, s1.expected, s1.baseline_output) == ("question s1-stable", "right", "right")
    assert s1.rationales == {
        "baseline": [
            {"judge": "j", "dimension": None, "score": 3.0, "rationale": "base s1-stable"}
        ],
        "candidate": [
            {"judge": "j", "dimension": None, "score": 3.0, "rationale": "new s1-stable"}
        ],
    }
    assert s1.diff == [{"op": "delete", "text": "right"}, {"op": "insert", "text": "wrong answer"}]
    # the 2×2 counts the samples with an outcome on both sides (s5 has none)
    assert f.overall["table"] == {"both_pass": 3, "only_baseline": 2, "only_candidate": 0,
                                  "neither": 0}  # fmt: skip
    assert f.overall["n_samples"] == 5 and f.overall["errored"] == 2
    # every sample in Python, one row each; the class is None for those that did not move
    frame = result.to_frame("sample").set_index("sample_id")
    assert frame.loc["s6-same", "direction"] == "unchanged"
    assert (
        frame.loc["s6-same", "kind"] is None
        or frame.loc["s6-same", "kind"] != frame.loc["s6-same", "kind"]
    )  # None, or pandas' NaN for it
    assert bool(frame.loc["s3-judge", "same_output"]) and frame.loc["s2-flaky", "epochs"] == 2
    # `flips` lists fewer with their text; the counts stay whole
    fewer = calipers.compare(make_samples(_classes_rows()), "metric", baseline="base",
                             candidates=["new"], metric="correct", flips=1)  # fmt: skip
    assert len(fewer.flips["new"].regressions) == 1 and fewer.flips["new"].n_regressions == 4


def test_the_table_follows_the_half_rule(make_samples: MakeSamples) -> None:
    """With two epochs a sample that passes one of them passes (mean 0.5 ≥ 0.5)."""
    rows = [{"run": run, "task": "t", "sample_id": "x", "epoch": e, "correct": bool(v)}
            for run, vs in (("a", [1, 0]), ("b", [0, 0])) for e, v in enumerate(vs)]  # fmt: skip
    rows += [{"run": run, "task": "t", "sample_id": "y", "epoch": e, "correct": True}
             for run in ("a", "b") for e in (0, 1)]  # fmt: skip
    f = calipers.compare(make_samples(rows), "metric", baseline="a", candidates=["b"],
                         metric="correct").flips["b"]  # fmt: skip
    assert f.overall["table"] == {"both_pass": 1, "only_baseline": 1, "only_candidate": 0,
                                  "neither": 0}  # fmt: skip
    assert "at least 0.5" in f.to_dict()["rule"]


def test_word_diff_rebuilds_both_outputs() -> None:
    before, after = "The cat sat on\nthe mat.", "The dog sat  on the red mat."
    ops = word_diff(before, after)
    assert "".join(o["text"] for o in ops if o["op"] != "insert") == before
    assert "".join(o["text"] for o in ops if o["op"] != "delete") == after
    assert {"op": "insert", "text": "dog"} in ops and {"op": "delete", "text": "cat"} in ops


def test_concentration_is_fishers_test_with_holm(make_samples: MakeSamples) -> None:
    """Three tasks; most flips in one: its one-sided Fisher p, Holm-adjusted over the tasks,
    equals scipy's and statsmodels' (independent references)."""
    from scipy.stats import fisher_exact
    from statsmodels.stats.multitest import multipletests

    flips = {"a": 14, "b": 3, "c": 2}
    rows = []
    for task, k in flips.items():
        for i in range(20):
            flipped = i < k
            for run, v in (("x", 1), ("y", 0 if flipped else 1)):
                rows.append({"run": run, "task": task, "sample_id": f"{task}{i}",
                             "correct": bool(v), "input": "q" * (10 + i)})  # fmt: skip
    result = calipers.compare(make_samples(rows), "metric", baseline="x", candidates=["y"],
                              metric="correct")  # fmt: skip
    groups = result.flips["y"].concentration["groups"]
    by_task = {g["name"]: g for g in groups if g["where"] == "task"}
    total = sum(flips.values())
    raw = [fisher_exact([[k, 20 - k], [total - k, 40 - (total - k)]], alternative="greater")[1]
           for k in flips.values()]  # fmt: skip
    adjusted = multipletests(raw, method="holm")[1]
    for (task, k), p, p_adj in zip(flips.items(), raw, adjusted, strict=True):
        g = by_task[task]
        assert (g["n"], g["flips"]) == (20, k)
        assert g["p_value"] == pytest.approx(p) and g["p_adjusted"] == pytest.approx(p_adj)
        assert g["concentrated"] == (p_adj <= 0.05)
    assert by_task["a"]["concentrated"] and not by_task["b"]["concentrated"]
    bands = [g for g in groups if g["where"] == "input length"]
    assert len(bands) == 4 and sum(g["n"] for g in bands) == 60


# ------------------------------------------------------------------------ escaping


HOSTILE_OUTPUT = "[bold red]x[/] \x1b[31mred\x1b[0m <script>alert(1)</script> @me #12 **b**"


def test_hostile_text_in_flips_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        ) -> None:  # fmt: skip
    rows = _classes_rows()
    for r in rows:
        if r["sample_id"] == "s1-stable" and r["run"] == "new":
            r["output"] = HOSTILE_OUTPUT
            r["task"] = "t"
    data = tmp_path / "h.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["compare", str(data), "--scheme", "metric", "--metric", "correct", "--baseline",
            "base", "--candidate", "new"]  # fmt: skip
    terminal, _, markdown, page = _cli(args, tmp_path, capsys, "hostile")
    assert "\x1b" not in terminal and "[bold red]x[/]" in terminal  # shown, not styled
    assert "\\x1b[31mred" in terminal  # the escape made visible
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(markdown)
    assert "<script" not in rendered and "\x1b" not in markdown
    assert "@\u2060me" in markdown and "#\u206012" in markdown  # no mention, no issue link
    assert "<script>alert(1)</script>" not in page.split("</head>", 1)[1]
    assert htmllib.escape("<script>alert(1)</script>") in page


def test_objective_takes_no_flips(capsys: pytest.CaptureFixture[str]) -> None:
    examples = Path(__file__).parent.parent / "docs" / "examples"
    args = ["--baseline", "prompt-v1", "--candidate", "prompt-v2", "--flips", "3"]
    code = main(["compare", str(examples / "objective.jsonl"), "--scheme", "objective", *args])
    assert code == 1 and "--flips" in capsys.readouterr().err


# ------------------------------------------------------------------------ tasks


def test_to_frame_task_has_every_task(make_samples: MakeSamples) -> None:
    rows = [{"run": run, "task": task, "sample_id": f"{task}{i}",
             "correct": bool((i + (run == "b") * (task == "up")) % 2)}
            for run in ("a", "b") for task in ("up", "flat") for i in range(12)]  # fmt: skip
    result = calipers.compare(make_samples(rows), "metric", baseline="a", candidates=["b"],
                              metric="correct")  # fmt: skip
    frame = result.to_frame("task").set_index("task")
    assert sorted(frame.index) == ["flat", "up"]
    assert frame.loc["flat", "difference"] == 0 and frame.loc["up", "difference"] == 0
    assert frame.loc["up", "up"] == 6 and frame.loc["up", "down"] == 6
    assert frame.loc["flat", "unchanged"] == 12 and frame.loc["up", "n"] == 12


def test_score_tasks_is_honoured_or_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = Path(__file__).parent.parent / "docs" / "examples"
    rows = [json.loads(x) for x in (examples / "layered.jsonl").read_text().splitlines()]
    assert main(["score", str(examples / "layered.jsonl"), "--scheme", "layered",
                 "--tasks"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "composite per task (mean, observations)" in _flat(out)
    for run in ("prompt-v1", "prompt-v2"):
        for task in ("qa", "summarize"):
            mine = [r for r in rows if r["run"] == run and r["task"] == task]
            assert any(f"({len(mine)})" in line and task in line for line in out.splitlines())
    assert main(["score", str(examples / "rubric.jsonl"), "--scheme", "rubric", "--rubric",
                 str(examples / "rubric.yaml"), "--no-history", "--tasks"]) == 0  # fmt: skip
    assert "rubric per run and task" in capsys.readouterr().out
    assert main(["score", str(examples / "layered.jsonl"), "--scheme", "robustness",
                 "--tasks"]) == 1  # fmt: skip
    assert "--tasks: the robustness scheme scores cases, not tasks" in capsys.readouterr().err


@pytest.mark.slow  # a browser start: ~2 s
def test_the_flips_table_filters_in_a_browser(chromium: Any, tmp_path: Path) -> None:
    """The page's one script runs (its hash is in the CSP), filters the flips table by class,
    direction and text, and hostile model output in the table stays text."""
    from browser import HOSTILE, open_page

    rows = _classes_rows()
    for r in rows:
        if r["sample_id"] == "s1-stable" and r["run"] == "new":
            r["output"] = HOSTILE[0] + " " + HOSTILE[1]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    page_path = tmp_path / "compare.html"
    assert main(["compare", str(data), "--scheme", "metric", "--metric", "correct", "--baseline",
                 "base", "--candidate", "new", "--gate", "none", "--html", str(page_path),
                 "-q"]) == 0  # fmt: skip
    loaded = open_page(chromium, page_path)
    page = loaded.page
    assert loaded.console_errors == [] and loaded.requests == [page_path.resolve().as_uri()]
    visible = "#flips-0 tbody tr:not([hidden])"
    assert page.locator(visible).count() == 5 and page.inner_text("form.flip-filter output") == (
        "5 shown"
    )
    page.select_option("form.flip-filter select[name=kind]", "error")
    assert page.locator(visible).count() == 2
    page.select_option("form.flip-filter select[name=kind]", "")
    page.select_option("form.flip-filter select[name=way]", "improvement")
    assert page.locator(visible).count() == 1
    page.select_option("form.flip-filter select[name=way]", "")
    page.fill("form.flip-filter input[name=text]", "s3-JUDGE")
    assert page.locator(visible).count() == 1
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.evaluate("window.__pwned") is None and page.locator("body script").count() == 0
    page.fill("form.flip-filter input[name=text]", "")
    assert HOSTILE[0] in page.inner_text("#flips-0")  # shown as text


def test_docs_flips_is_what_the_code_prints() -> None:
    import doc_examples

    block = doc_examples.example_block("flips")
    assert block == doc_examples.rendered("flips")
    assert "only the baseline 3 · only the candidate 1" in block  # the logs' count, by hand
    # the two directories of one model, compared in one command
    block = doc_examples.example_block("flips", "one-model")
    assert block == doc_examples.rendered("flips", "one-model")
    assert "only the baseline 2 · only the candidate 1" in block  # run-a → prompt-v2, by hand


def test_fisher_greater_is_scipys_one_sided_fisher() -> None:
    import random

    from scipy.stats import fisher_exact

    from calipers.verdicts.flips import fisher_greater

    rng = random.Random(7)
    for _ in range(500):
        total = rng.randint(2, 300)
        flips, n = rng.randint(0, total), rng.randint(1, total)
        a = rng.randint(max(0, n - (total - flips)), min(n, flips))
        table = [[a, n - a], [flips - a, total - n - (flips - a)]]
        expected = fisher_exact(table, alternative="greater")[1]
        assert fisher_greater(a, n, flips, total) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_many_tasks_make_a_compact_table() -> None:
    """Beyond 30 tasks the terminal keeps the 30 smallest adjusted p (and says so); the
    Markdown has every task, folded away beyond 12."""
    from rich.console import Console

    from calipers.render.changes import TASKS_SHOWN, tasks_markdown, tasks_terminal

    tasks = {f"task{i:02d}": {"control": 0.5, "treatment": 0.5 + i / 100, "diff": i / 100,
                              "low": -0.1, "high": 0.2, "p_value": 1 - i / 40,
                              "p_adjusted": 1 - i / 40, "moved": None, "n": 10}
             for i in range(40)}  # fmt: skip
    pair = {"control": "a", "treatment": "b", "tasks": tasks, "task_adjust": "holm"}
    console = Console(width=120, record=True, file=io.StringIO())
    tasks_terminal(pair, console, label="acc")
    text = console.export_text()
    shown = re.findall(r"│(task\d\d)", text)
    assert len(shown) == TASKS_SHOWN and shown[0] == "task39" and "task09" not in shown
    assert "30 smallest adjusted p of 40 tasks" in _flat(text)
    lines = tasks_markdown(pair, quantity="acc", level="95%")
    assert "<summary>Every task (40)</summary>" in lines
    assert sum(line.startswith("| task") and "| 10 |" in line for line in lines) == 40
