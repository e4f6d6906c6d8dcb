"""kelvin.yaml as kelvin 0.3.0 reads it: every field and default, rejections with the file, line
and field, unknown fields as warnings — checked against kelvin's own loader where it accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from kelvin.config import ConfigError
from kelvin.config import KelvinConfig as TheirConfig

from calipers.errors import InputError
from calipers.running.kelvin_config import load_kelvin_config

FULL = """run: "python pipe.py {input} {output}"
cases: ./cases
decision_field: verdict
governing_types: [gate_rule, policy]
seed: 42
cache_dir: .kcache
timeout_s: 30
noise_floor:
  enabled: true
  replications: 5
counterfactual_swap:
  enabled: true
retry_policy:
  max_attempts: 4
  initial_delay_s: 0.5
  backoff_factor: 3
  jitter_max_s: 0.1
  transient_exit_codes: [75, 137]
  retry_on_timeout: true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kelvin.yaml"
    path.write_text(text)
    return path


def test_every_field_read_as_kelvin_reads_it(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    ours, theirs = load_kelvin_config(path), TheirConfig.load(path)
    assert ours.run == theirs.run and ours.decision_field == theirs.decision_field
    assert list(ours.governing_types) == theirs.governing_types
    assert ours.seed == theirs.seed == 42 and ours.timeout_s == theirs.timeout_s == 30
    assert ours.cases_dir == tmp_path / "cases" and ours.cache_dir == tmp_path / ".kcache"
    assert ours.noise_floor.enabled and ours.noise_floor.replications == 5
    assert ours.counterfactual_swap.enabled and "swap_condition" in ours.perturbation_kinds
    r, k = ours.retry_policy, theirs.retry_policy
    assert (r.max_attempts, r.initial_delay_s, r.backoff_factor, r.jitter_max_s) == (
        k.max_attempts, k.initial_delay_s, k.backoff_factor, k.jitter_max_s,
    )  # fmt: skip
    assert set(r.transient_exit_codes) == set(k.transient_exit_codes) and r.retry_on_timeout
    assert ours.warnings == ()


def test_defaults_are_kelvins(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'run: "p {input} {output}"\ncases: c\ndecision_field: d\ngoverning_types: []\n'
    )
    ours, theirs = load_kelvin_config(path), TheirConfig.load(path)
    assert (ours.seed, ours.timeout_s, ours.cache_dir) == (theirs.seed, theirs.timeout_s, None)
    assert ours.noise_floor.replications == theirs.noise_floor.replications
    assert not ours.noise_floor.enabled and "swap_condition" not in ours.perturbation_kinds
    assert ours.retry_policy.max_attempts == theirs.retry_policy.max_attempts


def test_unknown_fields_warn(tmp_path: Path) -> None:
    path = write(tmp_path, FULL + "workers: 4\nnoise_floor_extra: 1\n")
    warnings = load_kelvin_config(path).warnings
    assert any("unknown field 'workers'" in w for w in warnings)
    TheirConfig.load(path)  # kelvin ignores them silently


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("decision_field: verdict", ""), "missing required field(s): decision_field"),
        (('run: "python pipe.py {input} {output}"', 'run: "python pipe.py {input}"'), "{output}"),
        (("seed: 42", "seed: many"), "seed"),
        (("timeout_s: 30", "timeout_s: -1"), "timeout_s"),
        (("  replications: 5", "  replications: 0"), "replications"),
        (("  max_attempts: 4", "  max_attempts: 0"), "max_attempts"),
        (("governing_types: [gate_rule, policy]", "governing_types: gate_rule"), "governing_types"),
        (("cases: ./cases", "cases: [a\n"), "not valid YAML"),
    ],
)
def test_what_kelvin_rejects_is_an_input_error(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    path = write(tmp_path, FULL.replace(*change))
    with pytest.raises(ConfigError):
        TheirConfig.load(path)
    with pytest.raises(InputError) as info:
        load_kelvin_config(path)
    assert message in info.value.message and str(path) in info.value.message


def test_a_missing_file_points_to_init(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_kelvin_config(tmp_path / "kelvin.yaml")
    assert "calipers init" in (info.value.hint or "")
