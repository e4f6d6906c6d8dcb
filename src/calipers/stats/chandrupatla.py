"""Chandrupatla's bracketing root finder for one scalar root, step for step as scipy's
`scipy.optimize.elementwise.find_root` (scipy 1.17's `_chandrupatla`) takes it, without importing
scipy.optimize.

Why a copy. The betting interval's ends over many units are found by this finder (12–20
evaluations, each a pass over every unit), and importing scipy.optimize for it cost ~0.2 s of
an idle `calipers watch` and 0.4–0.7 s of a loaded one — a tenth of the command. The ends are
reported numbers, calibrated as they are, so the copy must take the same steps: the same
interpolation and bisection tests, the same tolerances (`xrtol` 4ε, `fatol` and `frtol` as
given), the same arithmetic in the same order, on float64 scalars (numpy's: division by zero
and the square root of a negative give inf or NaN, as in scipy's arrays).
tests/test_betting.py holds it to scipy's bracket, bit for bit, on many functions.

It follows scipy's implementation (BSD-3-Clause, Copyright (c) 2001-2002 Enthought, Inc. and
2003-2025 SciPy Developers) so as to take its steps.

Reference: Chandrupatla, T. R. (1997), "A new hybrid quadratic/bisection algorithm for finding
the zero of a nonlinear function without using derivatives", Advances in Engineering Software
28(3), 145–149.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_EPS = float(np.finfo(np.float64).eps)


def bracket_root(
    f: Callable[[float], float],
    a: float,
    b: float,
    *,
    fa: float | None = None,
    fb: float | None = None,
    xatol: float,
    fatol: float = 0.0,
    frtol: float = 0.0,
    maxiter: int = 200,
) -> tuple[float, float, float, float]:
    """(xl, xr, f(xl), f(xr)): the final bracket of the root of `f` in [a, b], xl < xr, as
    `find_root(f, (a, b), tolerances={"xatol": xatol, "fatol": fatol, "frtol": frtol},
    maxiter=maxiter)` returns it. `fa`, `fb`: f(a) and f(b) where the caller has them (f is
    then not evaluated there again)."""
    f64 = np.float64
    with np.errstate(all="ignore"):
        x1, x2 = f64(a), f64(b)
        f1 = f64(f(a)) if fa is None else f64(fa)
        f2 = f64(f(b)) if fb is None else f64(fb)
        xrtol = f64(4 * _EPS)
        ftol = f64(fatol) + f64(frtol) * np.minimum(np.abs(f1), np.abs(f2))
        x3 = f3 = t = f64(0.5)
        nit = 0
        dx, tol, stop = _check(x1, x2, f1, f2, xatol, xrtol, ftol)
        while nit < maxiter and not stop:
            x = x1 + t * (x2 - x1)
            fx = f64(f(float(x)))
            # the new point replaces the end whose value has its sign; the old end is kept (x3)
            # for the interpolation
            if np.sign(fx) == np.sign(f1):
                x3, f3 = x1, f1
            else:
                x3, f3 = x2, f2
                x2, f2 = x1, f1
            x1, f1 = x, fx
            nit += 1
            dx, tol, stop = _check(x1, x2, f1, f2, xatol, xrtol, ftol)
            if stop:
                break
            # inverse quadratic interpolation where it is safe (Chandrupatla's test), else
            # bisection; the step kept away from the bracket's ends by half the tolerance
            xi1 = (x1 - x2) / (x3 - x2)
            phi1 = (f1 - f2) / (f3 - f2)
            alpha = (x3 - x1) / (x2 - x1)
            t = f64(0.5)
            if ((1 - np.sqrt(1 - xi1)) < phi1) and (phi1 < np.sqrt(xi1)):
                t = f1 / (f1 - f2) * f3 / (f3 - f2) - alpha * f1 / (f3 - f1) * f2 / (f2 - f3)
            tl = 0.5 * tol / dx
            t = np.clip(t, tl, 1 - tl)
    if x1 < x2:
        return float(x1), float(x2), float(f1), float(f2)
    return float(x2), float(x1), float(f2), float(f1)


def _check(
    x1: np.float64, x2: np.float64, f1: np.float64, f2: np.float64, xatol: float,
    xrtol: np.float64, ftol: np.float64,
) -> tuple[np.float64, np.float64, bool]:  # fmt: skip
    """scipy's termination test: (|x2 − x1|, the tolerance, whether to stop) — a value within
    the function tolerance, a bracket whose ends have one sign, a non-finite end or two NaN
    values, or a bracket narrower than |xmin|·xrtol + xatol."""
    fmin, xmin = (f1, x1) if np.abs(f1) < np.abs(f2) else (f2, x2)
    stop = bool(np.abs(fmin) <= ftol)
    if not stop and np.sign(f1) == np.sign(f2):
        xmin, stop = np.float64(np.nan), True
    if not stop and (not (np.isfinite(x1) and np.isfinite(x2)) or (np.isnan(f1) and np.isnan(f2))):
        xmin, stop = np.float64(np.nan), True
    dx = np.abs(x2 - x1)
    tol = np.abs(xmin) * xrtol + xatol
    return dx, tol, stop or bool(dx < tol)
