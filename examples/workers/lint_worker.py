#!/usr/bin/env python3
"""A reference persistent worker for hooks-command (`{"type": "worker", "command": ...}`).

The protocol, one JSON object per line:
  request  (stdin):  {"id": 7, "event": {...the hook event, as a command gets it on stdin...}}
  response (stdout): {"id": 7, "exit": 0, "output": {...}}     go on (output as a command prints it)
                     {"id": 7, "exit": 2, "stderr": "reason"}  block, with the reason the model sees

This one lints what a `Write` tool wrote (PostToolUse): trailing whitespace, tabs and lines
over 100 characters are sent back to the model as a block reason; clean text gets a short
note as additional context. Every other event goes on. It stays up between events, so a
hook costs a JSON line instead of a Python start-up.
"""
import json
import sys


def lint(text):
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        if line != line.rstrip():
            problems.append(f"line {n}: trailing whitespace")
        if "\t" in line:
            problems.append(f"line {n}: tab character")
        if len(line) > 100:
            problems.append(f"line {n}: {len(line)} characters (over 100)")
    return problems


def answer(request):
    event = request.get("event", {})
    if event.get("hook_event_name") != "PostToolUse" or event.get("tool_name") != "Write":
        return {"exit": 0}
    args = event.get("tool_input") or {}
    text = args.get("content") or args.get("text") or ""
    problems = lint(text)
    if problems:
        return {"exit": 2, "stderr": "lint: " + "; ".join(problems[:10])}
    return {"exit": 0, "output": {"hookSpecificOutput": {"additionalContext": "lint: clean"}}}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        reply = answer(request)
        reply["id"] = request.get("id")
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
