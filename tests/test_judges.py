"""Judges through the real `openai` client against a real HTTP server on 127.0.0.1: answers,
429 and 500 with retries, hangs, malformed bodies, concurrency, the cache, a command judge, frozen
prompt hashes, and no API key anywhere we keep text."""

from __future__ import annotations

import json
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from calipers.grading.judge_cache import JudgeCache
from calipers.grading.judges import (
    CommandJudge,
    OpenAIJudge,
    PromptTemplate,
    judge_once,
    judge_sample,
    parse_reply,
)
from calipers.schemes.rubric.definition import DIMENSIONS, load_rubric
from judge_server import judge_server

KEY = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", KEY)


def judge(url: str, **kw: object) -> OpenAIJudge:
    options: dict[str, object] = {"api_key_env": "JUDGE_KEY", "max_retries": 2, "timeout_s": 5.0}
    options.update(kw)
    return OpenAIJudge("gpt-test", "gpt-test", base_url=url, **options)  # type: ignore[arg-type]


def overall_prompt(text: str = "2 + 2 = 4") -> tuple[PromptTemplate, str]:
    template = PromptTemplate.load("overall")
    return template, template.render(task="Add 2 and 2.", output=text, expected="4")


def test_an_answer_becomes_a_judgment_with_the_prompt_hash() -> None:
    template, prompt = overall_prompt()
    with judge_server() as server:
        (j,) = judge_once(judge(server.url), template, prompt)
    assert (j["score"], j["scale_min"], j["scale_max"], j["error"]) == (4.0, 1.0, 5.0, None)
    assert j["prompt_hash"] == template.sha256 and j["rationale"] == "fine"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    assert request["body"]["model"] == "gpt-test"
    assert "2 + 2 = 4" in request["body"]["messages"][0]["content"]


def test_429_is_retried_then_answered() -> None:
    template, prompt = overall_prompt()
    with judge_server() as server:
        server.actions = [("status", 429), ("status", 429)]
        (j,) = judge_once(judge(server.url), template, prompt)
    assert j["score"] == 4.0 and len(server.requests) == 3


def test_500_after_the_last_retry_is_missing_with_its_error_never_zero() -> None:
    template, prompt = overall_prompt()
    with judge_server() as server:
        server.script = lambda body: ("status", 500)
        (j,) = judge_once(judge(server.url, max_retries=2), template, prompt)
    assert j["score"] is None and j["error"].startswith("HTTP 500")
    assert len(server.requests) == 3  # the first try and two retries


def test_a_hanging_server_times_out() -> None:
    template, prompt = overall_prompt()
    with judge_server() as server:
        server.actions = [("hang", 3.0)]
        (j,) = judge_once(judge(server.url, timeout_s=0.5, max_retries=0), template, prompt)
    assert j["score"] is None and "timed out" in j["error"]


@pytest.mark.parametrize(
    ("action", "error"),
    [
        (("raw", "{not json"), "bad response"),
        (("answer", "I think it is good."), "not a JSON object"),
        (("answer", '{"score": 7}'), "outside 1–5"),
        (("answer", '{"score": "high"}'), "not a number"),
    ],
)
def test_unreadable_replies_are_missing_with_their_error(
    action: tuple[str, str], error: str
) -> None:
    template, prompt = overall_prompt()
    with judge_server() as server:
        server.actions = [action]
        (j,) = judge_once(judge(server.url, max_retries=0), template, prompt)
    assert j["score"] is None and error in j["error"]


def test_fenced_json_and_rubric_replies() -> None:
    reply = (
        "Here you go:\n```json\n"
        + json.dumps(
            {
                "scores": dict.fromkeys(DIMENSIONS, 8),
                "red_flags": ["leak", "leak"],
                "bonuses": [],
                "rationale": "ok",
            }
        )
        + "\n```"
    )
    rows = parse_reply("rubric", reply)
    assert [r["dimension"] for r in rows] == list(DIMENSIONS)
    assert rows[0]["red_flags"] == ["leak"] and rows[0]["scale_max"] == 10.0


def test_many_calls_at_once_each_get_their_own_answer() -> None:
    template = PromptTemplate.load("objective")

    def script(body: dict[str, object]) -> tuple[str, str]:
        content = body["messages"][0]["content"]  # type: ignore[index]
        n = int(content.split("answer number ")[1].split()[0])
        return ("answer", json.dumps({"score": n / 100}))

    with judge_server() as server:
        server.script = script
        j = judge(server.url)
        prompts = [template.render(task="t", output=f"answer number {n} done") for n in range(40)]
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda p: judge_once(j, template, p), prompts))
    assert [r[0]["score"] for r in results] == [n / 100 for n in range(40)]
    assert len(server.requests) == 40


