"""The demo's judge: deterministic and offline, in the command-judge protocol (the prompt on
stdin, JSON on stdout). It scores the answer 1–5 by how many of the expected answer's content
words it contains: a stand-in for an LLM judge, so that the demo needs no network or key."""

import json
import re
import sys

STOP = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "is",
    "are",
    "be",
    "it",
    "your",
    "then",
    "by",
    "for",
    "with",
    "one",
    "each",
    "you",
    "before",
    "but",
    "not",
    "yes",
}


def tagged(prompt: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", prompt, re.DOTALL)
    return found.group(1) if found else ""


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP}


prompt = sys.stdin.read()
expected, answer = words(tagged(prompt, "expected")), words(tagged(prompt, "answer"))
recall = len(expected & answer) / len(expected) if expected else 0.0
score = 1 + round(4 * recall)
print(json.dumps({"score": score, "rationale": f"{recall:.0%} of the expected content words"}))
