"""JSON reports: plain types, no NaN (missing is null), written atomically."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from calipers.data.files import write_atomic
from calipers.errors import InputError

REPORT_SCHEMA_VERSION = "1"  # of every JSON report; the schemas are `calipers schema --report`
# of the paired comparison's report (`compare` with layered, metric): 2 added `flips`
COMPARE_SCHEMA_VERSION = "2"


def clean(value: Any) -> Any:
    """Replace non-finite floats by None and numpy scalars by Python ones, recursively."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


_C1 = re.compile("[\x7f-\x9f]")


def dumps(report: dict[str, Any]) -> str:
    """Indented JSON, UTF-8 kept readable; C0 controls are escaped by json itself, and DEL and
    the C1 controls (0x9b is a one-byte CSI) too, so `--json -` cannot drive a terminal."""
    text = json.dumps(clean(report), indent=2, ensure_ascii=False, allow_nan=False)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def write_json(report: dict[str, Any], destination: str | Path) -> None:
    """Write to a path (temp file in the same directory, then rename) or to stdout for "-"."""
    write_report_text(dumps(report), destination, option="--json")


def write_report_text(text: str, destination: str | Path, *, option: str) -> None:
    """A report's text to a path (temp file in the same directory, then rename: nothing
    half-written) or to stdout for "-"; `option` names the flag in errors."""
    if str(destination) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(destination)
    if path.is_dir():
        raise InputError(
            f"{option} {path}: is a directory", hint="Give a file path, or - for stdout."
        )
    try:
        write_atomic(path, text, shared=True)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from exc
