"""OpenAI-compatible judges on the event loop (calipers.grading.async_judges), as `judge_requests`
runs them on the local backend: at most -j calls in flight and that many reached, the client's
retries, every failure a missing judgment with its error, the key never kept, the synchronous
path's answers, and the httpx transport when aiohttp is not there. Against a real HTTP server on
127.0.0.1 (tests/judge_server.py)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from calipers.grading.judges import OpenAIJudge, PromptTemplate, judge_once
from calipers.running.executor import ThreadBackend
from calipers.running.judging import JudgeOptions, judge_requests
from judge_server import judge_server, numbered_requests

KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", KEY)


_requests = numbered_requests


def _judge(url: str, **options: Any) -> OpenAIJudge:
    return OpenAIJudge("j", "m", base_url=url, api_key_env="JUDGE_KEY", **options)


def _judged(n: int, url: str, workers: int, **options: Any) -> list[dict[str, Any]]:
    backend = ThreadBackend(workers)
    try:
        out = judge_requests(
            _requests(n), JudgeOptions(judges=[_judge(url, **options)]), backend, progress=False
        )
    finally:
        backend.close()
    return [j for judgments in out for j in judgments]


def _echo(body: dict[str, Any]) -> tuple[str, str]:
    n = int(body["messages"][0]["content"].split("answer number ")[1].split()[0])
    return ("answer", json.dumps({"score": n / 100}))


def test_at_most_j_calls_in_flight_and_j_reached() -> None:
    with judge_server() as server:
        server.script = lambda body: ("hang", 0.2)  # each answer takes 0.2 s
        judged = _judged(24, server.url, 6, timeout_s=5.0)
        assert server.max_in_flight == 6
    assert len(judged) == 24 and all(j["score"] == 1.0 for j in judged)


def test_each_call_gets_its_own_answer_in_order() -> None:
    with judge_server() as server:
        server.script = _echo
        judged = _judged(60, server.url, 16)
    assert [j["score"] for j in judged] == [i / 100 for i in range(60)]
    assert all(j["error"] is None for j in judged)


def test_429_is_retried_by_the_client() -> None:
    with judge_server() as server:
        server.actions = [("status", 429), ("status", 429)]
        server.script = _echo
        judged = _judged(1, server.url, 4)
        assert len(server.requests) == 3
    assert judged[0]["score"] == 0.0 and judged[0]["error"] is None


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (("status", 500), "HTTP 500"),
        (("raw", "{not json"), "bad response"),
        (("raw", json.dumps({"choices": []})), "has no message"),
        (("answer", "I think it is good."), "not a JSON object"),
        (("answer", '{"score": 7}'), "outside 0–1"),
    ],
)
def test_failures_are_missing_with_the_same_error_as_the_synchronous_path(
    action: tuple[str, Any], error: str
) -> None:
    with judge_server() as server:
        server.script = lambda body: action
        (on_loop,) = _judged(1, server.url, 2, max_retries=0)
        template, request = PromptTemplate.load("objective"), _requests(1)[0]
        (sync,) = judge_once(_judge(server.url, max_retries=0), template, request.prompt)
    assert on_loop["score"] is None and error in on_loop["error"]
    assert sync["score"] is None and sync["error"] == on_loop["error"]


def test_a_hanging_endpoint_times_out() -> None:
    with judge_server() as server:
        server.script = lambda body: ("hang", 3.0)
        (judged,) = _judged(1, server.url, 2, timeout_s=0.5, max_retries=0)
    assert judged["score"] is None and "timed out after 0.5s" in judged["error"]


def test_the_key_is_scrubbed_from_an_error_that_echoes_it() -> None:
    with judge_server() as server:
        server.script = lambda body: ("echo-auth", 401)
        (judged,) = _judged(1, server.url, 2, max_retries=0)
        headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
        assert headers["authorization"] == f"Bearer {KEY}"  # the key was sent, and came back
    assert KEY not in judged["error"] and "***" in judged["error"]


def test_without_aiohttp_the_httpx_transport_gives_the_same_judgments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(**_: Any) -> None:
        raise RuntimeError("To use the aiohttp client you must have installed the aiohttp extra")

    monkeypatch.setattr(openai, "DefaultAioHttpClient", missing)
    with judge_server() as server:
        server.script = _echo
        judged = _judged(20, server.url, 8)
    assert [j["score"] for j in judged] == [i / 100 for i in range(20)]


def test_a_cancelled_call_not_yet_started_is_never_sent_and_then_runs_before_done() -> None:
    from calipers.grading.async_judges import AsyncJudgeCalls

    order: list[str] = []
    with judge_server() as server:
        server.script = lambda body: (order.append("sent"), ("hang", 0.3))[1]
        judge = _judge(server.url, timeout_s=5.0)
        prompts = [r.prompt for r in _requests(4)]
        with AsyncJudgeCalls(1) as calls:  # one at a time: the last three wait their turn
            futures = calls.start(
                [(judge, p, lambda result: order.append("kept")) for p in prompts]
            )
            assert [f.cancel() for f in futures[2:]] == [True, True]
            # what had happened when the first future completed (the second call may be
            # sent at any moment after that, so order[-1] read later would race)
            at_done: list[list[str]] = []
            futures[0].add_done_callback(lambda _: at_done.append(list(order)))
            first = futures[0].result(timeout=10)
            assert at_done[0][:2] == ["sent", "kept"]  # kept before its future completed
            futures[1].result(timeout=10)
        assert first[1] is None and "score" in json.loads(first[0] or "")
    assert len(server.requests) == 2 and order == ["sent", "kept", "sent", "kept"]
