"""Headless Chromium for the HTML report tests: Debian's `chromium`, installed with apt-get when it
is missing (the test set-up's job, so that a fresh CI machine needs nothing by hand), driven by
Playwright, launched with --headless --no-sandbox --disable-gpu and background networking off.

`open_page` loads a report from a file:// URL and records every request the page makes and every
console message and uncaught error, so a test can assert that the page loads nothing and logs no
error; `screenshot_is_blank` reads the PNG's pixels."""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-first-run",
    "--no-pings",
    "--dns-prefetch-disable",
]


def _installed() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_path() -> str:
    """Debian's chromium, installed now when it is missing (as root, through apt-get)."""
    found = _installed()
    if found:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise RuntimeError(
            "the HTML report tests need Debian's chromium: apt-get install chromium (as root)"
        )
    # Each pytest-xdist worker launches its own browser: the first installs while the others wait
    # here (two apt-gets at once fail on dpkg's lock), then find it installed.
    lock = Path(tempfile.gettempdir()) / "calipers-tests-chromium-install.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        found = _installed()
        if found:
            return found
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env,
                       capture_output=True)  # fmt: skip
    found = shutil.which("chromium")
    if not found:
        raise RuntimeError("apt-get installed chromium, but it is not on PATH")
    return found


@dataclass
class LoadedPage:
    page: Any
    requests: list[str] = field(default_factory=list)
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind == "error"] + self.errors


@contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


def open_page(chromium: Any, path: Path) -> LoadedPage:
    page = chromium.new_page(viewport={"width": 1100, "height": 900})
    loaded = LoadedPage(page)
    page.on("request", lambda request: loaded.requests.append(request.url))
    page.on("console", lambda message: loaded.console.append((message.type, message.text)))
    page.on("pageerror", lambda error: loaded.errors.append(str(error)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    return loaded


def screenshot_is_blank(png: bytes) -> bool:
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return bool(np.ptp(pixels) < 0.05)  # one flat colour: nothing drawn


# model or user text that would run if a page did not escape it
HOSTILE = [
    '<script>window.__pwned = "script"</script>',
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "<a href=\"javascript:window.__pwned='link'\">click</a>",
]
