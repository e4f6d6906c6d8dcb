"""LLM judges: an OpenAI-compatible chat endpoint (through the official `openai` client) or any
program that reads the prompt on stdin and prints its reply.

Four kinds of judgment, one versioned prompt file each (`calipers/grading/prompts/`):

    overall     1–5 with a rationale (layered)
    rubric      the seven rubric dimensions on 1–10, red flags and bonuses (rubric)
    objective   0–1 with a rationale (objective)
    pairwise    which of two outputs is better, "1", "2" or "tie" (calipers.grading.pairwise)

Every judgment records the SHA-256 of the prompt template it was made with. A length-debias
paragraph is on by default. A call that still fails after its retries (429, 5xx, timeouts) or whose
reply cannot be read becomes a judgment with `score` null and the `error` — never a 0. API keys are
read from the environment variable you name; it and every other secret of the environment are
scrubbed (`calipers.redact`) from every reply and error text we keep.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from calipers import processes
from calipers.data import jsontext
from calipers.errors import InputError
from calipers.grading.judge_cache import JudgeCache
from calipers.redact import register_key_env, scrub

if TYPE_CHECKING:  # the rubric (pydantic, the schemes) is imported when a rubric is judged
    from calipers.schemes.rubric.definition import RubricRules

Kind = Literal["overall", "rubric", "objective"]
TEMPLATES: dict[str, str] = {
    "overall": "overall_v1.md",
    "rubric": "rubric_v1.md",
    "objective": "objective_v1.md",
    "pairwise": "pairwise_v1.md",  # two outputs, both orders (calipers.grading.pairwise)
}
DEBIAS = "length_debias_v1.md"
SCALES: dict[str, tuple[float, float]] = {
    "overall": (1.0, 5.0),
    "rubric": (1.0, 10.0),
    "objective": (0.0, 1.0),
    "pairwise": (0.0, 1.0),  # preference for the output shown first: 1, ½ tie, 0
}


class JudgeCallError(Exception):
    """The judge could not be reached or did not answer, after its retries."""


class JudgeReplyError(Exception):
    """The judge answered, but not with a judgment we can read."""


def _read_prompt(name: str) -> str:
    return resources.files("calipers.grading.prompts").joinpath(name).read_text("utf-8")


@dataclass(frozen=True)
class PromptTemplate:
    kind: str
    text: str
    sha256: str  # of the template (and the debias paragraph when on): the prompt's version

    @classmethod
    def load(cls, kind: str, *, debias_length: bool = True) -> PromptTemplate:
        if kind not in TEMPLATES:
            raise InputError(
                f"unknown judge kind '{kind}'", hint="Kinds: overall, rubric, objective, pairwise."
            )
        template = _read_prompt(TEMPLATES[kind])
        debias = _read_prompt(DEBIAS).strip() if debias_length else ""
        text = template.replace("{debias}", debias.replace("{", "{{").replace("}", "}}"))
        return cls(kind, text, hashlib.sha256(text.encode("utf-8")).hexdigest())

    def render(
        self, *, task: str, output: str, expected: str | None = None,
        rules: RubricRules | None = None,
    ) -> str:  # fmt: skip
        """The prompt for one sample. Its text fills slots in a template and is marked as data
        to evaluate; `str.format` does not interpret braces inside the values it inserts."""
        listed = {
            "red_flags": _listing(rules.red_flags if rules else {}),
            "bonuses": _listing(rules.bonuses if rules else {}),
        }
        return self.text.format(
            task=task, output=output, expected=expected or "(none given)", **listed
        )


def _listing(items: Mapping[str, str]) -> str:
    if not items:
        return "- (none listed: report an id of your own for anything that clearly applies)"
    return "\n".join(f"- {key}: {text}" for key, text in items.items())


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def _json_object(text: str) -> dict[str, Any]:
    """The reply's JSON object: the whole reply, a fenced block, or the outermost braces."""
    candidates = [text.strip()]
    candidates += _FENCE.findall(text)
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    strict: jsontext.JSONError | None = None
    for candidate in candidates:
        try:  # strict: `{"score": 4, "score": 5}` is no verdict (Python would keep 5)
            value = jsontext.loads(candidate)
        except jsontext.JSONError as exc:
            strict = strict or (exc if exc.field is not None else None)
            continue
        if isinstance(value, dict):
            # Tool envelopes (e.g. `claude -p --output-format json`) carry the reply in "result".
            inner = value.get("result")
            if isinstance(inner, str) and not {"score", "scores", "winner"} & set(value):
                return _json_object(inner)
            return value
    if strict is not None:  # JSON, but not strict JSON: say what, not "no JSON"
        raise JudgeReplyError(f"the reply's JSON is ambiguous: {strict}: {text[:200]!r}")
    raise JudgeReplyError(f"the reply is not a JSON object: {text[:200]!r}")


