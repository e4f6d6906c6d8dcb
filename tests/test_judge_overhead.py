"""What calipers does once instead of per judge call (issue 39, the judge-call target): the secrets
of the environment are not re-read item by item for each reply, yet any change to the environment
is seen at the next call; the judgments read from a reply to decide whether to cache it are the
ones stored (a reply is read once); the client's import runs with the cyclic collector off and
what it made frozen only until the judging ends."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest

from calipers.grading import async_judges
from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import OpenAIJudge, PromptTemplate, judgments_from, keeper
from calipers.redact import MASK, register_key_env, scrub, secrets
from calipers.running.executor import open_backend
from calipers.running.judging import CallCounts, JudgeOptions, JudgeRequest, judge_requests
from judge_server import judge_server


def test_every_change_to_the_environment_is_seen_at_the_next_scrub(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("calipers.redact._explicit", set())
    monkeypatch.delenv("CAL_OVERHEAD_TOKEN", raising=False)
    text = "got tok-0123456789 and plain-value-42"
    assert scrub(text) == text
    assert scrub(text) == text  # the same environment: the answer kept
    monkeypatch.setenv("CAL_OVERHEAD_TOKEN", "tok-0123456789")
    assert scrub(text) == f"got {MASK} and plain-value-42"
    monkeypatch.setenv("CAL_OVERHEAD_TOKEN", "another-token-1")  # a new value, same name
    assert scrub(text) == text and scrub("another-token-1") == MASK
    monkeypatch.delenv("CAL_OVERHEAD_TOKEN")
    assert scrub("another-token-1") == "another-token-1"
    monkeypatch.setenv("CAL_PLAIN_NAME", "plain-value-42")  # not a secret's name …
    assert scrub(text) == text
    register_key_env("CAL_PLAIN_NAME")  # … until configured as a key
    assert scrub(text) == f"got tok-0123456789 and {MASK}"
    assert scrub("k=extra-key-1", ["extra-key-1"]) == f"k={MASK}"  # a caller's own key
    assert scrub("k=extra-key-1") == "k=extra-key-1"
    found = secrets()
    found.clear()  # a caller's list is its own: the next answer is whole
    assert "plain-value-42" in secrets()
    # an explicit environment is read as given, never from what was kept
    assert secrets(environ={"MY_TOKEN": "from-the-mapping"}) == ["from-the-mapping"]


def test_the_judgments_read_to_cache_a_reply_are_left_for_the_caller(tmp_path: Path) -> None:
    judge = OpenAIJudge("j", "m", base_url="http://127.0.0.1:9/v1")
    template = PromptTemplate.load("overall")
    cache = JudgeCache(tmp_path / "cache")
    made: dict[int, list[dict[str, object]]] = {}
    reply = json.dumps({"score": 4, "rationale": "fine"})
    keeper(cache, "k1", judge, template, 2, made=made, slot=7)((reply, None))
    assert made[7] == judgments_from(judge, template, reply, None, repeat=2)
    assert cache.get("k1") == reply
    keeper(cache, "k2", judge, template, 0, made=made, slot=8)(("no judgment", None))
    assert made[8] == judgments_from(judge, template, "no judgment", None, repeat=0)
    assert made[8][0]["score"] is None and cache.get("k2") is None  # unreadable: not cached
    keeper(cache, "k3", judge, template, 0, made=made, slot=9)((None, "HTTP 500: down"))
    assert 9 not in made  # a failed call: nothing read, nothing cached
    cache.close()


def test_a_judging_on_the_loop_stores_what_reading_each_reply_again_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-overhead-0123")
    replies = [json.dumps({"score": 1 + i % 5, "rationale": f"r{i}"}) for i in range(12)]
    replies[3] = "not a judgment"  # unreadable: a missing judgment with its error
    template = PromptTemplate.load("overall")
    with judge_server() as server:
        server.actions = [("answer", r) for r in replies]
        judge = OpenAIJudge("j", "m", base_url=server.url, max_retries=0)
        requests = [
            JudgeRequest(template, template.render(task=f"q{i}", output=f"a{i}"), f"d{i}")
            for i in range(12)
        ]
        backend = open_backend("local", workers=1)  # one call at a time: replies in order
        counts: dict[str, CallCounts] = {}
        try:
            out = judge_requests(
                requests, JudgeOptions(judges=[judge], cache_dir=tmp_path / "c"), backend,
                progress=False, counts=counts,
            )  # fmt: skip
        finally:
            backend.close()
    assert out == [judgments_from(judge, template, r, None, repeat=0) for r in replies]
    assert counts["j"] == CallCounts(cached=0, called=12, failed=1)


def test_the_client_import_freezes_until_the_judging_ends(tmp_path: Path) -> None:
    if not gc.isenabled() or gc.get_freeze_count():
        pytest.skip("the collector is off or holds frozen objects in this process")
    (tmp_path / "calipers_overhead_probe.py").write_text("VALUE = [[i] for i in range(1000)]\n")
    sys.path.insert(0, str(tmp_path))
    try:
        async_judges._import_settled("calipers_overhead_probe")
        assert gc.isenabled() and gc.get_freeze_count() > 0
        async_judges.thaw()
        assert gc.isenabled() and gc.get_freeze_count() == 0
        async_judges.thaw()  # nothing left to give back
        assert gc.get_freeze_count() == 0
        async_judges._import_settled("calipers_no_such_module")  # an error is left to raise
        assert gc.isenabled()
        async_judges.thaw()
        gc.freeze()  # objects someone else froze (a server before it forks) …
        try:
            async_judges._import_settled("calipers_overhead_probe")
            async_judges.thaw()
            assert gc.get_freeze_count() > 0  # … stay frozen
        finally:
            gc.unfreeze()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("calipers_overhead_probe", None)
        async_judges.thaw()
