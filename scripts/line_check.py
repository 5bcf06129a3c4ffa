#!/usr/bin/env python3
"""Counts two flaws in a transcript's character lines, as printed by `dramatis run`,
`watch` or `advance`-then-`watch --no-follow` with --no-color: lines that start with
punctuation, and lines that stop without a sentence's closing mark (cut off at the
token limit). Reads the transcript on stdin; the speakers are the names given as
arguments (as they appear before the colon)."""
import re
import sys

OPENERS = "'\"(*[\u2018\u201c"
CLOSERS = "'\")*]\u2019\u201d"
TERMINATORS = ".!?\u2026"

names = sys.argv[1:]
if not names:
    sys.exit("usage: line_check.py NAME [NAME ...] < transcript")
speaker = re.compile(r"^(%s)(?: \(to [^)]*\))?: (.*)$" % "|".join(map(re.escape, names)))
lines = punct = cut = 0
for raw in sys.stdin:
    m = speaker.match(raw.rstrip("\n"))
    if not m:
        continue
    text = re.sub(r" \(to [^)]*\)$", "", m.group(2)).strip()
    lines += 1
    if text and not (text[0].isalnum() or text[0] in OPENERS):
        punct += 1
        print(f"starts with punctuation: {text}", file=sys.stderr)
    if not text.rstrip(CLOSERS).endswith(tuple(TERMINATORS)):
        cut += 1
        print(f"no closing mark: {text}", file=sys.stderr)
print(f"{lines} lines, {punct} start with punctuation, {cut} end without a closing mark")
