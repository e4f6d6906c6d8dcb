"""The worked example of docs/judges.md, "Calibrating judges against human labels (PPI++)":
a lenient 1–5 judge corrected by 60 human labels, a pass/fail judge (with the Rogan–Gladen
cross-check), and a paired difference the judge overstates — printed by the code.

    python docs/examples/ppi_example.py           # prints the doc's output, from the code
    python docs/examples/ppi_example.py --write   # rewrites the block in docs/judges.md

tests/test_docs_ppi.py checks that the doc shows exactly what this prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

DOC = Path(__file__).parent.parent / "judges.md"
BEGIN, END = "<!-- ppi-example:begin -->\n", "<!-- ppi-example:end -->"
N, LABELLED = 1000, 60


def simulated() -> dict[str, Any]:
    """1,000 answers with people's 1–5 scores (all known: it is a simulation), a judge that is
    lenient (+1) and noisy, a pass/fail judge, a second run the judge favours, 60 labels."""
    import numpy as np

    rng = np.random.default_rng(1)
    levels = np.arange(1.0, 6.0)
    people = rng.choice(levels, N, p=[0.05, 0.10, 0.20, 0.35, 0.30])
    judge = np.clip(np.round(people + 1.0 + 0.8 * rng.standard_normal(N)), 1, 5)
    passed = (people >= 4).astype(float)  # people's pass/fail: a score of 4 or 5
    noise = rng.random(N)
    judge_pass = np.where(passed == 1, noise < 0.95, noise >= 0.7).astype(float)  # lenient too
    better = np.minimum(5.0, people + (rng.random(N) < 0.3))  # run B: 30% of answers one better
    judge_b = np.clip(np.round(better + 1.5 + 0.8 * rng.standard_normal(N)), 1, 5)  # B's style
    labelled = np.zeros(N, dtype=bool)
    labelled[rng.choice(N, LABELLED, replace=False)] = True
    return {"people": people, "judge": judge, "passed": passed, "judge_pass": judge_pass,
            "better": better, "judge_b": judge_b, "labelled": labelled}  # fmt: skip


def _line(name: str, estimate: float, low: float, high: float) -> str:
    return f"  {name:<34} {estimate:6.3f}   [{low:.3f}, {high:.3f}]   {high - low:.3f}"


def render() -> str:
    import numpy as np

    from calipers.stats.estimate import mean_interval, paired_interval
    from calipers.stats.ppi import ppi_mean, ppi_paired_difference
    from calipers.stats.rogan_gladen import corrected_proportion

    d = simulated()
    lab = d["labelled"]

    def hide(x: Any) -> Any:
        return np.where(lab, x, np.nan)

    head = f"  {'':<34} {'mean':>6}   {'95% interval':<16} width"
    out = [f"A: {N} answers, every one scored 1–5 by the judge, {LABELLED} also by people", head]
    alone = mean_interval(d["judge"], bounds=(1.0, 5.0))  # a 1–5 judge scale
    out.append(_line("judge alone (uncorrected)", alone.estimate, alone.low, alone.high))
    r = ppi_mean(d["judge"], hide(d["people"]))
    h = r.human_only
    assert h is not None
    out.append(_line(f"people alone ({LABELLED} labels)", h.estimate, h.low, h.high))
    out.append(_line("PPI++: judge corrected by people", r.estimate, r.low, r.high))
    out.append(f"  people's mean over all {N} (known: simulated)  {d['people'].mean():.3f}")
    out.append(
        f"  λ = {r.lam:.3f} ({r.lam_method}), judge bias {r.judge_bias:+.3f}, "
        f"effective labels {r.effective_labels:.0f} (×{r.gain:.2f}), shown: {r.source}"
    )

    out += [
        "",
        "A, pass/fail: the judge passes 95% of people's passes and 30% of their fails",
        head,
    ]
    alone = mean_interval(d["judge_pass"])
    out.append(_line("judge alone (uncorrected)", alone.estimate, alone.low, alone.high))
    b = ppi_mean(d["judge_pass"], hide(d["passed"]))
    h = b.human_only
    assert h is not None
    out.append(_line(f"people alone ({LABELLED} labels)", h.estimate, h.low, h.high))
    out.append(_line("PPI++ stratified (shown)", b.estimate, b.low, b.high))
    rg = corrected_proportion(d["judge_pass"], hide(d["passed"]))
    out.append(_line("Rogan–Gladen (cross-check)", rg.estimate, rg.low, rg.high))
    out.append(f"  people's pass rate over all {N} (known: simulated)  {d['passed'].mean():.3f}")
    out.append(
        f"  sensitivity {rg.sensitivity:.3f}, specificity {rg.specificity:.3f} on the labels; "
        f"effective labels {b.effective_labels:.0f} (×{b.gain:.2f})"
    )

    out += ["", "B − A on the same answers: B is better, and its style flatters the judge", head]
    alone = paired_interval(d["judge"], d["judge_b"], bounds=(1.0, 5.0))
    out.append(_line("judge alone (uncorrected)", alone.estimate, alone.low, alone.high))
    p = ppi_paired_difference(d["judge"], d["judge_b"], hide(d["people"]), hide(d["better"]))
    h = p.human_only
    assert h is not None
    out.append(_line(f"people alone ({LABELLED} pairs)", h.estimate, h.low, h.high))
    out.append(_line(f"PPI++ ({p.source} shown)", p.estimate, p.low, p.high))
    true_gain = float((d["better"] - d["people"]).mean())
    out.append(f"  people's mean difference over all {N} (known: simulated)  {true_gain:.3f}")
    out.append(
        f"  λ = {p.lam:.3f}, effective labels {p.effective_labels:.0f} (×{p.gain:.2f}), "
        f"judge too weak: {'yes' if p.judge_too_weak else 'no'}"
    )
    out += [f"  note: {note}" for note in p.notes]
    return "```text\n" + "\n".join(line.rstrip() for line in out) + "\n```\n"


def write() -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    DOC.write_text(head + BEGIN + render() + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(render(), end="")
