"""The betting capitals of rows of values at a few fixed nulls, unit block by unit block: what a
replay of sequential decisions reads (`calipers.verdicts.sequential_rules.replay`).

The numbers are `log_capital_paths`'s, bit for bit: for each null, side and horizon the running
sum of log(1 ± min(λᵢ, cap)(zᵢ − m)) over the units in order, and the mixture's log-mean over
the horizons. Two things make a long replay cheaper without changing one of them:

- **Blocks.** The sums are taken a block of units at a time, each block's running sum continued
  from the last one's (the last value placed before the block's terms: the same additions in
  the same order), so a replay that decides early stops computing, and a long one never holds
  rows × units × nulls × horizons capitals at once — nor recomputes a prefix it already did
  (the replay used to start again on a longer prefix). The bets are the plug-ins of the units
  so far, computed on a prefix that grows as `bet_sizes` on it would (its first values are the
  longer prefix's first values).
- **The mixture where it matters.** A look needs only whether the mixture's capital reaches
  the threshold. The log-mean of the horizons' capitals is at most their largest (computed as
  `_mean_log` computes it, it cannot exceed it: the sum of the exponentials is at most H times
  the largest, which is exactly 1), so where the largest is below the threshold the mixture is
  too, and it is computed — exactly, by `_mean_log` — only where the largest reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats.sequential import _mean_log, bet_sizes_each

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
BLOCK_CELLS = 1 << 14  # rows × units of a block: a horizon's terms of one row, 128 KB, in the cache
PREFIX = 8192  # units of the first block, and of the bets first computed …
GROWTH = 16  # … and the factor each longer prefix of bets takes


@dataclass(frozen=True)
class Block:
    """The capitals over units start..stop−1: `paths[k][side]` the H horizons' running log
    capitals (rows × units) at null k, side 0 above (K⁺) and 1 below (K⁻)."""

    start: int
    stop: int
    paths: list[tuple[list[FloatArray], list[FloatArray]]]


class NullCapitals:
    """log K± of each row of z (rows × n, values in [0, 1]) at each null of `nulls` (scaled),
    per horizon, block by block (`advance`)."""

    def __init__(self, z: FloatArray, nulls: Sequence[float], *, alpha: float,
                 truncation: float, horizons: Sequence[int | None]) -> None:  # fmt: skip
        self.z = np.atleast_2d(np.asarray(z, dtype=np.float64))
        self.nulls = [float(v) for v in nulls]
        self.alpha, self.horizons = alpha, tuple(horizons)
        # as `log_capital_paths`: the caps of a null m (0 < m < 1), above and below
        self.caps = [(truncation / m, truncation / (1.0 - m)) for m in self.nulls]
        rows, n = self.z.shape
        self.n = int(n)
        self.done = 0
        self.carry = np.zeros((len(self.nulls), 2, len(self.horizons), rows))
        self._bets: list[FloatArray] = []
        self._covered = 0
        self.block = int(max(256, BLOCK_CELLS // max(rows, 1)))

    def next_stop(self) -> int:
        """Where the next block ends: the first one short (a decision in its first units costs
        no more than those), the next ones BLOCK_CELLS / rows units."""
        size = min(PREFIX, self.block) if self.done == 0 else self.block
        return int(min(self.n, self.done + size))

    def _bets_to(self, stop: int) -> list[FloatArray]:
        """The bets of the units before `stop`, on a prefix grown as the replay's was."""
        if stop > self._covered:
            length = min(self.n, max(PREFIX, self._covered))
            while length < stop:
                length = self.n if 4 * length * GROWTH > self.n else length * GROWTH
            self._bets = bet_sizes_each(self.z[:, :length], alpha=self.alpha,
                                        horizons=self.horizons)  # fmt: skip
            self._covered = length
        return self._bets

    def advance(self, stop: int) -> Block:
        """The capitals over the next units, to `stop` (exclusive)."""
        start = self.done
        bets = self._bets_to(stop)
        rows = self.z.shape[0]
        zs = self.z[:, start:stop]
        paths = []
        for k, m in enumerate(self.nulls):
            steps = (zs - m, m - zs)
            sides: tuple[list[FloatArray], list[FloatArray]] = ([], [])
            for side in (0, 1):
                for h, lam in enumerate(bets):
                    # the running sum continued from the last block's end: that value placed
                    # before this block's terms, and summed with them in order (the first block
                    # starts from its first term, as a cumulative sum does)
                    buf = np.empty((rows, stop - start + 1))
                    terms = buf[:, 1:]
                    np.minimum(lam[:, start:stop], self.caps[k][side], out=terms)
                    np.multiply(terms, steps[side], out=terms)
                    np.log1p(terms, out=terms)
                    if start == 0:
                        np.cumsum(terms, axis=1, out=terms)
                    else:
                        buf[:, 0] = self.carry[k, side, h]
                        np.cumsum(buf, axis=1, out=buf)
                    self.carry[k, side, h] = terms[:, -1]
                    sides[side].append(terms)
            paths.append(sides)
        self.done = stop
        return Block(start, stop, paths)


def reaches(paths: list[FloatArray], threshold: float) -> BoolArray:
    """Where the mixture of the horizons' log capitals `paths` (each rows × units) is at least
    `threshold`: the exact mixture (`_mean_log`) wherever the largest horizon's reaches it."""
    top = _largest(paths)
    out: BoolArray = top >= threshold
    if len(paths) > 1 and out.any():
        rows, cols = np.nonzero(out)
        out[rows, cols] = mixture_at(paths, rows, cols) >= threshold
    return out


def mixture_at(paths: list[FloatArray], rows: npt.NDArray[np.intp],
               cols: npt.NDArray[np.intp]) -> FloatArray:  # fmt: skip
    """The mixture's log capital at the (row, unit) pairs given, as `_mean_log` over the whole
    arrays gives it there: its sum over the horizons is an elementwise one in the horizons'
    order for two elements or more (one alone is padded with a second)."""
    if rows.size == 1:
        rows, cols = np.repeat(rows, 2), np.repeat(cols, 2)
        return mixture_at(paths, rows, cols)[:1]
    return np.asarray(_mean_log([p[rows, cols][None, :] for p in paths])[0], dtype=np.float64)


def _largest(paths: list[FloatArray]) -> FloatArray:
    top = paths[0].copy()
    for p in paths[1:]:
        np.maximum(top, p, out=top)
    return top
