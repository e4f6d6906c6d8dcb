"""Invoke a user's pipeline on one input: a shell command template with `{input}` and `{output}`
filled with quoted file paths, or the input on stdin and the JSON on stdout.

Behaves as kelvin's runner (so that `calipers check` gives a kelvin user the same numbers): one
result per invocation and never an exception for a pipeline-side failure (non-zero exit, timeout,
missing or non-JSON output, no decision field); exponential backoff with jitter for transient exit
codes and timeouts; a cache of successful invocations keyed by sha256(command, input, decision
field) with kelvin's key and entry layout. Beyond kelvin: cache writes are atomic (temp file, then
rename), a timeout or an interrupt kills the pipeline's whole process group (and calipers'
reaper kills it if calipers itself is killed), a stdin/stdout mode, and outputs that are never
cached (`cache_if`).

The input text never enters the command line: it is written to a file (or piped to stdin), and only
our own file paths, shell-quoted, are substituted into the template.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from calipers import processes
from calipers.data import jsontext
from calipers.data.files import write_atomic
from calipers.redact import scrub, scrub_json, scrub_optional
from calipers.running.template import fill_command

DEFAULT_TIMEOUT_S = 150.0
CACHE_SCHEMA_VERSION = 1  # kelvin's; a different version is a miss, never a crash
_STDERR_TAIL_LINES = 20

Extract = Callable[[dict[str, Any]], Any]  # parsed output → decision; raises LookupError if absent


@dataclass(frozen=True)
class RetryPolicy:
    """kelvin's policy: retry only transient exit codes (and timeouts when asked), with
    `initial_delay_s · backoff_factor^(n−2) + U(0, jitter_max_s)` seconds before attempt n."""

    max_attempts: int = 3
    initial_delay_s: float = 1.0
    backoff_factor: float = 2.0
    jitter_max_s: float = 0.3
    transient_exit_codes: frozenset[int] = field(default_factory=frozenset)
    retry_on_timeout: bool = False

    def delay_before(self, attempt: int, rng: random.Random) -> float:
        if attempt < 2:
            return 0.0
        delay = self.initial_delay_s * self.backoff_factor ** (attempt - 2)
        return delay + (rng.random() * self.jitter_max_s if self.jitter_max_s > 0 else 0.0)

    def should_retry(self, *, attempt: int, exit_code: int | None, timed_out: bool) -> bool:
        if attempt >= self.max_attempts:
            return False
        if timed_out:
            return self.retry_on_timeout
        return exit_code is not None and exit_code in self.transient_exit_codes


@dataclass
class InvocationResult:
    ok: bool
    exit_code: int | None  # None: timed out
    input_path: Path
    output_path: Path
    parsed_output: dict[str, Any] | None = None
    decision_value: Any = None
    error: str | None = None
    stderr_tail: str | None = None
    attempts: int = 0  # 0 when served from the cache
    cached: bool = False
    reused: bool = False  # from the cache, an entry another run made (`reuse_salt`)
    interrupted: bool = False  # stopped by Ctrl-C / SIGTERM: neither a result nor a failure
    seconds: float = 0.0


@dataclass(frozen=True)
class Pipeline:
    """How to run the user's pipeline. `command` is theirs (trusted configuration); inputs are
    data and only ever reach it as files or stdin."""

    command: str
    mode: Literal["files", "stdio"] = "files"
    decision_field: str = ""  # part of the cache key, as in kelvin
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    retry: RetryPolicy = RetryPolicy()
    cache_dir: Path | None = None
    cwd: Path | None = None
    cache_salt: str = ""  # e.g. "epoch=2": repeats of one input are separate invocations
    # On a miss, the entry under this salt instead (another run's output, `--reuse-from`); a
    # hit there is copied under `cache_salt`. None: only the pipeline's own entries.
    reuse_salt: str | None = None
    # An output worth keeping (e.g. its telemetry is well-typed); others are never cached, and a
    # cached entry it rejects is a miss. None: every successful output.
    cache_if: Callable[[dict[str, Any]], bool] | None = None

    def cacheable(self, parsed: dict[str, Any] | None) -> bool:
        return parsed is not None and (self.cache_if is None or self.cache_if(parsed))

    def cache_key(self, rendered: str, salt: str | None = None) -> str:
        """kelvin's key: sha256 of the three parts joined by NUL bytes (so ("ab", "c") and
        ("a", "bc") differ); a salt, when set, is a fourth part (kelvin never sets one).
        `salt` replaces `cache_salt` (the key of another run's entry)."""
        salt = self.cache_salt if salt is None else salt
        parts = (self.command, rendered, self.decision_field)
        joined = "\x00".join((*parts, salt) if salt else parts)
        return hashlib.sha256(joined.encode("utf-8")).hexdigest()


def cached_result(
    pipeline: Pipeline, rendered: str, input_path: Path, output_path: Path, extract: Extract
) -> InvocationResult | None:
    """The cache's answer for this invocation, or None: the pipeline's own entry, else (with
    `reuse_salt`) the other run's, copied under the own key and marked `reused`."""
    if pipeline.cache_dir is None:
        return None
    key = pipeline.cache_key(rendered)
    hit = cache_lookup(pipeline.cache_dir, key, input_path, output_path, extract)
    if hit is not None and pipeline.cacheable(hit.parsed_output):
        return hit
    if pipeline.reuse_salt is None:
        return None
    other = pipeline.cache_key(rendered, pipeline.reuse_salt)
    hit = cache_lookup(pipeline.cache_dir, other, input_path, output_path, extract)
    if hit is None or not pipeline.cacheable(hit.parsed_output):
        return None
    hit.reused = True
    with contextlib.suppress(OSError):  # now this run's output too: its re-runs find it
        cache_store(pipeline.cache_dir, key, hit)
    return hit


def invoke(
    pipeline: Pipeline,
    input_path: Path,
    output_path: Path,
    *,
    extract: Extract,
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> InvocationResult:
    """Run the pipeline on the text in `input_path`, retrying transient failures; never raises
    for a failure of the pipeline itself."""
    start = time.perf_counter()
    rendered = input_path.read_text(encoding="utf-8")
    key = pipeline.cache_key(rendered)
    hit = cached_result(pipeline, rendered, input_path, output_path, extract)
    if hit is not None:
        hit.seconds = time.perf_counter() - start
        return hit
    rng = rng or random.Random(key)
    result: InvocationResult | None = None
    for attempt in range(1, pipeline.retry.max_attempts + 1):
        if attempt > 1:
            sleep(pipeline.retry.delay_before(attempt, rng))
        result = _attempt(pipeline, rendered, input_path, output_path, extract)
        result.attempts = attempt
        if (
            result.ok
            or result.interrupted
            or not pipeline.retry.should_retry(
                attempt=attempt, exit_code=result.exit_code, timed_out=result.exit_code is None
            )
        ):
            break
    assert result is not None
    if result.ok and pipeline.cache_dir is not None and pipeline.cacheable(result.parsed_output):
        with contextlib.suppress(OSError):  # a read-only or full cache must not fail the run
            cache_store(pipeline.cache_dir, key, result)
    result.seconds = time.perf_counter() - start
    return result


def _tail(text: str) -> str | None:
    lines = text.splitlines()
    return "\n".join(lines[-_STDERR_TAIL_LINES:]) if lines else None


def _run(
    pipeline: Pipeline, rendered: str, input_path: Path, output_path: Path
) -> tuple[int | None, str, str]:
    """(exit code or None on timeout, stdout, stderr). The command runs in its own session so a
    timeout or an interrupt can kill everything it started, not just the shell."""
    if pipeline.mode == "files":
        # Absolute: the command may run in another directory (the config's) than ours.
        command = fill_command(
            pipeline.command,
            input=shlex.quote(str(input_path.absolute())),
            output=shlex.quote(str(output_path.absolute())),
        )
        stdin = None
    else:
        command, stdin = pipeline.command, rendered
    return processes.run(
        command, input=stdin, timeout=pipeline.timeout_s, shell=True, cwd=pipeline.cwd
    )


def _scrub_file(path: Path) -> None:
    """Mask secrets in a file the pipeline wrote, whatever its encoding (bytes kept as they are
    otherwise)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # not text: the key's ASCII bytes are masked all the same
        text = raw.decode("latin-1")
        masked = scrub(text)
        if masked != text:
            path.write_bytes(masked.encode("latin-1"))
        return
    masked = scrub(text)
    if masked != text:
        write_atomic(path, masked)


def _attempt(
    pipeline: Pipeline, rendered: str, input_path: Path, output_path: Path, extract: Extract
) -> InvocationResult:
    def failed(error: str, code: int | None, stderr: str = "", **extra: Any) -> InvocationResult:
        # what the pipeline printed reaches reports, the store and the terminal: secrets masked,
        # and so does what it wrote before failing (the output file stays for the user to read)
        _scrub_file(output_path)
        return InvocationResult(
            False, code, input_path, output_path, error=scrub(error),
            stderr_tail=scrub_optional(_tail(stderr)), **extra,
        )  # fmt: skip

    with contextlib.suppress(FileNotFoundError):
        output_path.unlink()  # a stale output from an earlier attempt must not pass as this one's
    try:
        code, stdout, stderr = _run(pipeline, rendered, input_path, output_path)
    except processes.Stopped:
        return failed("interrupted before it started", None, interrupted=True)
    if processes.stopping():  # killed by Ctrl-C / SIGTERM: not the pipeline's failure
        return failed("interrupted", code, interrupted=True)
    if code is None:
        return failed(f"pipeline timed out after {pipeline.timeout_s:g}s", None)
    if code != 0:
        return failed(f"pipeline exited with code {code}", code, stderr)
    if pipeline.mode == "stdio":
        write_atomic(output_path, scrub(stdout))
    elif not output_path.exists():
        return failed("pipeline exited 0 but did not write the output file", code, stderr)
    try:
        raw = output_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return failed(f"could not read the output file: {exc}", code, stderr)
    try:  # strict JSON: a key twice, NaN, an integer beyond 64 bits are refused, not guessed
        parsed = jsontext.loads(raw)
    except jsontext.JSONError as exc:
        return failed(
            f"output is not valid JSON: {exc.message.removeprefix('not JSON: ')} ({exc.where()})",
            code,
            stderr,
        )
    if not isinstance(parsed, dict):
        return failed(f"output JSON is a {type(parsed).__name__}, not an object", code, stderr)
    scrubbed = scrub_json(parsed)  # before the store, the cache and every report
    if scrubbed != parsed:  # and in calipers' copy of the output, which the pipeline wrote
        parsed = scrubbed
        write_atomic(output_path, json.dumps(parsed, indent=2))
    try:
        value = extract(parsed)
    except LookupError as exc:
        message = exc.args[0] if exc.args else "decision field missing"
        return failed(str(message), code, stderr, parsed_output=parsed)
    return InvocationResult(True, code, input_path, output_path, parsed, value)


def cache_lookup(
    cache_dir: Path, key: str, input_path: Path, output_path: Path, extract: Extract
) -> InvocationResult | None:
    path = cache_dir / f"{key}.json"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # missing or corrupt: a miss
    if not isinstance(entry, dict) or entry.get("schema_version") != CACHE_SCHEMA_VERSION:
        return None
    res = entry.get("result")
    if not isinstance(res, dict) or not res.get("ok"):
        return None
    parsed = res.get("parsed_output")
    if not isinstance(parsed, dict):
        return None
    try:
        value = extract(parsed)
        write_unless_same(output_path, json.dumps(parsed, indent=2), same_json=True)
    except (LookupError, OSError):
        return None
    return InvocationResult(
        True, res.get("exit_code", 0), input_path, output_path, parsed, value, cached=True
    )


def write_unless_same(path: Path, text: str, *, same_json: bool = False) -> None:
    """`write_atomic`, unless the file already holds `text` — exactly, or with `same_json` the
    same JSON document in another layout (`text` being `json.dumps(value, indent=2)`, the file,
    say, the pipeline's own compact output of that value). A re-run finds its inputs and cached
    outputs in place, and replacing a file by rename is the costly part of a cache hit (ext4
    flushes the new file's data first: ~1 ms each, where reading it back costs ~20 µs)."""
    limit = len(text) + 1 if not same_json else 4 * len(text) + 4096  # longer: not the same
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            held = fh.read(limit)
        if held == text:
            return
        if same_json and len(held) < limit and json.dumps(json.loads(held), indent=2) == text:
            return  # same values, same types (1 and 1.0 dump differently), same key order
    except (OSError, ValueError, RecursionError):
        pass  # missing, unreadable, not UTF-8 or not JSON: written below
    write_atomic(path, text)


def cache_store(cache_dir: Path, key: str, result: InvocationResult) -> None:
    entry = {
        "schema_version": CACHE_SCHEMA_VERSION,
        "key": key,
        "result": {
            "ok": result.ok,
            "exit_code": result.exit_code,
            "parsed_output": result.parsed_output,
            "decision_value": result.decision_value,
            "error": result.error,
            "stderr_tail": result.stderr_tail,
        },
    }
    write_atomic(cache_dir / f"{key}.json", json.dumps(entry, indent=2))
