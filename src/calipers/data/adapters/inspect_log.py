"""inspect_ai eval logs (`inspect eval --log-dir DIR`): a `.eval` zip (inspect's default) or a
`.json` log (`--log-format json`), log format versions 1–2 (inspect_ai to 0.3.285 at least).

One sample per sample and epoch: `run` the log's model, `task` its task, `sample_id` the sample id
as a string, `epoch` inspect's (from 1). `scores` has each score that inspect's `value_to_float`
turns into a finite number (C 1, P 0.5, I and N 0, booleans, numbers, numeric strings, yes/no,
true/false) under its scorer's name, `scorer/key` for each key of a dict-valued score; what inspect
would count as 0 with a warning (other strings, lists) and unscored (NaN) values are left out.
`correct` only when the log has one score key and all its values are C/I or booleans. Tokens and
cost are the eval's model's (`eval.model`), the other models' (graders) go to `grader_*`
(inspect_usage); `latency_s` is its total (else working) time, `error` its error. With epoch
reducers other than the mean, each score's name holds inspect's headline reducer, and every
reducer's per-sample value is under `NAME@REDUCER` (inspect_reducers).
`input` is the input text (a chat input's messages blank-line separated), `expected` the target
(one per line), `output` the completion. A sample id may hold "/": a .eval then nests its entry
(`samples/geo/fr_epoch_1.json`). A log of any status is read: a cancelled, failed or unfinished
one yields the samples it holds, with a warning when they are fewer than the dataset x epochs.

`read_rows` returns `Rows`, a list with `.warnings` (strings naming the file) for the caller to
print; `directory_hint` says what to pass instead of a directory of inspect logs.

inspect_ai 0.3.206 and later compress `.eval` members with zstd, which Python's zipfile reads from
3.14 on; before that they are decompressed with pyarrow's zstd codec.
"""

from __future__ import annotations

import math
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calipers.data import jsontext
from calipers.data.adapters import inspect_left, inspect_reducers, inspect_usage
from calipers.data.adapters.unimported import Unimported
from calipers.data.adapters.values import Notes, count, is_number
from calipers.data.adapters.values import key as id_text
from calipers.errors import InputError

VERSIONS = (1, 2)
_ZIP_MAGIC = b"PK\x03\x04"
_ZSTD = 93  # the zip compression method number of Zstandard
_HEADERS = ("header.json", "_journal/start.json")  # a finished log; one unfinished or crashed
# any depth: an id with "/" nests (samples/geo/fr_epoch_1.json, chunked .../fr_epoch_1/sample.json)
_SAMPLE = re.compile(r"samples/(?P<key>.+_epoch_\d+)(?P<chunked>/sample)?\.json")
# inspect writes `version` then `status` first: the field order is part of its JSON log format.
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_ATTACHMENT = "attachment://"
_HINT = "Pass a log file inspect_ai wrote (`inspect eval --log-dir DIR`): a .eval or .json in DIR."
_SCAN = 200  # directory entries looked at by directory_hint


