"""The suite's own set-up for two workers (tests/conftest.py): every test it keeps on one worker
still exists (a renamed test would silently lose its place), and a test's group is read from its
node id, parameters and all."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import _ONE_WORKER, one_worker_group

TESTS = Path(__file__).parent


def test_every_test_kept_on_one_worker_exists() -> None:
    for key in _ONE_WORKER:
        module, _, function = key.partition("::")
        path = TESTS / module
        assert path.is_file(), key
        if function:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
            assert function in names, key


def test_a_group_is_read_from_the_node_id() -> None:
    killed = "test_check.py::test_killed_run_resumes_to_the_same_report_without_repeating_work"
    assert one_worker_group(f"tests/{killed}") == "timing"
    assert one_worker_group("tests/test_check.py::test_seed_and_only") is None
    assert one_worker_group("tests/test_faults.py::test_kill_9_while_judging[2]") == "timing"
    assert one_worker_group("tests/test_html_readable.py::test_page_is_readable[rank]") == (
        "html_readable"
    )
    assert one_worker_group("tests/test_type_rules.py::test_red_flags_must_be_strings") is None
