"""The demo's example pipeline: Orbit's support assistant, in two versions.

    python assistant.py --version v1|v2 INPUT OUTPUT

v1 answers from a short list of canned replies matched by keyword; v2 searches the whole
knowledge base (reported as a `kb_search` tool call) and answers with the best match. Both are
deterministic and report telemetry in calipers' contract (docs/running.md). v2 answers better
and costs more: its prompt carries the retrieved article.
"""

import json
import sys

KNOWLEDGE = {
    "unlock": ("unlock scan start bike", "Scan the QR code on the handlebar with the Orbit app."),
    "price": (
        "cost price much ride pay",
        "A ride costs 1 euro to unlock, then 15 cents per minute.",
    ),
    "pass": (
        "monthly pass subscription",
        "The Orbit Pass costs 19 euros a month and includes 45 minutes per ride.",
    ),
    "lost": (
        "left lost phone forgot basket",
        "Report it in the app under Help > Lost items; found items are kept for 30 days.",
    ),
    "damage": (
        "flat tyre broken report damage",
        "End the ride, then tap Report a problem in the app; the ride is refunded.",
    ),
    "parking": (
        "leave park end where",
        "Leave the bike inside a blue parking zone shown on the "
        "map; outside one a 5 euro fee applies.",
    ),
    "age": ("old son daughter age child", "Riders must be at least 16 years old."),
    "refund": (
        "charged twice money back refund",
        "Duplicate charges are refunded within 5 working days; write to billing@orbit.example.",
    ),
    "night": (
        "night available hours",
        "Bikes are available 24 hours a day; e-bikes pause from 1 am to 5 am.",
    ),
    "helmet": ("helmet", "Helmets are recommended but not required by law in the city."),
    "battery": ("far charge battery range", "An e-bike goes about 60 km on one charge."),
    "account": (
        "delete account close",
        "Open Settings > Privacy > Delete account; your data is erased within 30 days.",
    ),
}
CANNED = {  # v1: a few replies by keyword, and a generic one otherwise
    "unlock": KNOWLEDGE["unlock"][1],
    "cost": KNOWLEDGE["price"][1],
    "pass": KNOWLEDGE["pass"][1],
    "helmet": KNOWLEDGE["helmet"][1],
    "night": "Bikes can be used at any time.",
}
GENERIC = "Thanks for your question! Please contact Orbit support through the app for help."


def search(question: str) -> str:
    words = set(question.lower().replace("?", " ").replace(",", " ").split())
    return max(KNOWLEDGE, key=lambda k: len(words & set(KNOWLEDGE[k][0].split())))


def answer(question: str, version: str) -> dict[str, object]:
    if version == "v1":
        text = next((t for k, t in CANNED.items() if k in question.lower()), GENERIC)
        return {
            "output": text,
            "tokens_in": 120 + len(question) // 4,
            "tokens_out": len(text) // 4,
            "cost_usd": 0.0002,
            "steps": 1,
        }
    article = search(question)
    text = KNOWLEDGE[article][1]
    return {
        "output": text,
        "tokens_in": 480 + len(question) // 4,
        "tokens_out": len(text) // 4,
        "cost_usd": 0.0007,
        "steps": 2,
        "tool_calls": 1,
        "tools": [{"name": "kb_search", "input": {"query": question}, "output": article}],
    }


def main() -> None:
    version, source, target = sys.argv[2], sys.argv[3], sys.argv[4]
    with open(source, encoding="utf-8") as fh:
        question = fh.read()
    with open(target, "w", encoding="utf-8") as fh:
        json.dump(answer(question, version), fh)


if __name__ == "__main__":
    main()
