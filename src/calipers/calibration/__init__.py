"""The calibration harness: simulated experiments with known truth, run through the engine to
measure the coverage of every interval and the error rates of every verdict rule.

`python -m calipers.calibration [--full | --reduced] [--group core|families] [--only TEXT,…]
[--jobs N] [--seed S] [--out PATH] [--json PATH]`; `make calibrate` writes docs/calibration.md and
benchmarks/results/calibration.json. Modules, bottom up: models (systems and truths), simulate
(experiments as StagedScores or samples), robust (robustness cases), schemes (the rubric and
objective schemes' samples, truths and intervals), grid (cells and settings), engine (every call
into the engine), runner (cells in parallel), aggregate (figures and targets), report (markdown and
JSON).
"""

from calipers.blas import use_one_blas_thread

# The harness measures what the command line computes, which runs on one BLAS thread
# (calipers/blas.py); its spawned workers read the variables this sets.
use_one_blas_thread()
