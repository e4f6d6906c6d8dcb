"""The viewer's web app: its pages over the store, each with a JSON twin at the same address
plus `.json`, served by Starlette (`create_app`; `calipers view` runs it with uvicorn).

    /            (and /runs)  every run: counts, headline numbers, cost; tick two or more → compare
    /compare     one comparison, verdict first (the twin is `calipers compare --json`'s document);
                 with several candidates, each against the baseline (pages.py)
    /flips       the samples that changed, filtered and paged
    /sample      one sample of one run, beside another
    /judges, /repeats, /leaderboard, /history   pages.py

Every answer is built on a worker thread (the handlers are plain functions: Starlette runs them
in its thread pool) from the store read as `reading.Reader` reads it. Safe by construction: every
value reaches the page through jinja2's autoescape, every response carries a Content-Security-
Policy that allows no script, no request anywhere, and forms only to this server, and the Host
header must name this machine (a page elsewhere cannot reach the viewer by DNS rebinding).
Query values are data: run names go to calipers' functions, which quote them, and the sample
query is parameterised; none is ever a path.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from calipers.data.files import visible_controls
from calipers.errors import CalipersError, DataError
from calipers.version import calipers_version
from calipers.view.pages import MorePages
from calipers.view.reading import (
    BUSY_RETRY_S,
    Later,
    NotFound,
    Reader,
    StoreBusy,
    begin_request,
    end_request,
    served_stale,
)
from calipers.view.runs import Composites

LOG = logging.getLogger("calipers.view")

# No script, style only inline, images only data: URLs (the plots are inline SVG), forms only to
# this server, no framing, no <base>: nothing on a page can load or send anything elsewhere.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",  # a reload reads the store again: new runs appear
}
IDLE_S = 1.0  # work ahead (`prepare_board`) starts once no request came for this long
# The warm-up's heavier part (the composites, the statistics stack's imports: 0.7–1 s of CPU on
# 100 runs × 10,000 samples) waits for the first page to be answered, or this long for a first
# request: on threads beside that page, they took the CPU and the GIL it needed.
FIRST_PAGE_WAIT_S = 2.0
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
TEMPLATES = ("view_runs.html.j2", "view_compare.html.j2", "view_flips.html.j2",
             "view_sample.html.j2", "view_message.html.j2", "view_several.html.j2",
             "view_judges.html.j2", "view_repeats.html.j2", "view_leaderboard.html.j2",
             "view_history.html.j2")  # fmt: skip
PAGE_LIST = ("/ (the runs), /compare, /flips, /sample, /judges, /repeats, /leaderboard, "
             "/history; each also as .json")  # fmt: skip


class SecurityHeaders:
    """Adds `HEADERS` to every response, error pages and the host check's refusal included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)


@dataclass
class Page:
    """What a handler answers: the template and its context for the page, and the twin's data
    (or its text, already serialised)."""

    template: str
    title: str
    context: dict[str, Any]
    twin: Any
    twin_text: str | None = None


def _url(path: str, params: Mapping[str, Any] | None = None, **extra: Any) -> str:
    """`path?query` from `params` and `extra` (empty values left out), encoded: a name is never
    markup or a path here, only a query value."""
    merged = {k: v for k, v in {**(params or {}), **extra}.items() if v not in (None, "")}
    # a list is a repeated parameter (`candidate=B&candidate=C`)
    return path + ("?" + urlencode(merged, doseq=True) if merged else "")


def _twin_url(request: Request) -> str:
    path = "/runs" if request.url.path in ("/", "") else request.url.path
    query = request.url.query
    return path + ".json" + (f"?{query}" if query else "")


