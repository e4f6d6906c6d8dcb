"""Every key a comparison's JSON report holds is declared in its published schema (issue 34: the
`gate` key was written but not declared, so validation let it through unchecked). The schemas
leave most objects open (no `additionalProperties: false`), so validation alone cannot see an
undeclared key: this walks each report with its schema and lists the keys no `properties`,
`additionalProperties` map or `allOf`/`anyOf`/`oneOf` branch declares."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from calipers.cli.main import main

EXAMPLES = Path(__file__).parent.parent / "docs" / "examples"
INSPECT = Path(__file__).parent / "fixtures" / "importers" / "inspect"


def schema_of(kind: str) -> dict[str, Any]:
    text = resources.files("calipers.render.schemas").joinpath(f"{kind}.schema.json")
    schema: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return schema


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _branches(schema: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema and each of its allOf / anyOf / oneOf branches, resolved, at any depth."""
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return []
    found = [schema]
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key, []):
            found += _branches(sub, root)
    return found


def undeclared(instance: Any, schema: Any, root: dict[str, Any], path: str = "$") -> list[str]:
    """The paths of the keys in `instance` that `schema` does not declare."""
    found: list[str] = []
    parts = _branches(schema, root)
    if isinstance(instance, dict):
        declared: dict[str, list[Any]] = {}
        maps: list[Any] = []
        open_ = False
        for branch in parts:
            for key, sub in (branch.get("properties") or {}).items():
                declared.setdefault(key, []).append(sub)
            extra = branch.get("additionalProperties")
            if isinstance(extra, dict):
                maps.append(extra)
            open_ |= extra is True or bool(branch.get("patternProperties"))
        strict = bool(declared) and not maps and not open_
        for key, value in instance.items():
            if key in declared:
                for sub in declared[key]:
                    found += undeclared(value, sub, root, f"{path}.{key}")
            elif maps:
                for sub in maps:
                    found += undeclared(value, sub, root, f"{path}.{key}")
            elif strict:
                found.append(f"{path}.{key}")
    elif isinstance(instance, list):
        for branch in parts:
            if isinstance(branch.get("items"), dict):
                for i, value in enumerate(instance):
                    found += undeclared(value, branch["items"], root, f"{path}[{i}]")
    return sorted({re.sub(r"\[\d+\]", "[]", p) for p in found})


def _report(capsys: pytest.CaptureFixture[str], args: list[str], code: int) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["compare", *args, "--json", "-"]) == code
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


LAYERED = [str(EXAMPLES / "layered.jsonl"), "--scheme", "layered", "--baseline", "prompt-v1",
           "--candidate", "prompt-v2", "--margin", "0.5"]  # fmt: skip
METRIC = [str(INSPECT / "run-a.eval"), "--vs", str(INSPECT / "prompt-v2.eval"), "--scheme",
          "metric", "--metric", "match"]  # fmt: skip
OBJECTIVE = [str(EXAMPLES / "objective.jsonl"), "--scheme", "objective", "--baseline",
             "prompt-v1", "--candidate", "prompt-v3"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "gate", "kind"),
    [
        (LAYERED, "non-inferior", "compare"),
        (LAYERED, "no-regress", "compare"),
        (METRIC, "ship", "compare"),
        (OBJECTIVE, "ship", "objective-compare"),
        (OBJECTIVE, "no-regress", "objective-compare"),
    ],
)
def test_every_key_of_a_comparison_is_declared(
    capsys: pytest.CaptureFixture[str], args: list[str], gate: str, kind: str
) -> None:
    capsys.readouterr()
    code = main(["compare", *args, "--gate", gate, "--json", "-"])
    report = json.loads(capsys.readouterr().out)
    schema = schema_of(kind)
    assert undeclared(report, schema, schema) == []
    found = report["gate"]
    assert found["name"] == gate and found["passed"] is (code == 0)
    assert (found["failure"] is None) is found["passed"]
    validator = jsonschema.validators.validator_for(schema)(schema)  # the schema checked once
    validator.validate(report)
    # the gate is checked, not merely allowed: a wrong one is refused
    for wrong in ({**found, "passed": "yes"}, {**found, "extra": 1}, {"name": gate}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate({**report, "gate": wrong})


def test_no_gate_no_gate_key(capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(capsys, [*LAYERED, "--gate", "none"], 0)
    assert "gate" not in report
    assert undeclared(report, schema_of("compare"), schema_of("compare")) == []


def test_the_walk_finds_an_undeclared_key() -> None:
    schema = schema_of("compare")
    report = {"schema_version": "2", "gate": {"name": "ship"}, "surprise": 1,
              "flips": [{"n_samples": 1, "nope": 2}]}  # fmt: skip
    assert undeclared(report, schema, schema) == ["$.flips[].nope", "$.surprise"]
