"""docs/schemas/ holds the published JSON Schemas, byte for byte the ones in the package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DOCS = Path(__file__).parent.parent / "docs" / "schemas"


def test_docs_schemas_are_the_packaged_ones() -> None:
    packaged = {
        p.name: p.read_text(encoding="utf-8")
        for p in resources.files("calipers.render.schemas").iterdir()
        if p.name.endswith(".schema.json")
    }
    packaged["sample.schema.json"] = (
        resources.files("calipers.data").joinpath("sample.schema.json").read_text(encoding="utf-8")
    )
    documented = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.schema.json")}
    fix = "cp src/calipers/render/schemas/*.json src/calipers/data/sample.schema.json docs/schemas/"
    assert sorted(documented) == sorted(packaged), f"docs/schemas/ is out of date: {fix}"
    for name, text in packaged.items():
        assert documented[name] == text, f"docs/schemas/{name} differs from the package's: {fix}"
