"""One BLAS thread in calipers' own process.

Two reasons, both measured on the 2-core machine of benchmarks/README.md (2026-11-27):

- **The same digits on every machine.** OpenBLAS splits a product's sum across its threads, so
  the last bits of a dot product, a matrix-vector product and even a matrix product depend on
  how many threads it runs — on how many cores the machine has, or what the environment says.
  One thread against two: a dot of 500,000 values differed by 7e-11, the bootstrap's resampled
  sums (100 × 500,000 counts times a column) by 1e-10, a (52 × 10,000)·(10,000 × 100) product by
  2e-12; `compare --json` printed other last digits. With one thread a report is the same on a
  laptop and on a 64-core server, for the same numpy and CPU family (OpenBLAS picks its kernels
  per CPU family, and those can still differ in the last bits).
- **Speed.** calipers runs its own work side by side (a comparison's pair beside its run
  summaries, the viewer's pages), so BLAS threads on top wait for a core: `compare --scheme
  metric` of 2 × 1M samples took 3.4–5.2 s on one BLAS thread against 6.1–7.2 s on two.

The command line calls `use_one_blas_thread` first thing; `python -m calipers.calibration` and
the test suite do too. Before numpy is loaded it sets the variables each BLAS reads when it
loads (not OMP_NUM_THREADS: Arrow sizes its own thread pool from it); after, threadpoolctl sets
the loaded BLAS. Child processes that run the user's code (pipelines, command judges:
`calipers.processes.popen`) get the environment as it was (`child_environment`), so a user's
model is not slowed down by calipers' choice. From Python, call it to get the command line's
digits.
"""

from __future__ import annotations

import os
import sys

# What each BLAS numpy may be built on reads when it loads: OpenBLAS (numpy's wheels), MKL
# (conda's numpy), BLIS, Apple's Accelerate.
VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)

_original: dict[str, str | None] = {}


def use_one_blas_thread() -> None:
    """Limit BLAS to one thread in this process from now on (idempotent)."""
    for name in VARIABLES:
        if name not in _original:
            _original[name] = os.environ.get(name)
        os.environ[name] = "1"
    if "numpy" in sys.modules:  # loaded already: its BLAS has read the variables
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


def child_environment() -> dict[str, str] | None:
    """The environment for a process that runs the user's code: as it was before
    `use_one_blas_thread` (None where nothing was changed: inherit)."""
    if not _original:
        return None
    env = dict(os.environ)
    for name, value in _original.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
