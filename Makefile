# The two commands of the quick start: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench calibrate clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/calipers demo

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports  # the layer order and no import cycle (pyproject [tool.importlinter])

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_bootstrap.py
	test -f benchmarks/data/samples_1m.jsonl || $(BIN)/python benchmarks/gen_samples.py
	$(BIN)/python benchmarks/bench_import.py

# The calibration harness: the full grid of simulated experiments against known truth (≤ 20 min on
# 2 cores), written to docs/calibration.md and benchmarks/results/calibration.json.
calibrate: $(STAMP)
	$(BIN)/python -m calipers.calibration --full --jobs 2 --out docs/calibration.md \
		--json benchmarks/results/calibration.json

clean:
	rm -rf $(VENV) .calipers .pytest_cache .mypy_cache .ruff_cache
