"""One way to turn the user's `rng` argument into a Generator and the seed that reproduces it."""

from __future__ import annotations

import numpy as np

from calipers.errors import InputError

# Fixed, so that results are reproducible unless the user asks otherwise.
DEFAULT_SEED = 20_240_917


def resolve_rng(rng: int | np.random.Generator | None) -> tuple[np.random.Generator, int]:
    """Return (generator, seed). A Generator passed in is used only to draw a seed, and a fresh
    generator is built from it, so the recorded seed always reproduces the result exactly."""
    if rng is None:
        seed = DEFAULT_SEED
    elif isinstance(rng, np.random.Generator):
        seed = int(rng.integers(0, 2**63 - 1))
    elif isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        seed = int(rng)
        if seed < 0:
            raise InputError(f"a seed must be a non-negative integer, got {seed}")
    else:
        raise InputError(f"rng must be an int seed, a numpy Generator or None, got {rng!r}")
    return np.random.default_rng(seed), seed