class Rows(list[dict[str, Any]]):
    """The sample rows of a log, what the caller should warn about (each names the file), and
    what of the log was not imported (`inspect_left`)."""

    def __init__(
        self,
        rows: list[dict[str, Any]],
        warnings: list[str],
        not_imported: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(rows)
        self.warnings = warnings
        self.not_imported = not_imported or []


def directory_hint(path: Path) -> str | None:
    """For a directory given instead of a file: the hint naming its inspect logs' suffix, when
    it holds some (among its first entries); else None."""
    try:
        entries = sorted(p for _, p in zip(range(_SCAN), path.iterdir(), strict=False))
    except OSError:
        return None
    for suffix in (".eval", ".json"):
        if any(p.suffix == suffix and p.is_file() and detect(p) for p in entries):
            return f"Pass the inspect_ai logs inside it, e.g. DIR/*{suffix}."
    return None


def detect(path: Path) -> bool:
    """A zip with inspect's header.json or _journal/start.json, or a JSON log of inspect's. A
    damaged zip named .eval too, so that reading it says what is wrong with it."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
        if head.startswith(_ZIP_MAGIC):
            try:
                with zipfile.ZipFile(path) as archive:
                    return any(name in _HEADERS for name in archive.namelist())
            except (zipfile.BadZipFile, EOFError):
                return path.suffix == ".eval"
        return path.suffix == ".json" and _JSON_HEAD.match(head) is not None
    except (OSError, ValueError):
        return False


def read_rows(path: Path) -> Rows:
    """One sample row per sample and epoch of an inspect_ai log, and its warnings."""
    try:
        with path.open("rb") as f:
            is_zip = f.read(4) == _ZIP_MAGIC
    except OSError as exc:
        raise InputError(f"{path}: not readable: {exc}", hint=_HINT) from None
    header, samples = _read_eval(path) if is_zip or path.suffix == ".eval" else _read_json(path)
    _check_version(path, header)
    if not isinstance(samples, list) or not samples:
        raise InputError(
            f"{path}: the inspect log holds no samples (expected per-sample results)",
            hint="inspect_ai leaves them out with --no-log-samples; run the eval without it.",
        )
    if not all(isinstance(s, dict) and "id" in s and "epoch" in s for s in samples):
        raise InputError(f"{path}: a sample without id or epoch (expected inspect's samples)")
    for s in samples:  # an id is a string or an integer, an epoch a whole number: never converted
        where = f"{path}, sample {s['id']!r}"
        id_text(s["id"], where, "id")
        count(s["epoch"], where, "epoch")
    samples.sort(key=lambda s: (isinstance(s["id"], str), str(s["id"]).rjust(20), s["epoch"]))
    first = _obj((_obj(header.get("results")).get("scores") or [{}])[0])
    single = str(first.get("name") or "score")  # the scorer of a version-1 sample's one `score`
    notes = Notes()
    raw_scores = [_raw_scores(sample, single, path, notes) for sample in samples]
    spec = _obj(header.get("eval"))
    rows = [_row(sample, spec, raws) for sample, raws in zip(samples, raw_scores, strict=True)]
    warnings = _incomplete(path, header, len(rows)) + _usage_warnings(path, samples, spec)
    headline = inspect_reducers.reducers(header)[0]
    unequal = _unequal_epochs(path, rows, headline)  # on each epoch's values, before reducing
    # Which of several scorers is "the" outcome is not ours to choose; nor is P's or N's verdict.
    values = [v for raws in raw_scores for v in raws.values()]
    keys = {key for raws in raw_scores for key in raws}
    if len(keys) == 1 and all(v in ("C", "I") or isinstance(v, bool) for v in values):
        for row, raws in zip(rows, raw_scores, strict=True):
            if raws:
                row["correct"] = next(iter(raws.values())) in ("C", True)
    warnings += inspect_reducers.apply(rows, header, path, _to_float, notes)
    left = Unimported(inspect_left.TOOL)
    inspect_left.left_out(path, header, samples, rows, headline, left, _to_float)
    return Rows(rows, warnings + unequal + notes.lines(), left.entries())


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _read_json(path: Path) -> tuple[dict[str, Any], Any]:
    try:
        data = jsontext.loads_tool(path.read_bytes())  # with the NaN inspect writes (unscored)
    except OSError as exc:
        raise InputError(f"{path}: not readable: {exc}", hint=_HINT) from None
    except jsontext.JSONError as exc:
        raise InputError(f"{path}: neither a .eval zip nor JSON: {exc}", hint=_HINT) from None
    if not (isinstance(data, dict) and "version" in data and isinstance(data.get("eval"), dict)):
        raise InputError(
            f"{path}: JSON, but not an inspect_ai log (expected the top-level keys version, "
            "status, eval, samples)",
            hint=_HINT,
        )
    return data, data.get("samples")


def _read_eval(path: Path) -> tuple[dict[str, Any], list[Any]]:
    try:
        with zipfile.ZipFile(path) as archive:
            found = [name for name in _HEADERS if name in set(archive.namelist())]
            if not found:
                raise InputError(
                    f"{path}: a zip, but not an inspect_ai .eval log (expected header.json or "
                    "_journal/start.json in it)",
                    hint=_HINT,
                )
            header = _member(path, archive, found[0])
            if found[0] != "header.json" and isinstance(header, dict):
                header.setdefault("status", "started")  # as inspect reads a log without header
            if "reductions.json" in archive.namelist() and isinstance(header, dict):
                # each sample's reduced values, as a .json log holds them (inspect_reducers)
                header["reductions"] = _member(path, archive, "reductions.json")
            samples = []
            for name in archive.namelist():
                if match := _SAMPLE.fullmatch(name):
                    sample = _member(path, archive, name)
                    if match["chunked"] and isinstance(sample, dict):
                        resolve = _chunked(path, archive, f"samples/{match['key']}/attachments/")
                        sample["input"] = _walk(sample.get("input"), resolve)
                    samples.append(sample)
    except (zipfile.BadZipFile, EOFError) as exc:
        raise InputError(
            f"{path}: not a readable .eval zip ({exc}); truncated, or not an inspect log?",
            hint=_HINT,
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: not readable: {exc}", hint=_HINT) from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: {found[0]} is not a JSON object (expected inspect's header)")
    return header, samples


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> Any:
    info = archive.getinfo(name)
    try:
        if info.compress_type == _ZSTD and not hasattr(zipfile, "ZIP_ZSTANDARD"):
            return jsontext.loads_tool(_zstd_member(path, info))
        return jsontext.loads_tool(archive.read(info))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error) as exc:
        raise InputError(
            f"{path}: entry {name} is not readable ({exc}); the archive is damaged or truncated",
            hint=_HINT,
        ) from None


def _zstd_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    import pyarrow as pa  # a calipers dependency already: its zstd codec spares adding one

    with path.open("rb") as f:
        f.seek(info.header_offset)
        local = struct.unpack("<4s2B4HL2L2H", f.read(30))  # the zip local file header
        if local[0] != _ZIP_MAGIC:
            raise zipfile.BadZipFile(f"no local header for {info.filename}")
        f.seek(info.header_offset + 30 + local[10] + local[11])  # past file name and extra
        raw = f.read(info.compress_size)
    data: bytes = pa.decompress(raw, decompressed_size=info.file_size, codec="zstd", asbytes=True)
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC-32 for {info.filename}")
    return data


def _chunked(path: Path, archive: zipfile.ZipFile, prefix: str) -> Callable[[str], str]:
    """`attachment://<index>` in a chunked sample (`inspect log convert-chunked`): an index into
    its attachments sequence, stored in chunks named by their first index."""
    starts = sorted(int(n[len(prefix) : -5]) for n in archive.namelist() if n.startswith(prefix))

    def resolve(ref: str) -> str:
        index = ref.removeprefix(_ATTACHMENT)
        start = max((s for s in starts if index.isdigit() and s <= int(index)), default=None)
        if start is None:
            return ref
        items = _member(path, archive, f"{prefix}{start}.json")
        return str(items[int(index) - start]) if int(index) - start < len(items) else ref

    return resolve


def _walk(value: Any, resolve: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return resolve(value) if value.startswith(_ATTACHMENT) else value
    if isinstance(value, list):
        return [_walk(item, resolve) for item in value]
    if isinstance(value, dict):
        return {key: _walk(item, resolve) for key, item in value.items()}
    return value


def _check_version(path: Path, header: dict[str, Any]) -> None:
    version = header.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version in VERSIONS:
        return
    writer = _obj(_obj(header.get("eval")).get("packages")).get("inspect_ai")
    raise InputError(
        f"{path}: inspect log format version {version!r}"
        + (f" (written by inspect_ai {writer})" if writer else "")
        + f" is not supported (expected {VERSIONS[0]}–{VERSIONS[-1]}, inspect_ai to 0.3.285)",
        hint="A newer inspect_ai wrote it; update calipers, or ask for support of this version."
        if isinstance(version, int) and version > VERSIONS[-1]
        else _HINT,
    )


def _raw_scores(sample: dict[str, Any], single: str, path: Path, notes: Notes) -> dict[str, Any]:
    """Each score's value that inspect's value_to_float reads; what it does not (NaN for an
    unscored sample, a list, free text) is left out and noted."""
    scores = sample.get("scores")
    if scores is None and "score" in sample:
        scores = {single: sample["score"]}
    raws = {}
    record = f"sample {sample['id']!r}, epoch {sample['epoch']}"
    for name, score in _obj(scores).items():
        value = _obj(score).get("value")
        for part, raw in value.items() if isinstance(value, dict) else [(None, value)]:
            label = name if part is None else f"{name}/{part}"
            if _to_float(raw) is not None:
                raws[label] = raw
            elif raw is not None:
                notes.score(path, label, raw if not is_number(raw) else math.nan, record)
    return raws


def _to_float(value: Any) -> float | None:
    """inspect's value_to_float, except that what it cannot convert is None rather than 0."""
    if isinstance(value, str) and value in ("C", "P", "I", "N"):
        return {"C": 1.0, "P": 0.5}.get(value, 0.0)
    if isinstance(value, str):
        if value.lower() in ("yes", "true", "no", "false"):
            return 1.0 if value.lower() in ("yes", "true") else 0.0
        try:
            value = float(value)
        except ValueError:
            return None
    number = float(value) if isinstance(value, int | float) else math.nan
    return number if math.isfinite(number) else None


def _text(content: Any) -> str | None:
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return content if isinstance(content, str) else None


def _row(sample: dict[str, Any], spec: dict[str, Any], raws: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"sample_id": str(sample["id"]), "epoch": sample["epoch"]}  # checked
    for field, key in (("run", "model"), ("task", "task")):
        if isinstance(spec.get(key), str):
            row[field] = spec[key]
    attachments = _obj(sample.get("attachments"))  # `attachment://<hash>` → text
    value = _walk(
        sample.get("input"), lambda r: str(attachments.get(r.removeprefix(_ATTACHMENT), r))
    )
    if isinstance(value, list):
        texts = [_text(message.get("content")) for message in value if isinstance(message, dict)]
        value = "\n\n".join(t for t in texts if t) if any(texts) else None
    if isinstance(value, str):
        row["input"] = value
    target = sample.get("target")
    if target and isinstance(target, list | str):  # "" is inspect's default: no target
        row["expected"] = target if isinstance(target, str) else "\n".join(map(str, target))
    output = _obj(sample.get("output"))
    choices = output.get("choices") or []
    if isinstance(output.get("completion"), str) and (choices or output["completion"]):
        row["output"] = output["completion"]
    elif choices:
        row["output"] = _text(_obj(_obj(choices[0]).get("message")).get("content"))
    if raws:
        row["scores"] = {key: _to_float(raw) for key, raw in raws.items()}
    model = spec.get("model") if isinstance(spec.get("model"), str) else None
    row.update(inspect_usage.usage_fields(sample, model))
    times = [sample.get(k) for k in ("total_time", "working_time")]
    latency = next((t for t in times if isinstance(t, int | float)), None)
    if latency is not None and is_number(latency):
        row["latency_s"] = float(latency)
    if _obj(sample.get("error")).get("message"):
        row["error"] = str(sample["error"]["message"])
    return row


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _incomplete(path: Path, header: dict[str, Any], found: int) -> list[str]:
    """Fewer samples than the dataset (the ids run) x epochs: an unfinished, cancelled or failed
    run, whose scores describe only the samples it reached."""
    spec = _obj(header.get("eval"))
    dataset, epochs = _obj(spec.get("dataset")), _obj(spec.get("config")).get("epochs", 1)
    ids = dataset.get("sample_ids")
    size = len(ids) if isinstance(ids, list) else dataset.get("samples")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (size, epochs)):
        return []
    if found >= size * epochs:
        return []
    return [
        f"{path}: incomplete log (status {header.get('status', 'unknown')}): {found} of "
        f"{size * epochs} samples (dataset {size} × {_plural(epochs, 'epoch', 'epochs')}); "
        "the scores cover only these"
    ]


