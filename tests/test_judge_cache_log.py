"""The judge cache's on-disk layout: one append-only segment per writing process, read whole on
first lookup; torn lines are misses, never replies; caches written as one file per reply (before
the segments) still answer."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

from calipers.grading.judge_cache import JudgeCache


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("replies-*.jsonl"))


def test_a_reply_put_is_read_back_by_another_instance(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "c")
    cache.put("k1", '{"score": 4}')
    cache.put("k2", "ünïcode ✓\nwith a newline")
    # the same process sees its own writes at once; a fresh reader sees them on disk, unclosed
    assert cache.get("k1") == '{"score": 4}'
    fresh = JudgeCache(tmp_path / "c")
    assert fresh.get("k2") == "ünïcode ✓\nwith a newline" and fresh.get("k3") is None
    assert fresh.keys() == {"k1", "k2"}
    [segment] = _segments(tmp_path / "c")
    assert stat.S_IMODE(segment.stat().st_mode) == 0o600  # replies may quote private outputs
    assert [json.loads(line)["key"] for line in segment.read_text().splitlines()] == ["k1", "k2"]
    cache.close()


def test_a_torn_line_is_a_miss_and_the_lines_before_it_are_kept(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.put("good", "a")
    cache.close()
    [segment] = _segments(tmp_path)
    with segment.open("ab") as fh:  # a writer that died mid-line, and a line that is not ours
        fh.write(b'["not", "an", "entry"]\n{"key": "torn", "reply": "hal')
    fresh = JudgeCache(tmp_path)
    assert fresh.get("good") == "a" and fresh.get("torn") is None
    assert fresh.keys() == {"good"}


def test_each_writer_has_its_own_segment_and_the_later_one_wins(tmp_path: Path) -> None:
    (tmp_path / "replies-20260101T000000-1-aaaaaaaa.jsonl").write_text(
        json.dumps({"key": "k", "reply": "old"}) + "\n"
    )
    (tmp_path / "replies-20260102T000000-2-bbbbbbbb.jsonl").write_text(
        json.dumps({"key": "k", "reply": "refreshed"}) + "\n"
    )
    assert JudgeCache(tmp_path).get("k") == "refreshed"
    a, b = JudgeCache(tmp_path), JudgeCache(tmp_path)
    a.put("x", "1")
    b.put("y", "2")
    a.close()
    b.close()
    assert len(_segments(tmp_path)) == 4
    assert JudgeCache(tmp_path).keys() == {"k", "x", "y"}


def test_single_file_entries_of_the_older_layout_still_answer(tmp_path: Path) -> None:
    key = "ab" * 32
    (tmp_path / f"{key}.json").write_text(json.dumps({"key": key, "reply": "kept"}))
    (tmp_path / f"{'cd' * 32}.json").write_text("{ not json")
    (tmp_path / f".{key}.json.x1.tmp").write_text("a temp file left by a kill")
    cache = JudgeCache(tmp_path)
    assert cache.get(key) == "kept"
    assert cache.get("cd" * 32) is None
    assert cache.get("missing") is None


def test_threads_putting_at_once_leave_only_whole_lines(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    reply = "x" * 5000  # longer than a pipe buffer: still one line each

    def put_many(t: int) -> None:
        for i in range(200):
            cache.put(f"{t}-{i}", reply)

    threads = [threading.Thread(target=put_many, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    lines = _segments(tmp_path)[0].read_text().splitlines()
    assert len(lines) == 1600 and all(json.loads(line)["reply"] == reply for line in lines)
    assert len(JudgeCache(tmp_path).keys()) == 1600


def test_a_put_after_close_opens_a_new_segment(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.put("a", "1")
    cache.close()
    cache.put("b", "2")  # a call still finishing after its judging was interrupted
    cache.close()
    assert len(_segments(tmp_path)) == 2
    assert JudgeCache(tmp_path).keys() == {"a", "b"}


def test_a_missing_directory_is_an_empty_cache_until_the_first_put(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "not" / "yet")
    assert cache.get("k") is None and not (tmp_path / "not").exists()
    cache.put("k", "v")
    assert cache.get("k") == "v" and (tmp_path / "not" / "yet").is_dir()
    cache.close()
    assert os.listdir(tmp_path / "not" / "yet")[0].startswith("replies-")
