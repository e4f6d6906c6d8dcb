"""The machine and date a benchmark ran on, for its results file."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from calipers.blas import use_one_blas_thread

# A benchmark measures what the command line computes, on one BLAS thread (calipers/blas.py).
use_one_blas_thread()

RESULTS = Path(__file__).parent / "results"


def machine() -> dict[str, Any]:
    import duckdb
    import numpy
    import scipy

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    with contextlib.suppress(ValueError, OSError):
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "duckdb": duckdb.__version__,
    }


def bytecode_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for timed children, run from bytecode as installed packages are: with
    PYTHONDONTWRITEBYTECODE set, an editable calipers would compile its sources at every start
    (over a second of a compare); instead the children share a private PYTHONPYCACHEPREFIX (run
    one untimed warm-up to fill it)."""
    out = dict(os.environ if env is None else env)
    if out.pop("PYTHONDONTWRITEBYTECODE", None):
        out["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "calipers-bench-pycache")
    return out


def save(name: str, body: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **body}, indent=2) + "\n")
    return path
