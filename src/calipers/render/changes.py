"""See what changed: every task's numbers of a paired comparison, and the samples that flipped
(`calipers.verdicts.flips`), in the terminal and in the Markdown summary; the HTML page's flips
table filters itself with `FLIPS_SCRIPT`.

Everything here is drawn from the comparison's JSON document (a pair's `tasks`, the report's
`flips`), so the terminal, the Markdown and the page say what `--json` says. Every piece of data
— task names, sample ids, inputs, outputs, rationales — is escaped: `calipers.render.text.escape`
for the terminal (rich markup and control characters), `calipers.render.markdown_text.escape`
for Markdown."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from calipers.render import markdown_text as md
from calipers.render.text import escape

FLIPS_SHOWN = 5  # the largest regressions and improvements per pair shown (`--flips N`)
TASKS_SHOWN = 30  # task rows in the terminal before "… and N more"
TASKS_OPEN = 12  # Markdown: more tasks than this go into a collapsed <details> block
SHOWN_CHARS = 240  # characters of an input, output or rationale shown in a line
DIFF_WORDS = 60  # words of a word diff shown
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x85\u2028\u2029]")
_ADJUST = {"holm": "Holm", "bh": "Benjamini–Hochberg", "none": "unadjusted"}
_KIND_ORDER = ("stable", "flaky", "judge-only", "error")


def _short(text: Any, limit: int = SHOWN_CHARS) -> str:
    """One line of at most `limit` characters (line breaks as ↵), not yet escaped."""
    one = _LINE_BREAK.sub("↵", str(text)).replace("\t", " ")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _f(x: Any, fmt: str = ".3f") -> str:
    return "—" if not isinstance(x, int | float) or isinstance(x, bool) else format(x, fmt)


# ------------------------------------------------------------------------------- per task


def task_samples(t: Mapping[str, Any]) -> str:
    """A task's paired samples (distinct sample ids; its observations count their epochs too)."""
    return str(t.get("n_samples", t.get("n", "—")))


def task_order(tasks: Mapping[str, Mapping[str, Any]], limit: int | None) -> list[str]:
    """Every task by name; beyond `limit`, the `limit` with the smallest adjusted p first."""
    names = list(tasks)
    if limit is None or len(names) <= limit:
        return names
    return sorted(names, key=lambda n: (tasks[n].get("p_adjusted") is None,
                                        tasks[n].get("p_adjusted") or 0.0, n))[:limit]  # fmt: skip


def tasks_terminal(pair: Mapping[str, Any], console: Console, *, label: str) -> None:
    """A pair's tasks, one row each: both means, the difference with its interval, the adjusted
    p and the paired samples (`label`: what the value is called). Nothing for a comparison of one
    task."""
    tasks: Mapping[str, Mapping[str, Any]] = pair.get("tasks") or {}
    if len(tasks) < 2:
        return
    adjust = pair.get("task_adjust")
    shown = task_order(tasks, TASKS_SHOWN)
    title = f"{escape(pair.get('treatment'))} − {escape(pair.get('control'))} per task"
    table = Table(title=title, title_justify="left", pad_edge=False)
    table.add_column("task", overflow="fold")
    table.add_column(f"{escape(label)}", justify="right")
    table.add_column("difference", justify="right")
    table.add_column("interval", justify="right")
    table.add_column("p adj" if adjust else "p", justify="right")
    table.add_column("samples", justify="right")
    for name in shown:
        t = tasks[name]
        mark = {"up": " [green]▲[/]", "down": " [red]▼[/]"}.get(str(t.get("moved")), "")
        if t.get("low") is not None and t.get("high") is not None:
            interval = escape(f"[{_f(t['low'], '+.3f')}, {_f(t['high'], '+.3f')}]")
        else:
            interval = "—" if adjust else "not tested"
        table.add_row(
            escape(name),
            f"{_f(t.get('control'))} → {_f(t.get('treatment'))}",
            _f(t.get("diff"), "+.3f") + mark,
            interval,
            _f(t.get("p_adjusted"), ".3g"),
            task_samples(t),
        )
    if len(shown) < len(tasks):
        table.caption = (
            f"the {len(shown)} smallest adjusted p of {len(tasks)} tasks; every task: --json "
            '(pairs[].tasks), to_frame("task")'
        )
    console.print(table)