def _unequal_epochs(path: Path, rows: list[dict[str, Any]], reducer: str) -> list[str]:
    """Samples with fewer scored epochs (for some score) than others: an errored or unscored
    epoch. The mean of per-sample means then differs from the mean over all rows. `reducer`:
    inspect's headline reducer, which calipers' plain score names hold (inspect_reducers)."""
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        for key in row.get("scores", {}):
            per_sample = counts.setdefault(key, {})
            per_sample[row["sample_id"]] = per_sample.get(row["sample_id"], 0) + 1
    ids = {row["sample_id"] for row in rows}
    fewer = {
        sid
        for per_sample in counts.values()
        for sid in ids
        if per_sample.get(sid, 0) < max(per_sample.values())
    }
    if not fewer:
        return []
    what = (
        "the mean of its scored epochs"
        if reducer == inspect_reducers.MEAN
        else f"the {reducer} of its scored epochs, inspect's reduced value"
    )
    return [
        f"{path}: {_plural(len(fewer), 'sample has', 'samples have')} fewer scored epochs "
        f"than others (an errored or unscored epoch); each sample still weighs the same in "
        f"calipers' means — {what} — as in inspect's headline, but those samples' "
        f"{'means' if reducer == inspect_reducers.MEAN else 'values'} rest on fewer epochs"
    ]


