"""Pure numerics, no I/O: intervals, bootstrap, power, agreement, means.

Options are keyword-only; every stochastic function takes one `rng` (a seed, a Generator or None
for a fixed default) and records the seed that reproduces its result.
"""

from __future__ import annotations

from calipers.stats._rng import DEFAULT_SEED, resolve_rng
from calipers.stats.agreement import icc_2_1, krippendorff_alpha, pearson, quadratic_weighted_kappa
from calipers.stats.bootstrap import BootstrapResult, mean_bootstrap, paired_bootstrap
from calipers.stats.intervals import wilson_interval, z_from_confidence
from calipers.stats.means import benjamini_hochberg, bonferroni_alpha, geometric_mean, holm
from calipers.stats.power import minimum_detectable_effect, required_sample_size

__all__ = [
    "DEFAULT_SEED",
    "BootstrapResult",
    "benjamini_hochberg",
    "bonferroni_alpha",
    "geometric_mean",
    "holm",
    "icc_2_1",
    "krippendorff_alpha",
    "mean_bootstrap",
    "minimum_detectable_effect",
    "paired_bootstrap",
    "pearson",
    "quadratic_weighted_kappa",
    "required_sample_size",
    "resolve_rng",
    "wilson_interval",
    "z_from_confidence",
]