def tasks_markdown(pair: Mapping[str, Any], *, quantity: str, level: str) -> list[str]:
    """A pair's tasks as a Markdown table (task, difference, interval, adjusted p, paired
    samples); more than
    TASKS_OPEN of them go into a collapsed block. Nothing for a comparison of one task."""
    tasks: Mapping[str, Mapping[str, Any]] = pair.get("tasks") or {}
    if len(tasks) < 2:
        return []
    adjust = pair.get("task_adjust")
    p_head = f"p adjusted ({_ADJUST.get(str(adjust), md.escape(adjust))})" if adjust else "p"
    rows = []
    for name in task_order(tasks, None):
        t = tasks[name]
        mark = {"up": "▲ ", "down": "▼ "}.get(str(t.get("moved")), "")
        interval = md.bounds(t.get("low"), t.get("high"))
        if interval == "—" and not adjust:
            interval = "not tested"
        rows.append([md.escape(name), mark + md.signed(t.get("diff")), interval,
                     _f(t.get("p_adjusted"), ".3g"), task_samples(t)])  # fmt: skip
    header = ["task", f"{quantity} difference", f"{level} interval", p_head, "samples"]
    lines = md.table(header, rows)
    if len(tasks) <= TASKS_OPEN:
        return ["", *lines, ""]
    return ["", "<details>", f"<summary>Every task ({len(tasks)})</summary>", "", *lines, "",
            "</details>", ""]  # fmt: skip


# ------------------------------------------------------------------------------- flips


def _kinds(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in _KIND_ORDER)


def _changes_line(f: Mapping[str, Any]) -> str:
    """How many samples went up, down or stayed, and the quantiles of their changes (plain)."""
    q = f.get("distribution") or {}
    quantiles = " · ".join(
        f"{name} {_f(q.get(key), '+.3f')}"
        for name, key in (("min", "min"), ("10%", "p10"), ("25%", "p25"), ("median", "median"),
                          ("75%", "p75"), ("90%", "p90"), ("max", "max"))
    )  # fmt: skip
    return f"{f.get('up', 0)} up · {f.get('down', 0)} down · {f.get('unchanged', 0)} unchanged" + (
        f"; quantiles of the changes: {quantiles}" if q else ""
    )


def _table_line(table: Mapping[str, Any]) -> str:
    return (
        f"both pass {table['both_pass']} · only the baseline {table['only_baseline']} · only "
        f"the candidate {table['only_candidate']} · neither {table['neither']}"
    )


def _where(f: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], str]:
    """The groups where flips concentrate, and the words for the test (plain text)."""
    c = f.get("concentration") or {}
    groups = list(c.get("groups") or [])
    found = [g for g in groups if g.get("concentrated")]
    adjust = _ADJUST.get(str(c.get("adjust")), str(c.get("adjust")))
    alpha = c.get("alpha")
    how = f"Fisher's exact test, {adjust}" + (f", α {alpha:.3g}" if alpha is not None else "")
    if not groups:
        return [], "not tested: one task and no inputs to band by length"
    if not found:
        kinds = sorted({str(g.get("where")) for g in groups}, reverse=True)  # task first
        what = " or ".join("input-length band" if k == "input length" else k for k in kinds)
        return [], f"no {what} holds more flips than the others ({how})"
    return found, how


def _group(g: Mapping[str, Any]) -> str:
    rate = g.get("rate_elsewhere")
    return (
        f"{g.get('where')} {g.get('name')}: {g.get('flips')} of {g.get('n')} samples flipped, "
        f"{_f(rate, '.0%')} elsewhere (p adjusted {_f(g.get('p_adjusted'), '.3g')})"
    )


def _epochs(flip: Mapping[str, Any]) -> str:
    parts = []
    for e in flip.get("epochs") or []:
        b = (
            "error"
            if e.get("baseline") is None and e.get("baseline_errored")
            else _f(e.get("baseline"), ".3g")
        )
        c = (
            "error"
            if e.get("candidate") is None and e.get("candidate_errored")
            else _f(e.get("candidate"), ".3g")
        )
        parts.append(f"{b}→{c}")
    return "" if len(parts) < 2 else "epochs " + ", ".join(parts)


