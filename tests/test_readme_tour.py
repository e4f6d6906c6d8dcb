"""The README's tour runs exactly as written after `make demo`.

The tour is the README's ```bash block that starts with `# tour`. In a fresh directory that sees
the repository's `docs/` and `src/` (the files the tour names), `calipers demo` runs as `make demo`
runs it; then every command of the tour runs through bash, as written (continuation lines and
comments included), with the venv's scripts first on PATH as `source .venv/bin/activate` puts
them, and must exit 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's scripts: calipers, python3

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # the demo, then the tour: make test-all


def tour_commands(readme: str) -> list[str]:
    """The commands of the block marked `# tour`, one per entry with its continuation lines."""
    blocks = [b for b in re.findall(r"^```bash\n(.*?)^```", readme, re.M | re.S)]
    tours = [b for b in blocks if b.startswith("# tour\n")]
    assert len(tours) == 1, "the README has one ```bash block starting with `# tour`"
    commands: list[str] = []
    current: list[str] = []
    for line in tours[0].splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        if not line.rstrip().endswith("\\"):
            commands.append("\n".join(current))
            current = []
    assert not current, "the tour ends inside a continued command"
    return commands


def test_the_tour_is_found() -> None:
    commands = tour_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(commands) >= 10 and all(c.startswith("calipers ") for c in commands)
    for needed in ("calipers runs", "calipers leaderboard", "calipers report"):
        assert any(c.startswith(needed) for c in commands), needed


def test_every_tour_command_runs_as_written_after_the_demo(tmp_path: Path) -> None:
    for name in ("docs", "src"):  # read by the tour; it writes only to .calipers/ and tour/
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if k != "CALIPERS_DB"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"

    def run(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip

    demo = run("calipers demo")  # what `make demo` runs, after installing
    assert demo.returncode == 0, demo.stderr
    assert (tmp_path / ".calipers" / "calipers.duckdb").exists()  # the default store, filled
    failed = []
    for command in tour_commands((ROOT / "README.md").read_text(encoding="utf-8")):
        done = run(command)
        if done.returncode != 0:
            failed.append(f"{command}\n→ exit {done.returncode}: {done.stderr[-2000:]}")
    assert not failed, "\n\n".join(failed)
    for page in ("leaderboard.html", "store.html", "compare.html", "check.html"):
        assert (tmp_path / "tour" / page).exists(), page
    runs = run("calipers runs").stdout
    for name in ("atlas-small", "assistant-v1", "assistant-v3", "prompt-v2", "check"):
        assert name in runs
