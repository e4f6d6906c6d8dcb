"""The one secret scrubber. Every text that comes from outside calipers — a command judge's reply
and stderr, an HTTP body, a pipeline's output and stderr, an error message — goes through `scrub`
before it reaches the store, a cache, a report, an export or the terminal.

A secret is the value of an environment variable whose name looks like a key, token, secret or
password (`OPENAI_API_KEY`, `HF_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`, …) and is at least
MIN_LENGTH characters long, plus every key configured explicitly (`--judge-key-env NAME`, whatever
its name, at least MIN_EXPLICIT_LENGTH long). Each occurrence becomes MASK. The environment is read
at each call, so a key set after start-up is scrubbed too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
MIN_LENGTH = 8  # shorter values of key-like variables ("1", "true") are not secrets worth a mask
MIN_EXPLICIT_LENGTH = 4  # a key named explicitly: masked unless absurdly short
# A whole word of the name (between underscores) that says key/token/password, or SECRET or
# PASSWORD anywhere (MYSECRET, PGPASSWORD). Not AUTH (SSH_AUTH_SOCK) nor PWD (the directory).
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|PASSWD|PASS|PASSPHRASE|CREDENTIALS?)(?:_|$)|SECRET|PASSWORD",
    re.IGNORECASE,
)
_explicit: set[str] = set()  # names of variables configured as keys


def is_secret_name(name: str) -> bool:
    """Whether an environment variable of this name holds a secret."""
    return _SECRET_NAME.search(name) is not None


def register_key_env(name: str) -> None:
    """A variable configured to hold a key (`--judge-key-env`): its value is a secret whatever
    the name looks like."""
    if name:
        _explicit.add(name)


# The last answer for the process environment: (its raw mapping as it was, the explicit names,
# `extra`, the answer). Reading the environment item by item and matching each name cost about
# 60–80 µs — per judge reply, more than calipers' other work on a call; comparing the raw mapping
# with the copy kept is one dict comparison in C (about 1 µs), and any change to the environment
# (os.environ, putenv through it) makes them differ, so the environment is still read at each call.
_last: tuple[dict[Any, Any], frozenset[str], tuple[str, ...], list[str]] | None = None


def secrets(extra: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> list[str]:
    """The values to mask, longest first (a secret that contains another is masked whole)."""
    global _last
    raw = getattr(os.environ, "_data", None) if environ is None else None
    if isinstance(raw, dict):  # CPython's os._Environ keeps the process environment there
        extra = tuple(extra)
        last = _last
        if last is not None and last[2] == extra and last[1] == _explicit and last[0] == raw:
            return list(last[3])
        # copied before reading: a change made meanwhile makes the next comparison differ
        seen, names = dict(raw), frozenset(_explicit)
        found = _secrets(extra, os.environ)
        _last = (seen, names, extra, found)
        return list(found)
    return _secrets(extra, os.environ if environ is None else environ)


def _secrets(extra: Iterable[str], env: Mapping[str, str]) -> list[str]:
    found = {
        value for name, value in env.items() if len(value) >= MIN_LENGTH and is_secret_name(name)
    }
    found.update(v for name in _explicit if len(v := env.get(name, "")) >= MIN_EXPLICIT_LENGTH)
    found.update(v for v in extra if v and len(v) >= MIN_EXPLICIT_LENGTH)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by MASK. `extra`: keys known to the caller (a judge's
    own key) beyond those of the environment."""
    if not text:
        return text
    for secret in secrets(extra):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_optional(text: str | None, extra: Iterable[str] = ()) -> str | None:
    return None if text is None else scrub(text, extra)


def scrub_json(value: Any, extra: Iterable[str] = ()) -> Any:
    """A JSON value (a pipeline's parsed output) with every string in it, keys included,
    scrubbed; the value itself when it holds no secret."""
    found = [s for s in secrets(extra) if s]
    if not found:
        return value

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            for secret in found:
                if secret in node:
                    node = node.replace(secret, MASK)
            return node
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(value)