def _usage_warnings(path: Path, samples: list[Any], spec: dict[str, Any]) -> list[str]:
    model = spec.get("model") if isinstance(spec.get("model"), str) else None
    unknown = [s for s in samples if inspect_usage.unknown_model(s, model)]
    known = [s for s in samples if not inspect_usage.unknown_model(s, model)]
    found = [inspect_usage.misattributed(s, model) for s in known]
    self_graded = sum(graded for graded, _ in found)
    helpers = sorted({name for _, names in found for name in names})
    helped = sum(bool(names) for _, names in found)
    warnings = []
    if unknown:
        names = sorted({str(k) for s in unknown for k in _obj(s.get("model_usage"))})
        warnings.append(
            f"{path}: {_plural(len(unknown), 'sample has', 'samples have')} usage only of "
            f"{', '.join(names)}, none of the eval's model {model}; their tokens and cost (own "
            "and graders') are left absent"
        )
    if self_graded:
        warnings.append(
            f"{path}: in {_plural(self_graded, 'sample', 'samples')} the model under test "
            f"({model}) also graded (a model-graded scorer with no grader model); its grading "
            "tokens and cost are counted in tokens_in/out and cost_usd, not in grader_*"
        )
    if helped:
        warnings.append(
            f"{path}: in {_plural(helped, 'sample', 'samples')} {', '.join(helpers)} "
            "(not the eval's model) was called outside the scorers, by the system under test; "
            "its tokens and cost are counted in grader_*, not in tokens_in/out and cost_usd"
        )
    return warnings
