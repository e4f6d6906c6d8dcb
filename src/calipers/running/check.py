"""`calipers check`: kelvin's robustness run, in parallel, cached and resumable.

1. Read the config (kelvin.yaml) and every case; check the governing types.
2. Baselines: every selected case's rendered input through the pipeline, side by side. A baseline
   whose output is a JSON object without the decision field aborts the run (the config is wrong);
   any other baseline failure skips that case. With `noise_floor` on, each baseline is replayed
   `replications − 1` more times, bypassing the cache.
3. Perturbations of every case whose baseline succeeded, all in one bounded pool.
4. kelvin's on-disk layout and reports under the output directory; one sample per baseline,
   replay and variant, scored by the robustness scheme (so `calipers score` on the store, or on
   the output directory, gives the same numbers).

Paths are built only from case names (file stems) and variant ids (kind, governing type, number);
one that would leave the output directory is an input error before anything runs.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calipers.data.decision import DecisionField, is_structured
from calipers.data.files import write_atomic
from calipers.errors import DataError, InputError
from calipers.running.cases import (
    Case,
    check_governing_types,
    load_cases,
    select_cases,
)
from calipers.running.executor import ExecutorName, Job, JobPool, open_backend
from calipers.running.identity import PipelineIdentity, identify
from calipers.running.invoke import InvocationResult, Pipeline
from calipers.running.kelvin_config import KelvinConfig
from calipers.running.perturb import (
    Perturbation,
    PerturbationBatch,
    generate_variants,
    single_case_warning,
)
from calipers.workspace import PIPELINE_CACHE

if TYPE_CHECKING:
    # Imported when the scores are computed (see `_prefetch_scoring`), not before the first
    # pipeline call: the scheme layer brings pydantic.
    from calipers.schemes.robustness.scoring import CaseResult, RunRobustness

SCHEMA_VERSION = 1  # kelvin's report.json version


@dataclass
class CheckOptions:
    only: str | None = None
    seed: int | None = None  # None: the config's
    workers: int | None = None
    use_cache: bool = True
    out: Path | None = None  # None: <config dir>/kelvin, as kelvin
    run_name: str = "check"
    progress: bool | None = None
    confidence_level: float = 0.95
    n_resamples: int = 10_000
    bootstrap_seed: int | None = None  # None: calipers.stats.DEFAULT_SEED (numpy loads later)
    executor: ExecutorName = "local"
    ray_address: str | None = None
    # the cache: a check reuses only its own outputs of this pipeline (`calipers.running.identity`)
    pipeline_version: str | None = None
    pipeline_env: tuple[str, ...] = ()


@dataclass
class CheckRun:
    config: KelvinConfig
    seed: int
    out: Path
    result: RunRobustness
    rows: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    caps: list[str] = field(default_factory=list)
    invocations: int = 0  # pipeline calls made (not served by the cache)
    cached: int = 0
    notes: list[str] = field(default_factory=list)


def _safe_part(name: str, what: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise InputError(
            f"the {what} {name!r} cannot be used as a directory name",
            hint="Rename it: no '/', '\\' or '..' (case names are file names; variant ids come "
            "from the governing types).",
        )
    return name


def _inside(root: Path, *parts: str, resolved_root: Path | None = None) -> Path:
    path = root.joinpath(*parts)
    if not path.resolve().is_relative_to(resolved_root or root.resolve()):
        raise InputError(f"{path} would be outside the output directory {root}")
    return path


# What scoring imports and the pipelines do not need: the scheme layer (pydantic). (The intervals'
# 95% t quantiles come from a table in stats.estimate, without scipy.special.)
_SCORING_MODULES = ("calipers.schemes.robustness.scoring",)


def _prefetch_scoring() -> threading.Thread | None:
    """Import what scoring needs on a thread, while the pool's workers mostly wait on pipelines,
    instead of after the last one. Any import error is left for the real import to raise."""
    if all(name in sys.modules for name in _SCORING_MODULES):
        return None

    def load() -> None:
        import importlib

        for name in _SCORING_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=load, name="calipers-prefetch")
    thread.start()
    return thread


def pipeline_for(
    config: KelvinConfig, *, use_cache: bool, default_cache: Path, identity: PipelineIdentity
) -> Pipeline:
    """The config's pipeline; its cache entries are salted with `identity` (the run, the program's
    files, the version and the environment), as `calipers run`'s are."""
    cache = config.cache_dir or default_cache
    return Pipeline(
        command=config.run,
        decision_field=config.decision_field,
        timeout_s=float(config.timeout_s),
        retry=config.retry_policy,
        cache_dir=cache if use_cache else None,
        cwd=config.path.parent,
        cache_salt=identity.salt(0),
    )