def test_cache_answers_repeat_calls_without_a_request(tmp_path: Path) -> None:
    template, prompt = overall_prompt()
    cache = JudgeCache(tmp_path / "cache")
    with judge_server() as server:
        j = judge(server.url)
        first = judge_sample([j], template, prompt, repeats=2, cache=cache)
        again = judge_sample([j], template, prompt, repeats=2, cache=cache)
    assert [r["repeat"] for r in first] == [0, 1]
    assert first == again and len(server.requests) == 2  # repeats are separate calls


def test_failures_are_not_cached(tmp_path: Path) -> None:
    template, prompt = overall_prompt()
    cache = JudgeCache(tmp_path / "cache")
    with judge_server() as server:
        server.actions = [("status", 400)]
        assert judge_once(judge(server.url), template, prompt, cache=cache)[0]["score"] is None
        assert judge_once(judge(server.url), template, prompt, cache=cache)[0]["score"] == 4.0


def test_no_api_key_in_errors_judgments_or_cache(tmp_path: Path) -> None:
    template, prompt = overall_prompt()
    cache = JudgeCache(tmp_path / "cache")
    with judge_server() as server:
        server.actions = [("echo-auth", 401)]
        failed = judge_once(judge(server.url, max_retries=0), template, prompt, cache=cache)
        ok = judge_once(judge(server.url), template, prompt, cache=cache)
    assert "***" in failed[0]["error"]
    kept = json.dumps(failed + ok) + "".join(p.read_text() for p in cache.directory.iterdir())
    assert KEY not in kept


def test_a_key_echoed_in_a_successful_reply_is_scrubbed(tmp_path: Path) -> None:
    template, prompt = overall_prompt()
    cache = JudgeCache(tmp_path / "cache")
    with judge_server() as server:
        server.actions = [("answer", json.dumps({"score": 4, "rationale": f"my key is {KEY}"}))]
        rows = judge_once(judge(server.url), template, prompt, cache=cache)
    assert rows[0]["score"] == 4.0 and rows[0]["rationale"] == "my key is ***"
    kept = json.dumps(rows) + "".join(p.read_text() for p in cache.directory.iterdir())
    assert KEY not in kept


def test_command_judge_reads_the_prompt_on_stdin(tmp_path: Path) -> None:
    script = tmp_path / "judge.py"
    script.write_text(
        "import sys, json\n"
        "prompt = sys.stdin.read()\n"
        "score = 5 if 'correct answer' in prompt else 1\n"
        "reply = '```json\\n' + json.dumps({'score': score, 'rationale': 'cmd'}) + '\\n```'\n"
        "print(json.dumps({'type': 'result', 'result': reply}))\n"
    )
    template = PromptTemplate.load("overall")
    j = CommandJudge("cmd", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    good = judge_once(j, template, template.render(task="t", output="the correct answer"))
    bad = judge_once(j, template, template.render(task="t", output="$(rm -rf /) nonsense"))
    assert good[0]["score"] == 5.0 and bad[0]["score"] == 1.0
    broken = CommandJudge("cmd", f"{shlex.quote(sys.executable)} -c 'import sys; sys.exit(4)'")
    assert "exited with 4" in judge_once(broken, template, "x")[0]["error"]


def test_rubric_prompt_lists_the_rubrics_flags() -> None:
    rules = load_rubric(Path("docs/examples/rubric.yaml")).base
    prompt = PromptTemplate.load("rubric").render(task="t", output="{braces} kept", rules=rules)
    assert "- invented_api: Calls a function the library does not have" in prompt
    assert "{braces} kept" in prompt


# Changing a prompt changes every judgment's prompt_hash: update these on purpose, with the
# prompt's version in its file name.
FROZEN = {
    ("overall", True): "2b8176c399d8eba91d145d6aa693835b1e842cbe16b73fc82d603d971cb3d02d",
    ("overall", False): "5f04d9a77f63792aef106fab089467809a4b3ad53570fbf25d4089cabb0026a7",
    ("rubric", True): "865c62e4846b4825f68e4abec96ea7aa79be8c8b3943d000035f1d9c8fcbf34e",
    ("rubric", False): "3dbaca52173265f9be8251ee7e5fa92aba5a08107b368db7f3e22ecb4f73799a",
    ("objective", True): "2bea1f8f063a23d5dc15dd77b6d650c5c73060d4fefd7212a1c8fdcc3a74a22e",
    ("objective", False): "dac26cf4a2ed71f5900cb8261b60c0fe645aa28cf8871630f63b62202eb992e8",
}


@pytest.mark.parametrize(("kind", "debias"), list(FROZEN))
def test_prompt_hashes_are_frozen(kind: str, debias: bool) -> None:
    template = PromptTemplate.load(kind, debias_length=debias)
    assert template.sha256 == FROZEN[(kind, debias)]
    assert ("Do not reward length" in template.text) is debias
