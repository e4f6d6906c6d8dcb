"""Robustness scores of stored runs on an HTML page."""

from __future__ import annotations

from typing import Any

from calipers.schemes.robustness.terminal import band


def robustness_section(report: dict[str, Any]) -> dict[str, Any]:
    """robustness scores of stored runs: the signals with bands, per type, per case."""
    bands = {
        name: {
            signal: band(r[signal], signal, (r.get("intervals") or {}).get(signal))
            if r.get(signal) is not None
            else None
            for signal in ("invariance", "sensitivity")
        }
        for name, r in report["runs"].items()
    }
    return {"kind": "robustness", "report": report, "plots": {}, "bands": bands}