def run_check(config: KelvinConfig, options: CheckOptions) -> CheckRun:
    """The whole check; raises InputError (exit 1) or DataError (exit 2) as kelvin exits."""
    seed = config.seed if options.seed is None else options.seed
    root = config.path.parent
    out = options.out or root / "kelvin"
    resolved_out = out.resolve()  # once: each job's directory is checked against it
    all_cases = load_cases(config.cases_dir, config_file=config.path)
    check_governing_types(all_cases, config.governing_types, config_file=config.path)
    cases = select_cases(all_cases, only=options.only)
    for case in all_cases:
        _safe_part(case.name, "case name")
    for t in config.governing_types:
        _safe_part(t, "governing type")
    # the same identity as `calipers run`'s cache: the command runs in the config's directory,
    # so its files are found there and that directory (the outputs, the store) is not hashed
    identity = identify(
        config.run, options.run_name, version=options.pipeline_version,
        env=options.pipeline_env, cwd=root,
    )  # fmt: skip
    pipeline = pipeline_for(
        config, use_cache=options.use_cache, default_cache=root / PIPELINE_CACHE,
        identity=identity,
    )  # fmt: skip
    extract = DecisionField.parse(config.decision_field)
    warnings = list(config.warnings) + list(identity.notes)
    if (single := single_case_warning(all_cases)) is not None:
        warnings.append(single)

    # One pool for everything: a case's perturbations (and noise-floor replays) start as soon as
    # its baseline succeeds, so no worker idles waiting for the slowest baseline.
    fresh = Pipeline(**{**pipeline.__dict__, "cache_dir": None})  # replays bypass the cache
    replications = config.noise_floor.replications if config.noise_floor.enabled else 1
    batches: dict[str, PerturbationBatch] = {}
    pending_variants: dict[str, list[Future[InvocationResult]]] = {}
    pending_replays: dict[str, list[Future[InvocationResult]]] = {}
    baselines: dict[str, InvocationResult] = {}
    backend = open_backend(
        options.executor, workers=options.workers, ray_address=options.ray_address
    )
    # The pool (innermost) waits for its work before the backend closes.
    with contextlib.closing(backend), JobPool(
        extract=extract, seed=seed, progress=options.progress, label="check", backend=backend
    ) as pool:  # fmt: skip
        started: dict[Future[InvocationResult], Case] = {}
        for c in cases:
            where = _inside(out, c.name, "baseline", resolved_root=resolved_out)
            started[pool.submit(pipeline, Job(f"{c.name}/baseline", c.render(), where))] = c
        prefetch = _prefetch_scoring()
        for future in as_completed(started):
            case, res = started[future], future.result()
            baselines[case.name] = res
            if not res.ok and res.parsed_output is not None:  # valid JSON without the field
                raise DataError(
                    f"{case.name}: {res.error}",
                    hint=f"Set `decision_field:` in {config.path.name} to a key the pipeline "
                    "writes (or a path such as result.label).",
                )
            if not res.ok:
                continue
            pending_replays[case.name] = [
                pool.submit(fresh, Job(f"{case.name}/replay-{i:02d}", case.render(),
                                       _inside(out, case.name, "baseline", "replays", f"{i:02d}",
                                               resolved_root=resolved_out)))
                for i in range(1, replications)
            ]  # fmt: skip
            batch = generate_variants(
                case, all_cases, seed=seed, governing_types=config.governing_types,
                kinds=config.perturbation_kinds,
            )  # fmt: skip
            batches[case.name] = batch
            variants_dir = _inside(out, case.name, "perturbations", resolved_root=resolved_out)
            resolved_variants = variants_dir.resolve()
            pending_variants[case.name] = [
                pool.submit(pipeline, Job(
                    f"{case.name}/{p.variant_id}", p.text,
                    _inside(variants_dir, _safe_part(p.variant_id, "variant id"),
                            resolved_root=resolved_variants),
                ))
                for p in batch.perturbations
            ]  # fmt: skip

    # Everything below in case order, as kelvin writes it.
    ordered_baselines = [baselines[c.name] for c in cases]
    ok_cases = [c for c in cases if baselines[c.name].ok]
    caps: list[str] = []
    variants: list[tuple[Case, Perturbation]] = []
    results: list[InvocationResult] = []
    replays: dict[str, list[InvocationResult]] = {}
    for case in ok_cases:
        batch = batches[case.name]
        warnings += batch.warnings
        caps += batch.caps
        variants += [(case, p) for p in batch.perturbations]
        results += [f.result() for f in pending_variants[case.name]]
        replays[case.name] = [f.result() for f in pending_replays[case.name]]

    if prefetch is not None:
        prefetch.join()
    from calipers.schemes.robustness.scoring import score_run
    from calipers.stats import DEFAULT_SEED

    rows, case_results = _collect(
        options.run_name, cases, ordered_baselines, replays, variants, results
    )
    scored = score_run(
        case_results, options.run_name, confidence_level=options.confidence_level,
        n_resamples=options.n_resamples,
        seed=DEFAULT_SEED if options.bootstrap_seed is None else options.bootstrap_seed,
    )  # fmt: skip
    everything = [*ordered_baselines, *results, *(r for rs in replays.values() for r in rs)]
    run = CheckRun(
        config, seed, out, scored, rows, warnings, caps,
        invocations=sum(1 for r in everything if not r.cached),
        cached=sum(1 for r in everything if r.cached),
    )  # fmt: skip
    if any(is_structured(r.decision_value) for r in everything if r.ok):
        run.notes.append(
            "some decisions are lists or objects: compared by equality (kelvin refuses them)"
        )
    write_reports(run, variants, results, only=options.only)
    if not ok_cases:
        raise DataError(
            "every baseline failed: nothing to perturb",
            hint=f"See {out}/<case>/report.json for each error; run the pipeline by hand on "
            f"{out}/<case>/baseline/input.md.",
        )
    return run


