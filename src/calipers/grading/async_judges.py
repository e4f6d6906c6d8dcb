"""Many OpenAI-compatible judge calls at once on one event loop.

A thread per call with the synchronous client cost about 4 ms of CPU per call (the GIL handed
between dozens of threads, the typed request transform, a response model per reply): on two
cores, a judging topped out near 170 calls/s whatever the endpoint could do. Here every call is a
coroutine on one loop in one background thread, through the official client's async interface
(`openai.AsyncOpenAI`, one connection pool per judge, aiohttp as its transport when the `aiohttp`
extra is installed — it is a dependency of calipers — else httpx), with at most `workers` calls
in flight. Retries, timeouts and the errors a call can end with are the client's and
`OpenAIJudge`'s, exactly as on the synchronous path.

`AsyncJudgeCalls.start` returns a `concurrent.futures.Future` per call, so the driver treats these
calls like any backend's: done-callbacks (they run on the loop's thread), `cancel()` (a call not
yet started is dropped), `result()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from calipers.grading.judges import JudgeCallError, OpenAIJudge

Reply = tuple[str | None, str | None]
Call = tuple[OpenAIJudge, str, Callable[[Reply], None] | None]  # judge, prompt, then


def prefetch_client(judges: Sequence[object], backend_name: str) -> None:
    """Import the OpenAI client on a thread when these judges will use it: `import openai` costs
    about half a second of CPU (its hundreds of typed models), which then overlaps the store read
    or the pipelines instead of delaying the first judge call. Any import error is left for the
    real import to raise."""
    if backend_name != "local" or not any(isinstance(j, OpenAIJudge) for j in judges):
        return
    if "openai" in sys.modules:
        return

    threading.Thread(
        target=_import_settled, args=("openai",), name="calipers-import-openai", daemon=True
    ).start()


# What `_import_settled` froze, and whether a judging ended while it imported (then it freezes
# nothing: no `thaw` would come to give the objects back)
_settling = threading.Lock()
_frozen = False
_importing = False


def _import_settled(module: str) -> None:
    """Import `module` (any error is left for the real import to raise) with the cyclic
    collector off, then freeze what exists (`gc.freeze`: left out of every collection) until
    `thaw`. The client's import makes about 100,000 objects that live as long as the process;
    with the collector on, young and full collections traversed them again and again while the
    judging ran (about 0.1 s of CPU in a 1,000-call judging on the 2-core machine). Objects made
    later are collected as ever. Nothing is frozen where the collector is off or something else
    froze objects already (a server that forks): `thaw` must give back only what this froze."""
    global _frozen, _importing
    with _settling:
        settle = gc.isenabled() and gc.get_freeze_count() == 0 and not _frozen
        if settle:
            _importing = True
            gc.disable()
    try:
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    finally:
        if settle:
            with _settling:
                if _importing:  # no judging ended meanwhile
                    gc.freeze()
                    _frozen = True
                _importing = False
                gc.enable()


def thaw() -> None:
    """Give what `_import_settled` froze back to the collector: called when a judging ends, so
    that nothing alive at the import stays out of collections longer than the judging (an
    import still running then freezes nothing)."""
    global _frozen, _importing
    with _settling:
        _importing = False
        if _frozen:
            _frozen = False
            gc.unfreeze()


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
        self._closed = False

    def __enter__(self) -> AsyncJudgeCalls:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(wait=exc[0] is None)

    def start(self, calls: Sequence[Call]) -> list[Future[Reply]]:
        """Start every call; a future per call, completed with (reply, None) or (None, error),
        as `call_judge` returns them. A call's `then(result)` runs on the loop's thread before its
        future completes and before the call gives up its place (the driver caches replies
        there: at most `workers` answered calls are ever not on disk). `cancel()` on a future
        whose call has not started drops it.

        `workers` coroutines take the calls in order, one after another: no task, semaphore
        waiter or thread hand-off per call (each was CPU on the thread that every call's
        bytes pass through)."""
        futures: list[Future[Reply]] = [Future() for _ in calls]
        asyncio.run_coroutine_threadsafe(self._run(calls, futures), self._loop)
        return futures

    async def _run(self, calls: Sequence[Call], futures: list[Future[Reply]]) -> None:
        todo = iter(range(len(calls)))

        async def worker() -> None:
            for n in todo:  # one iterator shared by every worker: each call is taken once
                future = futures[n]
                if not future.set_running_or_notify_cancel():
                    continue
                judge, prompt, then = calls[n]
                try:
                    result = await self._ask(judge, prompt)
                    if then is not None:
                        then(result)
                except BaseException as exc:  # the driver re-raises it from result()
                    future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                else:
                    future.set_result(result)

        await asyncio.gather(*(worker() for _ in range(min(self.workers, len(calls)))))

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
        if wait:
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()

    async def _close_clients(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