class Viewer(MorePages):
    """The pages over one store; `routes()` for Starlette."""

    page = Page  # for MorePages: how a handler answers

    def __init__(self, db: Path) -> None:
        self.db = db
        self.reader = Reader(db)
        self._env: Any = None  # the templates' jinja2 environment, made on first use (`env`)
        self._env_lock = threading.Lock()
        self.answered = threading.Event()  # set once a first request has been answered
        # the runs' layered composites, kept apart: computed once a first page was answered
        self.composites = Composites(after=self.answered, wait_s=FIRST_PAGE_WAIT_S)
        self._answering, self._last_answer = 0, 0.0  # requests in progress; when one ended
        self._answering_lock = threading.Lock()

    @property
    def env(self) -> Any:
        """The templates' environment, made when first needed — by the warm-up, on a thread
        beside the first listing: importing jinja2 was a fifth of the time to listening."""
        with self._env_lock:
            if self._env is None:
                from calipers.render.html import environment

                env = environment("calipers.view")
                env.globals["url"] = _url
                self._env = env
            return self._env

    # ------------------------------------------------------------------ plumbing

    def routes(self) -> list[Route]:
        pages: dict[str, Callable[[Request], Page]] = {
            "/runs": self.runs,
            "/compare": self.compare,
            "/flips": self.flips,
            "/sample": self.sample,
            "/judges": self.judges,
            "/repeats": self.repeats,
            "/leaderboard": self.leaderboard,
            "/history": self.history,
        }
        out = [Route("/", self._endpoint(self.runs, twin=False), methods=["GET"])]
        for path, build in pages.items():
            out.append(Route(path, self._endpoint(build, twin=False), methods=["GET"]))
            out.append(Route(path + ".json", self._endpoint(build, twin=True), methods=["GET"]))
        return out

    def _endpoint(self, build: Callable[[Request], Page], *, twin: bool) -> Callable[..., Any]:
        # A plain function: Starlette runs it on its thread pool, so a slow read never holds the
        # event loop (and other requests) up.
        def endpoint(request: Request) -> Response:
            begin_request()
            with self._answering_lock:
                self._answering += 1
                self._last_answer = time.monotonic()
            try:
                page = build(request)
                stale = served_stale()
                # the store is being written: this is how it stood before; the page reloads
                headers = {"X-Calipers-Store": "busy; shown as before the write in progress",
                           "Retry-After": str(BUSY_RETRY_S)} if stale else None  # fmt: skip
                if twin:
                    text = page.twin_text if page.twin_text is not None else _json(page.twin)
                    return Response(text, headers=headers, media_type="application/json")
                page.context.setdefault("stale", stale)
                html = self._render(request, page)
                return Response(html, headers=headers, media_type="text/html")
            except StoreBusy as exc:
                return self._message(
                    request, twin, 503, "Store busy, retrying", str(exc) + ".",
                    f"This page reloads itself in {BUSY_RETRY_S} s; the write will end soon.",
                    refresh=BUSY_RETRY_S,
                )  # fmt: skip
            except CalipersError as exc:
                status = 404 if isinstance(exc, NotFound) else 422 if isinstance(
                    exc, DataError) else 400  # fmt: skip
                message, hint = _in_query_names(exc)
                heading = "Not found" if status == 404 else "Cannot show this page"
                return self._message(request, twin, status, heading, message, hint)
            except Exception as exc:  # a bug: its traceback goes to the terminal, not the page
                LOG.exception("calipers view: %s failed", request.url.path)
                return self._message(
                    request, twin, 500, "Error in calipers view",
                    f"calipers view failed on this page ({type(exc).__name__}).",
                    "The traceback is in the terminal that runs calipers view; please report it.",
                )  # fmt: skip
            finally:
                with self._answering_lock:
                    self._answering -= 1
                    self._last_answer = time.monotonic()
                self.answered.set()
                end_request()

        return endpoint

    def idle(self) -> bool:
        """No request is being answered, nor was in the last IDLE_S, and the runs' composites
        are not being computed: work ahead may begin."""
        if self.composites.working.locked():
            return False
        with self._answering_lock:
            return not self._answering and time.monotonic() - self._last_answer >= IDLE_S

    def _render(self, request: Request, page: Page) -> str:
        template = self.env.get_template(page.template)
        context = {"stale": False, "refresh": None, **page.context}
        return str(
            template.render(
                title=page.title, store=str(self.db), version=calipers_version(),
                json_url=_twin_url(request), busy_retry=BUSY_RETRY_S, **context,
            )
        )  # fmt: skip

    def _message(
        self, request: Request, twin: bool, status: int, heading: str, message: str,
        hint: str | None, *, refresh: int | None = None,
    ) -> Response:  # fmt: skip
        headers = {"Retry-After": str(refresh)} if refresh else None
        if twin:
            body = {"error": message, "hint": hint, "status": status}
            return Response(_json(body), status, headers, media_type="application/json")
        page = Page("view_message.html.j2", heading, {"heading": heading, "message": message,
                    "hint": hint, "refresh": refresh}, None)  # fmt: skip
        return Response(self._render(request, page), status, headers, media_type="text/html")

    def listing(self) -> dict[str, Any]:
        """The runs page's data (`runs.runs_listing`), with the layered composites known."""
        from calipers.view.runs import cached_listing

        return self.composites.fill(cached_listing(self.reader), self.reader.read)

    # ------------------------------------------------------------------ pages

    def runs(self, request: Request) -> Page:
        data = self.listing()
        q = request.query_params.get("q", "").strip()
        shown = [r for r in data["runs"] if q.casefold() in r["run"].casefold()]
        twin = {**data, "query": q or None, "runs": shown}
        context: dict[str, Any] = {"data": data, "shown": shown, "q": q}
        if data["layered_pending"]:  # the composites are on their way: look again shortly
            context["refresh"] = 2
        return Page("view_runs.html.j2", "Runs", context, twin)

    def _pick(self, request: Request, *, prefix: str = "") -> Any:
        from calipers.view.comparing import pick

        params = dict(request.query_params)
        if prefix:  # the sample page: the runs shown are the pair
            params = {**params, "baseline": params.get("run", ""),
                      "candidate": params.get("other", "")}  # fmt: skip
        return pick(params, request.query_params.getlist("run") if not prefix else [],
                    self.listing())  # fmt: skip

    def compared(self, chosen: Any, *, cost: bool = False) -> Any:
        """The comparison `chosen` names (a pair, or several candidates), kept for the store's
        state: without its cost section for a page (which does not show it), with it for the
        twin (`calipers compare --json`'s document) — added to the one kept when there is one."""
        from calipers.view.comparing import compare, with_cost

        key = _compare_key(chosen)
        if not cost:
            found, costed = self.reader.peek((*key, "cost"), big=True)
            if found:
                return costed
            return self.reader.cached(key, lambda store: compare(store, chosen, cost=False),
                                      big=True)  # fmt: skip

        def make(store: Any) -> Any:
            found, plain = self.reader.peek(key, big=True)
            if found:
                return with_cost(store, chosen, plain)
            return compare(store, chosen)

        return self.reader.cached((*key, "cost"), make, big=True)

    def _flips_of(self, chosen: Any, *, verdict: bool = False) -> tuple[Any, Later | None]:
        """The pair's flips — the comparison's when it is kept, else computed alone (a fraction
        of the comparison over millions of samples) — and, with `verdict`, the comparison as
        far as it is (`Reader.later`: started on a thread when it is not kept)."""
        from calipers.view.comparing import compare, pair_flips

        key = _compare_key(chosen)
        for kept in ((*key, "cost"), key):
            found, compared = self.reader.peek(kept, big=True)
            if found:
                return compared.flips(chosen.candidate), Later(compared)
        flips = self.reader.cached(("flips", *key[1:]),
                                   lambda store: pair_flips(store, chosen), big=True)  # fmt: skip
        if not verdict:
            return flips, None
        made = self.reader.later(key, lambda store: compare(store, chosen, cost=False), big=True)
        return flips, made

    def compare(self, request: Request) -> Page:
        from calipers.data.model import CLUSTERS
        from calipers.stats.estimate import INTERVAL_METHODS
        from calipers.view.comparing import forest, pick_several, task_bars

        several = pick_several(
            request.query_params,
            request.query_params.getlist("run"),
            self.listing(),
            request.query_params.getlist("candidate"),
        )
        if len(several.candidates) > 1:  # each against the baseline: pages.py
            return self.several(request, several)  # type: ignore[no-any-return]
        chosen = several.pair(several.candidates[0])
        if request.url.path.endswith(".json"):  # the twin: the report, as `--json` writes it
            from calipers.render.json_report import dumps

            return Page("", "", {}, None, twin_text=dumps(self.compared(chosen, cost=True).report))
        compared = self.compared(chosen)
        runs = {r["run"]: r for r in self.listing()["runs"]}
        both = [runs.get(chosen.baseline, {}), runs.get(chosen.candidate, {})]
        metrics = [m for m in both[0].get("metrics", {}) if m in both[1].get("metrics", {})]
        query = chosen.query()
        report = compared.report
        context = {
            "pick": chosen, "report": report, "pair": compared.pair, "query": query,
            "label": _label(report), "forest": forest(compared.pair, _label(report)),
            "run_names": list(runs),
            "bars": task_bars(compared.pair),
            "metrics": metrics, "clusters": [c for c in CLUSTERS if c != "auto"],
            "intervals": [m for m in INTERVAL_METHODS if m != "auto"],
            "flips": (report.get("flips") or [None])[0],
            "swap_url": _url("/compare", query, baseline=chosen.candidate,
                             candidate=chosen.baseline),
            "command": self._command(chosen),
        }  # fmt: skip
        title = f"{chosen.candidate} against {chosen.baseline}"
        return Page("view_compare.html.j2", title, context, None)

    def _command(self, chosen: Any) -> str:
        words = ["calipers", "compare", "--db", str(self.db), "--scheme", chosen.scheme,
                 "--baseline", chosen.baseline, "--candidate", chosen.candidate]  # fmt: skip
        for name, value in chosen.query().items():
            if name not in ("baseline", "candidate", "scheme"):
                words += [f"--{name}"] if name == "equivalence" else [f"--{name}", value]
        return visible_controls(" ".join(shlex.quote(w) for w in words) + " --gate none --json -")

    def flips(self, request: Request) -> Page:
        from calipers.view.comparing import flips_page

        chosen = self._pick(request)
        params = request.query_params
        kind, task, klass = params.get("kind", ""), params.get("task", ""), params.get("class", "")
        size_text = params.get("size", "").strip()
        size = _number("size", size_text) if size_text else None
        page = _page_number(params.get("page", "1"))
        found, compared = self._flips_of(chosen, verdict=True)
        assert compared is not None
        verdict = None if compared.value is None else compared.value.pair["verdict"]
        data = flips_page(found, chosen, verdict, kind=kind, task=task, klass=klass, size=size,
                          page=page)  # fmt: skip
        # the verdict follows when its comparison is made (the flips did not wait for it)
        data["verdict_pending"] = compared.pending
        data["verdict_error"] = None if compared.error is None else _error_text(compared.error)
        query = chosen.query()
        sample_query = {k: v for k, v in query.items() if k not in ("baseline", "candidate")}
        sample_query = {"run": chosen.baseline, "other": chosen.candidate, **sample_query}
        context = {
            "data": data, "query": query, "sample_query": sample_query,
            "refresh": 2 if compared.pending else None,
            "filter_query": {**query, "kind": kind, "task": task, "class": klass,
                             "size": size_text},
        }  # fmt: skip
        title = f"Flips of {chosen.candidate} against {chosen.baseline}"
        return Page("view_flips.html.j2", title, context, data)

    def sample(self, request: Request) -> Page:
        from calipers.view.comparing import sample_change
        from calipers.view.sample import sample_detail

        params = request.query_params
        run, other = params.get("run", ""), params.get("other", "")
        task, sample_id = params.get("task"), params.get("id")
        if not run or task is None or sample_id is None:
            from calipers.errors import InputError

            raise InputError(
                "a sample page needs `run`, `task` and `id` (and `other`, a run to show beside)",
                hint="Open samples from a comparison's flips.",
            )
        data = self.reader.cached(
            ("sample", run, other, task, sample_id),
            lambda store: sample_detail(store, run, other, task, sample_id),
        )
        change, compare_query = {}, None
        if other and params.get("scheme"):  # opened from a comparison: its line for the sample
            chosen = self._pick(request, prefix="sample")
            change = sample_change(self._flips_of(chosen)[0], task, sample_id)
            compare_query = chosen.query()
        twin = {**data, "change": change or None}
        context = {"data": data, "change": change, "compare_query": compare_query}
        return Page("view_sample.html.j2", f"Sample {sample_id}", context, twin)