def _score(value: Any, kind: str, what: str) -> float:
    lo, hi = SCALES[kind]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeReplyError(f"{what} is {value!r}, not a number")
    if not lo <= float(value) <= hi:
        raise JudgeReplyError(f"{what} {value} is outside {lo:g}–{hi:g}")
    return float(value)


def _ids(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise JudgeReplyError(f"{what} must be a list of ids, got {value!r}")
    return list(dict.fromkeys(value))


_WINNER = {"1": 1.0, "first": 1.0, "2": 0.0, "second": 0.0, "tie": 0.5}


def _preference(value: Any) -> float:
    """A pairwise reply's winner as the preference for the output shown first (1, ½, 0)."""
    key = str(value).strip().strip(".").casefold() if isinstance(value, str | int) else None
    if isinstance(value, bool) or key not in _WINNER:
        raise JudgeReplyError(f'winner is {value!r}, not "1", "2" or "tie"')
    return _WINNER[key]


def parse_reply(kind: str, text: str) -> list[dict[str, Any]]:
    """The judgment(s) in a reply: one (overall, objective) or one per rubric dimension."""
    body = _json_object(text)
    rationale = body.get("rationale")
    rationale = str(rationale) if rationale is not None else None
    lo, hi = SCALES[kind]
    if kind == "pairwise":
        return [{"dimension": None, "score": _preference(body.get("winner")), "scale_min": lo,
                 "scale_max": hi, "rationale": rationale}]  # fmt: skip
    if kind != "rubric":
        score = _score(body.get("score"), kind, "score")
        return [{"dimension": None, "score": score, "scale_min": lo, "scale_max": hi,
                 "rationale": rationale}]  # fmt: skip
    from calipers.schemes.rubric.definition import DIMENSIONS

    scores = body.get("scores")
    if not isinstance(scores, dict):
        raise JudgeReplyError("the reply has no 'scores' object with the seven dimensions")
    missing = [d for d in DIMENSIONS if d not in scores]
    if missing:
        raise JudgeReplyError(f"the reply lacks dimension(s) {', '.join(missing)}")
    rows: list[dict[str, Any]] = [
        {"dimension": d, "score": _score(scores[d], kind, d), "scale_min": lo, "scale_max": hi,
         "rationale": None}
        for d in DIMENSIONS
    ]  # fmt: skip
    rows[0]["rationale"] = rationale
    rows[0]["red_flags"] = _ids(body.get("red_flags"), "red_flags")
    rows[0]["bonuses"] = _ids(body.get("bonuses"), "bonuses")
    return rows


class Judge(Protocol):
    name: str
    timeout_s: float  # per call
    max_retries: int  # after a failed call

    def identity(self) -> str:
        """What makes two calls interchangeable for the cache (kind of judge, model, …)."""
        ...

    def complete(self, prompt: str) -> str:
        """The judge's reply to `prompt`; JudgeCallError when it cannot be had."""
        ...

    def redact(self, text: str) -> str: ...


@dataclass
class OpenAIJudge:
    """Any OpenAI-compatible chat-completions endpoint. The client retries 429, 5xx, timeouts and
    connection errors with exponential backoff (honouring Retry-After) `max_retries` times.

    Requests go through the official client's raw `post` (its retries, timeouts, headers and
    errors), and the reply is read as JSON here: the typed `chat.completions.create` spends about
    2 ms of CPU per call transforming the request and building the response model, which bound
    a judging to a few hundred calls/s. Many calls at once go through `acomplete` on one event
    loop (calipers.grading.async_judges)."""

    name: str
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float | None = 0.0
    _client: Any = field(default=None, repr=False)

    def _key(self) -> str:
        return os.environ.get(self.api_key_env, "")

    def __getstate__(self) -> dict[str, Any]:
        # Sent to other processes (Ray) without the client: it holds connections and the key.
        return {**self.__dict__, "_client": None}

    def identity(self) -> str:
        return f"openai\x00{self.base_url or ''}\x00{self.model}\x00{self.temperature}"

    def redact(self, text: str) -> str:
        """Every secret of the environment and this judge's own key, masked."""
        return scrub(text, (self._key(),))

    def client_options(self) -> dict[str, Any]:
        """What the sync and the async client are made with."""
        return {"api_key": self._key() or "not-set", "base_url": self.base_url,
                "timeout": self.timeout_s, "max_retries": self.max_retries}  # fmt: skip

    def client(self) -> Any:
        if self._client is None:
            import openai  # lazily: the client costs ~0.5 s to import

            self._client = openai.OpenAI(**self.client_options())
        return self._client

    def request_body(self, prompt: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": [{"role": "user", "content": prompt}],
        }  # fmt: skip
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def complete(self, prompt: str) -> str:
        try:
            text = self.client().post(
                "/chat/completions", body=self.request_body(prompt), cast_to=str
            )
        except Exception as exc:  # mapped, or re-raised when not the client's
            raise self.call_error(exc) from None
        return self.content(text)

    def call_error(self, exc: Exception) -> JudgeCallError:
        """The client's exception as a judge error with the key scrubbed; anything that is not
        the client's is re-raised."""
        import openai

        if isinstance(exc, openai.APIStatusError):
            return JudgeCallError(self.redact(f"HTTP {exc.status_code}: {exc.message}"))
        if isinstance(exc, openai.APITimeoutError):
            return JudgeCallError(f"timed out after {self.timeout_s:g}s")
        if isinstance(exc, openai.APIConnectionError):
            return JudgeCallError(self.redact(f"connection failed: {exc}"))
        if isinstance(exc, openai.APIError | ValueError):
            return JudgeCallError(self.redact(f"bad response: {exc}"))
        raise exc

    def content(self, text: str) -> str:
        """The message text of a chat completion's body."""
        try:
            body = jsontext.loads_tool(text)
        except ValueError as exc:
            raise JudgeCallError(self.redact(f"bad response: {exc}: {text[:200]!r}")) from None
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise JudgeCallError("the response has no message") from None
        if not isinstance(content, str):
            raise JudgeCallError("the response message has no text")
        return content


@dataclass
class CommandJudge:
    """A program that reads the prompt on stdin and prints its reply (JSON, or text holding it),
    e.g. `claude -p --output-format json` or `llm -m MODEL`. Run without a shell. A timeout or a
    non-zero exit (a rate limit, a network error inside the tool) is retried `max_retries` times,
    after 1, 2, 4 … seconds (`retry_delay_s` doubled each time)."""

    name: str
    command: str
    timeout_s: float = 120.0
    max_retries: int = 2
    retry_delay_s: float = 1.0

    def identity(self) -> str:
        """The command line and the content of every file it names (the judge's script): a
        changed judge program is a new judge, not a cache hit on the old one's replies."""
        return f"command\x00{self.command}\x00{processes.files_digest(self.command)}"

    def redact(self, text: str) -> str:
        """Every secret of the environment masked: the program runs with calipers' environment,
        and may print a key in its reply or its error."""
        return scrub(text)

    def complete(self, prompt: str) -> str:
        for attempt in range(self.max_retries + 1):
            try:
                return self._once(prompt)
            except JudgeCallError as exc:
                if attempt == self.max_retries or exc.args[0].startswith("judge command not"):
                    raise
                time.sleep(self.retry_delay_s * 2**attempt)
        raise AssertionError("unreachable")

    def _once(self, prompt: str) -> str:
        argv = shlex.split(self.command)
        try:
            code, out, err = processes.run(argv, input=prompt, timeout=self.timeout_s)
        except FileNotFoundError:
            raise JudgeCallError(f"judge command not found: {argv[0]}") from None
        except processes.Stopped:
            raise JudgeCallError("judge command not started: calipers is stopping") from None
        if code is None:
            raise JudgeCallError(f"judge command timed out after {self.timeout_s:g}s")
        if code != 0:
            tail = err.strip().splitlines()[-1:] or [""]
            raise JudgeCallError(f"judge command exited with {code}: {tail[0]}")
        return out


def call_judge(judge: Judge, prompt: str) -> tuple[str | None, str | None]:
    """(reply, None) or (None, error) — a plain function of picklable arguments, so that any
    backend (threads, Ray) can run it."""
    try:
        # a reply that echoes the API key (a misconfigured proxy, a prompt-injected judge) is
        # scrubbed before it reaches the cache, the store or a report
        return judge.redact(judge.complete(prompt)), None
    except JudgeCallError as exc:
        return None, judge.redact(str(exc))


def judgments_from(
    judge: Judge, template: PromptTemplate, reply: str | None, error: str | None, *, repeat: int
) -> list[dict[str, Any]]:
    """Judgments in the sample model's shape from a reply; a failed call or an unreadable reply
    is one judgment with score null and its error."""
    base = {"judge": judge.name, "prompt_hash": template.sha256, "repeat": repeat}
    try:
        if reply is None:
            raise JudgeCallError(error or "no reply")
        rows = parse_reply(template.kind, reply)
    except (JudgeCallError, JudgeReplyError) as exc:
        lo, hi = SCALES[template.kind]
        return [{**base, "dimension": None, "score": None, "scale_min": lo, "scale_max": hi,
                 "rationale": None, "red_flags": None, "bonuses": None,
                 "error": judge.redact(str(exc))}]  # fmt: skip
    return [{**base, "red_flags": None, "bonuses": None, "error": None, **row} for row in rows]


def keeper(
    cache: JudgeCache | None,
    key: str | None,
    judge: Judge,
    template: PromptTemplate,
    repeat: int,
    *,
    made: dict[int, list[dict[str, Any]]] | None = None,
    slot: int = 0,
) -> Callable[[tuple[str | None, str | None]], None]:
    """What caches one call's (reply, error): a readable reply, one line appended to the cache; a
    failed call or an unreadable reply never (the next run asks again). `made`: where the
    judgments read from the reply to decide are left, under `slot`, for the caller to use
    instead of reading the same reply again."""

    def keep(result: tuple[str | None, str | None]) -> None:
        reply, error = result
        if cache is None or key is None or reply is None:
            return
        rows = judgments_from(judge, template, reply, error, repeat=repeat)
        if made is not None:
            made[slot] = rows
        if rows[0]["error"] is None:
            cache.put(key, reply)

    return keep


def judge_once(
    judge: Judge,
    template: PromptTemplate,
    prompt: str,
    *,
    repeat: int = 0,
    cache: JudgeCache | None = None,
) -> list[dict[str, Any]]:
    """One call (or cache hit) → judgments; only readable replies are cached."""
    key = cache.key(judge, template.sha256, prompt, repeat) if cache else None
    reply = cache.get(key) if cache and key else None
    cached = reply is not None
    error = None
    if reply is None:
        reply, error = call_judge(judge, prompt)
    rows = judgments_from(judge, template, reply, error, repeat=repeat)
    if cache and key and reply is not None and not cached and rows[0]["error"] is None:
        cache.put(key, reply)
    return rows


def judge_sample(
    judges: Sequence[Judge],
    template: PromptTemplate,
    prompt: str,
    *,
    repeats: int = 1,
    cache: JudgeCache | None = None,
) -> list[dict[str, Any]]:
    """Every judge of the ensemble, `repeats` times each."""
    out: list[dict[str, Any]] = []
    for judge in judges:
        for repeat in range(repeats):
            out.extend(judge_once(judge, template, prompt, repeat=repeat, cache=cache))
    return out


_NAMED = re.compile(r"^([A-Za-z0-9][\w.-]*)=(openai:|command:)")


def check_endpoint(url: str, where: str) -> None:
    """An endpoint is an http(s) URL with a host (and a port that is a number): anything else is
    an error before any judge is called, not a timeout after the run."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise InputError(
            f"{where}: the endpoint {url!r} is not an http(s) URL with a host",
            hint="Write it like http://localhost:8000/v1 (openai:MODEL@URL, or --judge-base-url "
            "URL for every openai judge).",
        )


def judge_from_spec(
    spec: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY"
) -> Judge:
    """A judge from the command line: `openai:MODEL` (an OpenAI-compatible endpoint at
    `base_url`, or its own with `openai:MODEL@URL`; its key in the environment variable
    `api_key_env`) or `command:PROGRAM ARGS`
    (the prompt on stdin), optionally named `NAME=…`. The key never appears on the command line.
    Default names: `openai:MODEL`; `command:PROGRAM`, plus its first argument when that is not
    an option (`command:python judge.py`)."""
    named = _NAMED.match(spec)
    name = named.group(1) if named else None
    body = spec[named.end(1) + 1 :] if named else spec
    kind, _, rest = body.partition(":")
    if kind == "openai" and rest:
        model, url = rest, base_url
        head, at, tail = rest.rpartition("@")
        # a judge's own endpoint: MODEL@URL; `@` and digits stay in the model's name (Vertex's
        # claude-3-5-sonnet@20240620)
        if at and head and not tail.isdigit():
            model, url = head, tail
            check_endpoint(tail, f"--judge {spec!r}")
        elif base_url is not None:
            check_endpoint(base_url, "--judge-base-url")
        return OpenAIJudge(name=name or f"openai:{model}", model=model, base_url=url,
                           api_key_env=api_key_env)  # fmt: skip
    if kind == "command" and rest.strip():
        try:
            argv = shlex.split(rest)
        except ValueError as exc:
            raise InputError(f"--judge {spec!r}: {exc}", hint="Check the quoting.") from None
        if name is None:
            shown = [Path(argv[0]).name] if argv else []
            if len(argv) > 1 and not argv[1].startswith("-"):
                shown.append(Path(argv[1]).name)
            name = "command:" + " ".join(shown)
        return CommandJudge(name=name, command=rest)
    raise InputError(
        f"--judge {spec!r}: expected openai:MODEL or command:PROGRAM (optionally NAME=…)",
        hint="e.g. --judge openai:gpt-4o-mini --judge-base-url http://localhost:8000/v1, or "
        "--judge 'strict=command:claude -p --output-format json'.",
    )


def judges_from_specs(
    specs: Sequence[str], *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY"
) -> list[Judge]:
    """Judges of an ensemble, each with its own name (a repeated name gets #2, #3, …)."""
    register_key_env(api_key_env)  # its value is scrubbed from every error the CLI shows
    judges = [judge_from_spec(s, base_url=base_url, api_key_env=api_key_env) for s in specs]
    seen: dict[str, int] = {}
    for judge in judges:
        seen[judge.name] = seen.get(judge.name, 0) + 1
        if seen[judge.name] > 1:
            judge.name = f"{judge.name}#{seen[judge.name]}"
    return judges
