"""Many OpenAI-compatible judge calls at once on one event loop.

A thread per call with the synchronous client cost about 4 ms of CPU per call (the GIL handed
between dozens of threads, the typed request transform, a response model per reply): on two
cores, a judging topped out near 170 calls/s whatever the endpoint could do. Here every call is a
coroutine on one loop in one background thread, through the official client's async interface
(`openai.AsyncOpenAI`, one connection pool per judge, aiohttp as its transport when the `aiohttp`
extra is installed — it is a dependency of calipers — else httpx), with at most `workers` calls
in flight. Retries, timeouts and the errors a call can end with are the client's and
`OpenAIJudge`'s, exactly as on the synchronous path.

`AsyncJudgeCalls.submit` returns a `concurrent.futures.Future`, so the driver treats these calls
like any backend's: done-callbacks (they run on the loop's thread), `cancel()` (cancels the
coroutine), `result()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from calipers.grading.judges import JudgeCallError, OpenAIJudge

Reply = tuple[str | None, str | None]


def _limits(workers: int) -> Any:
    # the transport's own Limits class: httpx2 for openai ≥ 3, httpx before
    try:
        import httpx2 as httpx  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover — depends on the installed openai
        import httpx  # type: ignore[import-not-found,no-redef,unused-ignore]
    return httpx.Limits(max_connections=workers, max_keepalive_connections=workers)


def _http_client(workers: int) -> Any:
    import openai

    limits = _limits(workers)
    try:
        return openai.DefaultAioHttpClient(limits=limits)
    except (AttributeError, RuntimeError):  # an openai without the aiohttp transport
        return openai.DefaultAsyncHttpxClient(limits=limits)


class AsyncJudgeCalls:
    """An event loop in a daemon thread running judge calls, at most `workers` at once.
    Use as a context manager (or `close()`); leaving it waits for nothing that is cancelled."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="calipers-judge-calls", daemon=True
        )
        self._thread.start()
        self._clients: dict[str, Any] = {}
        self._writer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="calipers-keep")
        self._closed = False
        self._slots = asyncio.Semaphore(self.workers)  # bound to the loop on first use

    def __enter__(self) -> AsyncJudgeCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(wait=exc[0] is None)

    def submit(
        self, judge: OpenAIJudge, prompt: str, *, then: Callable[[Reply], None] | None = None
    ) -> Future[Reply]:
        """(reply, None) or (None, error), as `call_judge` returns them. `then(result)` runs on a
        writer thread before the call gives up its slot and its future completes (the driver
        caches replies there: at most `workers` answered calls are ever not on disk)."""
        return asyncio.run_coroutine_threadsafe(self._call(judge, prompt, then), self._loop)

    def _client(self, judge: OpenAIJudge) -> Any:
        # one client per endpoint, model and key: a judge ensemble on one server shares nothing
        # it should not (each client keeps its own retries and timeout)
        key = judge.identity() + "\x00" + repr(sorted(judge.client_options().items()))
        client = self._clients.get(key)
        if client is None:
            import openai

            client = openai.AsyncOpenAI(
                **judge.client_options(), http_client=_http_client(self.workers)
            )
            self._clients[key] = client
        return client

    async def _call(
        self, judge: OpenAIJudge, prompt: str, then: Callable[[Reply], None] | None
    ) -> Reply:
        async with self._slots:
            result = await self._ask(judge, prompt)
            if then is not None:  # file writes off the loop, but inside the slot
                await self._loop.run_in_executor(self._writer, then, result)
            return result

    async def _ask(self, judge: OpenAIJudge, prompt: str) -> Reply:
        try:
            text = await self._client(judge).post(
                "/chat/completions", body=judge.request_body(prompt), cast_to=str
            )
            return judge.redact(judge.content(text)), None
        except JudgeCallError as exc:
            return None, judge.redact(str(exc))
        except Exception as exc:  # the client's errors, mapped (others re-raised)
            return None, judge.redact(str(judge.call_error(exc)))

    def close(self, *, wait: bool = True) -> None:
        """Close the connections and stop the loop. `wait=False` (an interrupt): stop at once;
        calls in flight are abandoned with the daemon thread."""
        if self._closed:
            return
        self._closed = True
        if wait:
            closing = asyncio.run_coroutine_threadsafe(self._close_clients(), self._loop)
            # a connection that will not close is not the judging's error
            with contextlib.suppress(Exception):
                closing.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._writer.shutdown(wait=wait, cancel_futures=not wait)
        if wait:
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()

    async def _close_clients(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
