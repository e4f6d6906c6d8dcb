"""One BLAS thread for the resampling products: a draw's counts (a few dozen resamples × G units)
times the units' columns is a matrix product with few rows, which OpenBLAS splits across its
threads badly — on the 2-core machine of benchmarks/README.md, (52 × 10,000) @ (10,000 × 100)
took 70 ms on two threads and 2.7 ms on one, and `rank --cost` of 20 runs × 10,000 items with
heavy-tailed costs 9.7 s against 0.9 s (2026-11-27). The limit holds only inside the block, so a
caller's own products keep the threads it gave them (threadpoolctl: the library scikit-learn uses
for the same purpose)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread inside the block (numpy's products; not numpy's own loops)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
