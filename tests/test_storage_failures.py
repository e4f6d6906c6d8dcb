"""Storage that fails underneath a command (issue 35, item 7): a damaged store, a full disk, no
permission. Each is exit 1 with the path, the cause and a hint, never a traceback, and the store
is left as it was."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from calipers.cli.main import main

GOOD = Path(__file__).parent / "fixtures" / "good" / "small.jsonl"
BLOCK, HEADER = 262_144, 12_288  # DuckDB's block size and its file header


def _store(tmp_path: Path) -> bytes:
    made = tmp_path / "made.duckdb"
    assert main(["import", str(GOOD), "--db", str(made)]) == 0
    data = made.read_bytes()
    made.unlink()
    return data


def _damaged(data: bytes) -> dict[str, bytes]:
    """Ways a store file gets damaged: cut short, zeroed, bytes overwritten, empty."""
    checksums = bytearray(data)
    for start in range(HEADER + BLOCK, len(data), BLOCK):  # every block but the first
        checksums[start : start + 8] = b"\xff" * 8
    noise = bytearray(data)
    for i in range(HEADER, len(data), 997):
        noise[i] = (i * 131) % 256
    return {
        "cut-at-half": data[: len(data) // 2],
        "cut-at-a-tenth": data[: len(data) // 10],
        "header-only": data[:100],
        "zero-length": b"",
        "zeroed-after-header": data[:HEADER] + b"\0" * (len(data) - HEADER),
        "block-checksums-overwritten": bytes(checksums),
        "bytes-overwritten": bytes(noise),
        "not-duckdb": b"hello, not a database\n" * 100,
    }


def _commands(db: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "runs": ["runs", "--db", str(db)],
        "runs-json": ["runs", "--json", "-", "--db", str(db)],
        "score": ["score", "--scheme", "metric", "--metric", "correct", "--db", str(db)],
        "compare": ["compare", "--scheme", "metric", "--metric", "correct", "--baseline", "m",
                    "--db", str(db)],
        "report": ["report", "--db", str(db), "--html", str(tmp / "r.html")],
        "import": ["import", str(GOOD), "--as", "other", "--db", str(db)],
        "export": ["export", str(tmp / "out.jsonl"), "--db", str(db)],
        "migrate": ["migrate", "--db", str(db)],
    }  # fmt: skip


def test_a_damaged_store_is_exit_1_naming_it_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _store(tmp_path)
    outcomes: dict[tuple[str, str], int] = {}
    for damage, blob in _damaged(data).items():
        for name in _commands(Path("x"), tmp_path):
            folder = tmp_path / f"{damage}-{name}"
            folder.mkdir()
            db = folder / "s.duckdb"
            db.write_bytes(blob)
            code = main(_commands(db, folder)[name])
            err = capsys.readouterr().err
            outcomes[(damage, name)] = code
            assert "Traceback" not in err, (damage, name, err)
            if code != 0:  # damage in a block the command never reads is not noticed
                assert code == 1, (damage, name, err)
                assert err.startswith("error:") and str(db) in err, (damage, name, err)
                assert "hint:" in err, (damage, name, err)
            if name in ("import", "migrate") and code != 0:
                assert db.read_bytes() == blob, (damage, name)  # left as it was
            assert not (folder / "out.jsonl").exists() or code == 0
    failed = [k for k, v in outcomes.items() if v]
    assert len(failed) >= 6 * len(_commands(Path("x"), tmp_path)), failed


def test_damage_read_mid_command_names_the_store_and_the_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opened fine, then a read hits the damage (DuckDB's IOException and its plain Error)."""
    data = _store(tmp_path)
    for damage in ("cut-at-half", "block-checksums-overwritten"):
        db = tmp_path / f"{damage}.duckdb"
        db.write_bytes(_damaged(data)[damage])
        assert main(["runs", "--db", str(db)]) == 1
        err = capsys.readouterr().err
        assert f"the store {db}" in err and ("damaged" in err or "cannot open" in err), err
        assert "Traceback" not in err


def test_no_permission_and_a_read_only_file_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated (the tests may run as root, who may read anything)."""
    from calipers.data import store as store_module

    db = tmp_path / "s.duckdb"
    db.write_bytes(_store(tmp_path))
    for code, words in ((errno.EACCES, "Permission denied"), (errno.EROFS, "Read-only")):

        def refuse(*args: object, _code: int = code, **kwargs: object) -> None:
            raise OSError(_code, os.strerror(_code), str(db))

        monkeypatch.setattr(store_module.Store, "__init__", refuse)
        for argv in (["runs", "--db", str(db)], ["import", str(GOOD), "--db", str(db)]):
            assert main(argv) == 1
            err = capsys.readouterr().err
            assert f"the store {db}" in err and words in err and "hint:" in err, err
            assert "Traceback" not in err


def test_other_errors_keep_their_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only storage failures are caught: a bug (here a KeyError, and an OSError of another kind)
    still raises."""
    from calipers.data import store as store_module

    for error in (KeyError("bug"), OSError(errno.ENOENT, "No such file", "x")):

        def fail(*args: object, _error: Exception = error, **kwargs: object) -> None:
            raise _error

        monkeypatch.setattr(store_module.Store, "__init__", fail)
        with pytest.raises(type(error)):
            main(["runs", "--db", "whatever.duckdb"])


def _calipers(argv: list[str], *, stdout: object = None, file_limit: int | None = None,
              cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    def limit() -> None:
        if file_limit is not None:  # a file cannot grow beyond it: what a full disk does
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    return subprocess.run(
        [sys.executable, "-m", "calipers", *argv],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_disk_under_stdout(tmp_path: Path) -> None:
    """`export -` and `runs --json -` into /dev/full (every write: no space left on device)."""
    db = tmp_path / "s.duckdb"
    db.write_bytes(_store(tmp_path))
    with open("/dev/full", "w") as full:
        for argv in (["export", "-"], ["runs", "--json", "-"], ["runs"]):
            done = _calipers([*argv, "--db", str(db)], stdout=full)
            assert done.returncode == 1, done.stderr
            assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
            assert "cannot write the standard output: out of space" in done.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE as a full disk: Linux")
def test_a_full_disk_for_export_import_and_run(tmp_path: Path) -> None:
    """Files that cannot grow (RLIMIT_FSIZE): export names its target, import and run the store;
    the store keeps what it had, and no half-written export is left."""
    db = tmp_path / "s.duckdb"
    db.write_bytes(_store(tmp_path))
    before = db.read_bytes()
    done = _calipers(["export", str(tmp_path / "out.jsonl"), "--db", str(db)], file_limit=1000)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write {tmp_path / 'out.jsonl'}: out of space" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.duckdb"]

    done = _calipers(["import", str(GOOD), "--as", "z", "--db", str(db)], file_limit=3000)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot write the store {db}" in done.stderr and "out of space" in done.stderr

    suite = tmp_path / "suite.yaml"
    suite.write_text("tasks:\n  - id: t1\n    input: hello\n")
    pipeline = f"{sys.executable} -c \"import sys; open(sys.argv[2], 'w').write('{{{{}}}}')\""
    done = _calipers(
        ["run", str(suite), "--pipeline", f"{pipeline} {{input}} {{output}}", "--run", "r",
         "--db", str(db), "--no-cache"],
        file_limit=3000, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"the store {db}" in done.stderr and "out of space" in done.stderr
    (tmp_path / "s.duckdb.wal").unlink(missing_ok=True)
    assert db.read_bytes() == before
    listed = _calipers(["runs", "--json", "-", "--db", str(db)])
    runs = [r["run"] for r in json.loads(listed.stdout)]
    assert runs == ["m"]
