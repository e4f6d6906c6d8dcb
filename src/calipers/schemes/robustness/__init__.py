"""Robustness (kelvin-compatible): invariance, sensitivity and K of a pipeline's decisions under
perturbed inputs, with intervals over cases. `calipers check` runs the perturbations (see
`calipers.running.check`); this scheme scores what was stored."""

from __future__ import annotations

from calipers.schemes.robustness.scheme import RobustnessScheme
from calipers.schemes.robustness.scoring import RobustnessResult

__all__ = ["RobustnessResult", "RobustnessScheme"]