def _diff_words(ops: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """The word diff as (op, word) pairs, at most DIFF_WORDS of them (then "…")."""
    words = [(str(o.get("op")), w) for o in ops for w in str(o.get("text", "")).split()]
    if len(words) > DIFF_WORDS:
        words = [*words[:DIFF_WORDS], ("equal", "…")]
    return words


def _marked(op: str, text: str) -> str:
    """Deleted and inserted words as wdiff marks them: [-old-] {+new+} (readable without
    colour)."""
    return f"[-{text}-]" if op == "delete" else f"{{+{text}+}}" if op == "insert" else text


def _epoch(flip: Mapping[str, Any]) -> str:
    return "" if len(flip.get("epochs") or []) < 2 else f" (epoch {flip.get('epoch')})"


def _runs(words: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    grouped: list[tuple[str, list[str]]] = []
    for op, word in words:
        if grouped and grouped[-1][0] == op:
            grouped[-1][1].append(word)
        else:
            grouped.append((op, [word]))
    return grouped


def _judges(flip: Mapping[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Per judge (and dimension): the name, both scores and both rationales (plain)."""
    sides = flip.get("rationales") or {}
    base = {(j.get("judge"), j.get("dimension")): j for j in sides.get("baseline") or []}
    cand = {(j.get("judge"), j.get("dimension")): j for j in sides.get("candidate") or []}
    out = []
    for key in list(dict.fromkeys([*base, *cand])):
        b, c = base.get(key, {}), cand.get(key, {})
        name = str(key[0] or "judge") + (f" ({key[1]})" if key[1] else "")
        scores = _f(b.get("score"), "g"), _f(c.get("score"), "g")
        out.append((name, *scores, _short(b.get("rationale") or "—"),
                    _short(c.get("rationale") or "—")))  # fmt: skip
    return out


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _heading(f: Mapping[str, Any]) -> str:
    kinds = f.get("kinds") or {}
    down, up = f.get("n_regressions", 0), f.get("n_improvements", 0)
    return (
        f"{_count(down, 'regression')} ({_kinds(kinds.get('regression') or {})}) · "
        f"{_count(up, 'improvement')} ({_kinds(kinds.get('improvement') or {})}) of "
        f"{f.get('n_samples', 0)} paired samples"
    )


def flips_terminal(report: Mapping[str, Any], console: Console, *, top: int = FLIPS_SHOWN) -> None:
    """Each pair's flips: the 2×2 table (pass/fail) or the changes' quantiles, how many samples
    regressed and improved by class, where they concentrate, and the `top` largest of each
    direction with their text."""
    for f in report.get("flips") or []:
        console.print(
            f"[bold]Flips[/] {escape(f.get('treatment'))} against {escape(f.get('control'))}: "
            + escape(_heading(f)),
            highlight=False,
        )
        if f.get("table"):
            console.print(f"  pass/fail per sample: {escape(_table_line(f['table']))}",
                          highlight=False)  # fmt: skip
        console.print(f"  {escape(_changes_line(f))}", highlight=False)
        found, how = _where(f)
        if found:
            for g in found:
                console.print(f"  [yellow]concentrated[/] in {escape(_group(g))}", highlight=False)
            console.print(f"  [dim]{escape(how)}[/]", highlight=False)
        else:
            console.print(f"  [dim]where: {escape(how)}[/]", highlight=False)
        for way, arrow in (("regressions", "[red]▼[/]"), ("improvements", "[green]▲[/]")):
            listed = list(f.get(way) or [])[:top]
            if not listed:
                continue
            what = (
                f"the {len(listed)} largest {way}" if len(listed) > 1 else f"the largest {way[:-1]}"
            )
            console.print(f"  {what}:", highlight=False)
            for flip in listed:
                _flip_terminal(flip, arrow, console)
        console.print(
            f"[dim]  {escape(str(f.get('rule', '')))} · --flips N lists more; every sample: "
            '--json (flips), to_frame("sample")[/]',
            highlight=False,
        )


def _flip_terminal(flip: Mapping[str, Any], arrow: str, console: Console) -> None:
    head = (
        f"    {arrow} {escape(_short(flip.get('task'), 60))} · "
        f"{escape(_short(flip.get('sample_id'), 80))}  {_f(flip.get('baseline'))} → "
        f"{_f(flip.get('candidate'))} ({_f(flip.get('difference'), '+.3f')}) "
        f"{escape(flip.get('kind'))}" + (f" · {escape(_epochs(flip))}" if _epochs(flip) else "")
    )
    console.print(head, highlight=False)
    for name in ("input", "expected"):
        if flip.get(name) is not None:
            console.print(f"      {name}: {escape(_short(flip[name]))}", highlight=False)
    for side in ("baseline", "candidate"):
        if flip.get(f"{side}_error"):
            console.print(
                f"      [red]{side} error[/]: {escape(_short(flip[f'{side}_error']))}",
                highlight=False,
            )
    if flip.get("diff"):
        style = {"delete": "red", "insert": "green"}
        words = [
            f"[{style[op]}]{escape(_marked(op, ' '.join(ws)))}[/]"
            if op in style
            else escape(" ".join(ws))
            for op, ws in _runs(_diff_words(flip["diff"]))
        ]
        console.print(f"      output{_epoch(flip)}: " + " ".join(words), highlight=False)
    for name, b, c, rb, rc in _judges(flip):
        said = f": {escape(rb)} [dim]→[/] {escape(rc)}" if rb != "—" or rc != "—" else ""
        console.print(f"      {escape(name)} {b} → {c}{said}", highlight=False)


def flips_markdown(report: Mapping[str, Any], *, top: int = FLIPS_SHOWN) -> list[str]:
    """Each pair's flips for a pull request: the counts in two lines, where they concentrate,
    and the `top` largest of each direction in a collapsed <details> block (its summary holds
    no data: inside an HTML block Markdown escaping does not apply)."""
    lines: list[str] = []
    for f in report.get("flips") or []:
        lines += [
            f"**Flips** for {md.escape(f.get('treatment'))} against "
            f"{md.escape(f.get('control'))}: {md.escape(_heading(f))}.",
            "",
        ]
        if f.get("table"):
            lines += [f"Pass/fail per sample: {md.escape(_table_line(f['table']))}.", ""]
        lines += [f"Changes: {md.escape(_changes_line(f))}.", ""]
        found, how = _where(f)
        if found:
            lines += [f"Concentrated in {md.escape(_group(g))}." for g in found]
            lines += [f"({md.escape(how)})", ""]
        else:
            lines += [f"Where: {md.escape(how)}.", ""]
        listed = {way: list(f.get(way) or [])[:top] for way in ("regressions", "improvements")}
        n_listed = sum(len(v) for v in listed.values())
        if not n_listed:
            continue
        down = _count(len(listed["regressions"]), "regression")
        up = _count(len(listed["improvements"]), "improvement")
        lines += ["<details>", f"<summary>The largest flips: {down}, {up}</summary>", ""]
        for way, arrow in (("regressions", "▼"), ("improvements", "▲")):
            for flip in listed[way]:
                lines += _flip_markdown(flip, arrow)
        lines += ["", f"How to read it: {md.escape(str(f.get('rule', '')))}.", "", "</details>", ""]
    return lines


def _flip_markdown(flip: Mapping[str, Any], arrow: str) -> list[str]:
    lines = [
        f"- {arrow} {md.escape(_short(flip.get('task'), 60))} · "
        f"{md.escape(_short(flip.get('sample_id'), 80))}: {md.num(flip.get('baseline'))} → "
        f"{md.num(flip.get('candidate'))} ({md.signed(flip.get('difference'))}), "
        f"{md.escape(flip.get('kind'))}"
        + (f"; {md.escape(_epochs(flip))}" if _epochs(flip) else "")
    ]
    for name in ("input", "expected"):
        if flip.get(name) is not None:
            lines.append(f"  - {name}: {md.escape(_short(flip[name]))}")
    for side in ("baseline", "candidate"):
        if flip.get(f"{side}_error"):
            lines.append(f"  - {side} error: {md.escape(_short(flip[f'{side}_error']))}")
    if flip.get("diff"):
        wrap = {"delete": "~~", "insert": "**"}
        words = []
        for op, ws in _runs(_diff_words(flip["diff"])):
            text = " ".join(md.escape(w) for w in ws)
            words.append(f"{wrap[op]}{text}{wrap[op]}" if op in wrap else text)
        lines.append(f"  - output{_epoch(flip)}: " + " ".join(words))
    for name, b, c, rb, rc in _judges(flip):
        said = f": {md.escape(rb)} → {md.escape(rc)}" if rb != "—" or rc != "—" else ""
        lines.append(f"  - {md.escape(name)} {b} → {c}{said}")
    return lines


# ------------------------------------------------------------------------------- HTML

# The flips table's filter (compare.html.j2): the only script a page runs, allowed by its hash in
# the page's Content-Security-Policy, so an injected one would still be refused.
FLIPS_SCRIPT = """
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("form.flip-filter").forEach(function (form) {
    var table = document.getElementById(form.getAttribute("data-table"));
    function apply() {
      var text = form.elements["text"].value.toLowerCase();
      var kind = form.elements["kind"].value, way = form.elements["way"].value;
      var shown = 0;
      table.querySelectorAll("tbody tr").forEach(function (row) {
        var show = (!kind || row.getAttribute("data-kind") === kind) &&
          (!way || row.getAttribute("data-way") === way) &&
          (!text || row.textContent.toLowerCase().indexOf(text) >= 0);
        row.hidden = !show;
        if (show) { shown += 1; }
      });
      form.querySelector("output").textContent = shown + " shown";
    }
    form.addEventListener("input", apply);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    apply();
  });
});
"""


def script_hash(script: str = FLIPS_SCRIPT) -> str:
    """The CSP source that allows exactly `script`: 'sha256-…' of its text."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def flips_page_context(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a comparison page needs to show its flips (`_flips.html.j2`): the flips by
    candidate, and — only when some pair lists a flip — the filter script and its CSP hash."""
    flips = {str(f.get("treatment")): f for f in report.get("flips") or []}
    if not any(f.get("regressions") or f.get("improvements") for f in flips.values()):
        return {"flips": flips}
    return {"flips": flips, "script": FLIPS_SCRIPT, "script_hash": script_hash()}
