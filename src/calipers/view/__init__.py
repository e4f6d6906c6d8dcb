"""`calipers view`: a local, read-only viewer of the store — runs, verdict-first comparisons,
flips and samples, each page with a JSON twin (docs/view.md). `create_app(db)` is the Starlette
app; the command serves it with uvicorn on 127.0.0.1."""

from calipers.view.app import create_app

__all__ = ["create_app"]