def _row(
    run: str, case: str, sample_id: str, kind: str, res: InvocationResult, epoch: int = 0
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "run": run, "task": case, "sample_id": sample_id, "epoch": epoch, "perturbation": kind,
        "perturbation_of": case, "latency_s": round(res.seconds, 6),
    }  # fmt: skip
    if res.ok:
        row["decision"] = res.decision_value
    else:
        row["error"] = res.error or "failed"
    return row


def _collect(
    run: str,
    cases: list[Case],
    baselines: list[InvocationResult],
    replays: dict[str, list[InvocationResult]],
    variants: list[tuple[Case, Perturbation]],
    results: list[InvocationResult],
) -> tuple[list[dict[str, Any]], list[CaseResult]]:
    """Sample rows for the store, and the cases scored from the same values."""
    from calipers.data.decision import distance
    from calipers.schemes.robustness.scoring import (
        BASELINE,
        SENSITIVITY_KINDS,
        CaseResult,
        VariantResult,
        governing_type,
    )

    rows: list[dict[str, Any]] = []
    by_name: dict[str, CaseResult] = {}
    for case, res in zip(cases, baselines, strict=True):
        rows.append(_row(run, case.name, BASELINE, BASELINE, res))
        result = CaseResult(case.name, res.ok, None if res.ok else res.error, res.decision_value)
        if res.ok:
            result.replays.append(res.decision_value)
        for epoch, replay in enumerate(replays.get(case.name, []), start=1):
            rows.append(_row(run, case.name, BASELINE, BASELINE, replay, epoch))
            if replay.ok:
                result.replays.append(replay.decision_value)
        by_name[case.name] = result
    for (case, p), res in zip(variants, results, strict=True):
        rows.append(_row(run, case.name, p.variant_id, p.kind, res))
        base = by_name[case.name]
        governed = p.kind in (*SENSITIVITY_KINDS, "swap_condition")
        by_name[case.name].variants.append(
            VariantResult(
                p.variant_id, p.kind,
                (p.governing_type or governing_type(p.variant_id)) if governed else None,
                res.ok, None if res.ok else res.error, res.decision_value,
                distance(base.baseline_decision, res.decision_value) if res.ok else None,
            )
        )  # fmt: skip
    return rows, list(by_name.values())


