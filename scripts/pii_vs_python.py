#!/usr/bin/env python3
"""Scan throughput of our PII detector against the Python original's, on the same text.

    python3 scripts/pii_vs_python.py

Builds the text the `guardrails/scan` bench scans (the dev set's texts with the labelled
values cut out, one value put back about every 2 KB, repeated to 4 MiB), times the Python
original's default PII patterns on it (`findall` of each, as its guardrails hook does: the
best of three), then `pii_scan --throughput` on the same file (built in release), and prints
both and the ratio. Needs only Python 3 and cargo.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEV_SET = os.path.join(ROOT, "crates", "hooks-guardrails", "tests", "data", "pii-dev.jsonl")

# The Python original's default `pii_patterns` (tulip-agents, GuardrailConfig).
ORIGINAL = {
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,}\b",
    "phone_us": r"\b\d{3}[-.]?\d{3}[-.]?\d{4}\b",
    "ssn": r"\b\d{3}-\d{2}-\d{4}\b",
    "credit_card": r"\b(?:\d{4}[-\s]?){3}\d{4}\b",
    "ip_address": r"\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b",
}


def corpus() -> bytes:
    """The bench's text (see `corpus()` in crates/hooks-guardrails/benches/guardrails.rs)."""
    clean, items = [], []
    with open(DEV_SET, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            text = rec["text"].encode()
            spans = sorted((s["start"], s["end"]) for s in rec.get("spans", []))
            kept, last = b"", 0
            for s, e in spans:
                kept += text[last:s]
                items.append(text[s:e])
                last = e
            clean.append(kept + text[last:])
    out, since, nxt = bytearray(), 0, 0
    while len(out) < 4 * 1024 * 1024 + 1:
        for c in clean:
            out += c + b"\n"
            since += len(c) + 1
            if since >= 2048:
                out += b" " + items[nxt % len(items)] + b" \n"
                nxt += 7
                since = 0
    return bytes(out)


def python_original(text: str) -> dict:
    patterns = [re.compile(p) for p in ORIGINAL.values()]
    best, found = float("inf"), 0
    for _ in range(3):
        t0 = time.perf_counter()
        found = sum(len(p.findall(text)) for p in patterns)
        best = min(best, time.perf_counter() - t0)
    size = len(text.encode())
    return {"bytes": size, "seconds": best, "mb_per_s": size / best / 1e6, "detections": found}


def ours(path: str) -> dict:
    cmd = ["cargo", "run", "--quiet", "--release", "-p", "hooks-guardrails",
           "--example", "pii_scan", "--", "--throughput", path]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    data = corpus()
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        rust = ours(path)
        py = python_original(data.decode("utf-8"))
    finally:
        os.unlink(path)
    print(json.dumps({"python_original": py, "hooks": rust,
                      "ratio": rust["mb_per_s"] / py["mb_per_s"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
