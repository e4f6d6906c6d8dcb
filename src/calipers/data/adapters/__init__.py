"""Readers for the result files of other tools: each turns its tool's output into sample rows
(plain dicts of the sample model), which then go through the same validation as a JSONL file."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.data.adapters import (
    braintrust,
    deepeval,
    eee,
    helm,
    inspect_log,
    kelvin,
    langsmith,
    lighteval,
    lm_eval,
    mlflow_eval,
    nemo_evaluator,
    openai_evals,
    phoenix,
    phoenix_csv,
    promptfoo,
    promptfoo_csv,
    ragas,
)

Rows = list[dict[str, Any]]

# name → (recognises the path?, rows of the path)
ADAPTERS: dict[str, tuple[Callable[[Path], bool], Callable[[Path], Rows]]] = {
    "inspect": (inspect_log.detect, inspect_log.read_rows),
    "kelvin": (kelvin.detect, kelvin.read_rows),
    "lm-eval": (lm_eval.detect, lm_eval.read_rows),
    "promptfoo": (promptfoo.detect, promptfoo.read_rows),
    "lighteval": (lighteval.detect, lighteval.read_rows),
    "openai-evals": (openai_evals.detect, openai_evals.read_rows),
    "deepeval": (deepeval.detect, deepeval.read_rows),
    "helm": (helm.detect, helm.read_rows),
    "nemo-evaluator": (nemo_evaluator.detect, nemo_evaluator.read_rows),
    "phoenix": (phoenix.detect, phoenix.read_rows),
    "promptfoo-csv": (promptfoo_csv.detect, promptfoo_csv.read_rows),
    "mlflow": (mlflow_eval.detect, mlflow_eval.read_rows),
    "phoenix-csv": (phoenix_csv.detect, phoenix_csv.read_rows),
    "eee": (eee.detect, eee.read_rows),
    "ragas": (ragas.detect, ragas.read_rows),
    "langsmith": (langsmith.detect, langsmith.read_rows),
    "braintrust": (braintrust.detect, braintrust.read_rows),
}


def adapter_for(path: Path, fmt: str) -> Callable[[Path], Rows] | None:
    """The adapter named by `fmt`, or (auto) the one that recognises `path`; None: a plain file."""
    if fmt in ADAPTERS:
        return ADAPTERS[fmt][1]
    if fmt == "auto":
        for detect, read in ADAPTERS.values():
            try:
                found = detect(path)
            except (RecursionError, EOFError, OSError, UnicodeDecodeError, zlib.error):
                # a file no sniffer can read (nested too deep, a broken .gz): it is not another
                # tool's output; the sample reader reports what is wrong with it
                found = False
            if found:
                return read
    return None