def write_reports(
    run: CheckRun,
    variants: list[tuple[Case, Perturbation]],
    results: list[InvocationResult],
    *,
    only: str | None,
) -> None:
    """kelvin's per-case and run `report.json` (its fields and schema_version), plus calipers'
    intervals and failure counts; each written atomically."""
    details: dict[str, dict[str, tuple[Perturbation, InvocationResult]]] = {}
    for (case, p), res in zip(variants, results, strict=True):
        details.setdefault(case.name, {})[p.variant_id] = (p, res)
    config = run.config
    for c in run.result.cases:
        entries = []
        for v in c.variants:
            p, res = details[c.case][v.variant_id]
            invocation = {
                "ok": res.ok, "error": res.error, "decision_value": res.decision_value,
                "stderr_tail": res.stderr_tail, "cached": res.cached, "attempts": res.attempts,
            }  # fmt: skip
            entries.append({
                "variant_id": v.variant_id, "kind": v.kind, "notes": p.notes,
                "invocation": invocation, "distance": v.distance,
                "input_path": str(res.input_path), "output_path": str(res.output_path),
            })  # fmt: skip
        report: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "case": c.case,
            "baseline": {
                "ok": c.baseline_ok,
                "error": c.baseline_error,
                "decision_value": c.baseline_decision,
                "decision_field": config.decision_field,
            },
            "perturbations": entries,
            "scores": c.scores(),
            "warnings": [w for w in run.warnings if w.startswith(f"{c.case}:")],
            "caps": [w for w in run.caps if w.startswith(f"{c.case}:")],
        }
        if len(c.replays) > 1 or config.noise_floor.enabled:
            report["noise_floor"] = {"sigma_c": c.sigma_c, "replay_count": len(c.replays),
                                     "baseline_replays": c.replays}  # fmt: skip
        write_atomic(run.out / c.case / "report.json", json.dumps(report, indent=2, default=str))
    body = run.result.to_dict()
    payload = {
        "schema_version": SCHEMA_VERSION,
        "seed": run.seed,
        "only": only,
        "decision_field": config.decision_field,
        "governing_types": list(config.governing_types),
        "cases": body.pop("cases"),
        **{
            k: body.pop(k)
            for k in (
                "invariance",
                "invariance_sample",
                "sensitivity",
                "sensitivity_sample",
                "kelvin_score",
            )
        },
        "single_case_run": any(w.startswith("Only one case") for w in run.warnings),
        "sensitivity_by_type": body.pop("sensitivity_by_type"),
        "warnings": run.warnings,
        "caps": run.caps,
        **body,
        "calipers": {
            "invocations": run.invocations,
            "cached": run.cached,
            "run": run.result.run,
        },
    }
    write_atomic(run.out / "report.json", json.dumps(payload, indent=2, default=str))