def _compare_key(chosen: Any) -> tuple[Any, ...]:
    """A comparison's key in the reader's cache: a pair's (`Pick`) or several candidates'."""
    runs = getattr(chosen, "candidates", None) or chosen.candidate
    return ("compare", chosen.baseline, runs, chosen.scheme, chosen.options)


def _error_text(exc: Exception) -> str:
    """What a page says of an error met on a thread: a library error's message, else its kind
    (its traceback in the terminal)."""
    if isinstance(exc, CalipersError):
        return _in_query_names(exc)[0]
    return f"the comparison failed ({type(exc).__name__}); the traceback is in the terminal"


def _label(report: Mapping[str, Any]) -> str:
    from calipers.schemes.layered.scoring import value_label

    return value_label(report["scheme"], report["parameters"])


def _page_number(text: str) -> int:
    from calipers.errors import InputError

    try:
        return int(text)
    except ValueError:
        raise InputError(f"page={text!r} is not a page number", parameters=["page"]) from None


def _number(name: str, text: str) -> float:
    from calipers.view.comparing import OPTIONS

    return float(OPTIONS["confidence"][1](name, text))  # a finite number, or 400 naming it


_C1 = re.compile("[\x7f-\x9f]")


def _json(data: Any) -> str:
    """A twin's text. Like `--json` (render/json_report.py), DEL and the C1 controls are escaped
    as well as C0 (0x9b is a one-byte CSI): a twin piped to a terminal cannot drive it."""
    from calipers.render.json_report import clean

    text = json.dumps(clean(data), indent=2, ensure_ascii=False, allow_nan=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _in_query_names(exc: CalipersError) -> tuple[str, str | None]:
    """The library names its parameters (`confidence_level`); the page names the query's."""
    from calipers.view.comparing import QUERY_NAMES

    message, hint = exc.message, exc.hint
    for name in exc.parameters:
        shown = f"`{QUERY_NAMES.get(name, name)}`"
        message = message.replace(f"`{name}`", shown)
        hint = hint.replace(f"`{name}`", shown) if hint else hint
    return message, hint


def allowed_hosts(host: str) -> list[str]:
    """The Host headers the app answers: this machine's loopback names, and the address it was
    bound to; any, when bound to every interface (0.0.0.0, ::), as the user then asked."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    return list(dict.fromkeys([*LOOPBACK_HOSTS, host]))


def create_app(db: Path, *, host: str = "127.0.0.1", warm: bool = False) -> Starlette:
    """The viewer of the store at `db`, answering requests addressed to `host` (and loopback).
    `warm`: on threads from now (while the server starts), list the runs (the first page),
    compile the templates and load the statistics stack, so that the first pages do not wait for
    them; then compute the leaderboards ahead."""
    viewer = Viewer(Path(db))

    def templates() -> None:
        try:  # compiled once, here rather than on each page's first view
            for name in TEMPLATES:
                viewer.env.get_template(name)
        except Exception:  # only a head start: the page that needs one will say what failed
            LOG.debug("templates' warm-up failed", exc_info=True)

    def warm_up() -> None:
        from calipers.view.runs import cached_listing

        try:
            cached_listing(viewer.reader)  # a request meanwhile waits for this one (Reader.cached)
            # the rest once the first page is answered (or none was asked for): beside it, the
            # imports and the composites' staging competed for the CPU and the GIL it needed
            viewer.answered.wait(FIRST_PAGE_WAIT_S)
            viewer.listing()  # the composites (on their thread)
            from calipers.schemes import get_scheme
            from calipers.view import comparing  # noqa: F401

            get_scheme("metric")  # every scheme registered, the statistics stack imported
            # then the leaderboard the page opens with (at the usual CPU priority: a page that
            # asks for it meanwhile waits for this computation)
            viewer.prepare_board(viewer.idle)
        except Exception:  # only a head start: the request that needs it will say what failed
            LOG.debug("warm-up failed", exc_info=True)

    if warm:  # from now, while the server starts: the listing's queries run in DuckDB, beside
        # the templates' compiling (Python) and the server's start
        threading.Thread(target=warm_up, name="calipers-view-warm", daemon=True).start()
        threading.Thread(target=templates, name="calipers-view-templates", daemon=True).start()

    async def no_page(request: Request, exc: Exception) -> Response:
        # an address that is not a page, or a method other than GET: said like every error
        status = int(getattr(exc, "status_code", 404))
        pages = PAGE_LIST
        heading, message = ("Not found", f"no page at {request.url.path}") if status == 404 \
            else ("Not allowed", f"{request.method} is not how a page is asked for")  # fmt: skip
        hint = f"The pages: {pages}." if status == 404 else "Pages are read with GET."
        twin = request.url.path.endswith(".json")
        return viewer._message(request, twin, status, heading, message, hint)

    app = Starlette(
        exception_handlers={404: no_page, 405: no_page},
        routes=viewer.routes(),
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host)),
        ],
    )
    app.state.viewer = viewer  # for tests and tools: its `reader` counts the locked opens
    return app
