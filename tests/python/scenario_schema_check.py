"""The JSON Schema in scenarios/ agrees with the loader: every shipped scenario
validates, and the structurally broken test files (wrong version, wrong types, unknown
or missing fields) fail it. Cross-reference problems are the loader's job, not the
schema's. Run by scripts/test.sh."""

import json
import os
import sys
import tomllib

import jsonschema

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMA = json.load(open(os.path.join(ROOT, "scenarios", "scenario.schema.json")))
BROKEN = os.path.join(ROOT, "crates", "scenario", "tests", "broken")
STRUCTURAL = ["wrong-version.toml", "type-error.toml", "unknown-field.toml", "missing-field.toml"]


def errors(path):
    with open(path, "rb") as f:
        document = tomllib.load(f)
    return list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(document))


def main():
    passed = failed = 0
    base = os.path.join(ROOT, "scenarios")
    shipped = sorted(
        [os.path.join(base, f) for f in os.listdir(base) if f.endswith(".toml")]
        + [os.path.join(base, d, "scenario.toml") for d in os.listdir(base) if os.path.isfile(os.path.join(base, d, "scenario.toml"))]
    )
    for path in shipped:
        problems = errors(path)
        ok = not problems
        print(("ok  " if ok else "FAIL") + f" {os.path.relpath(path, base)} validates", *[p.message for p in problems])
        passed, failed = passed + ok, failed + (not ok)
    for name in STRUCTURAL:
        ok = bool(errors(os.path.join(BROKEN, name)))
        print(("ok  " if ok else "FAIL") + f" {name} is rejected by the schema")
        passed, failed = passed + ok, failed + (not ok)
    print(f"schema: {passed} passed, {failed} failed")
    sys.exit(1 if failed or not shipped else 0)


if __name__ == "__main__":
    main()
