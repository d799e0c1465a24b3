#!/usr/bin/env python3
"""Compares two runs of PostgreSQL's core regression suite (test/core_regress/run): the plain one
and the one with the extension. A test whose output differs fails the comparison, unless every
line that differs is one the allowed differences file permits for that test. Lines are compared
with their runs of spaces collapsed, since a listing that gains a longer name pads every row."""

import difflib
import re
import sys

# psql's frame of a result, which changes with the rows listed: the line under the header and
# the row count.
FRAME = re.compile(r"^[-+]+$|^\(\d+ rows?\)$")


def read_allowed(path):
    """The allowed lines per test: 'test<TAB>pattern<TAB>reason' lines, # comments."""
    allowed = {}
    with open(path, encoding="utf-8") as listing:
        for number, line in enumerate(listing, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 3 or not all(fields):
                sys.exit(f"{path}:{number}: expected test, pattern and reason, tab-separated")
            allowed.setdefault(fields[0], []).append(re.compile(fields[1]))
    return allowed


def failed_tests(run):
    """The tests pg_regress marked as failed in its summary of a run (its standard output)."""
    with open(f"{run}/summary", encoding="utf-8") as summary:
        return {m.group(1) for m in
                (re.match(r"^not ok\s+\d+\s+[-+]\s+(\S+)", line) for line in summary) if m}


def output_lines(run, test):
    """A test's output, with runs of spaces collapsed; empty when it did not run."""
    try:
        with open(f"{run}/results/{test}.out", encoding="utf-8", errors="replace") as output:
            return [" ".join(line.split()) for line in output]
    except FileNotFoundError:
        return []


def main():
    plain, extension, allowed_path = sys.argv[1:4]
    allowed = read_allowed(allowed_path)
    plain_failed = failed_tests(plain)
    if plain_failed:
        print("failed without the extension too (the comparison still holds them to the plain "
              "run's output): " + ", ".join(sorted(plain_failed)))
    differing = 0
    for test in sorted(failed_tests(extension) | plain_failed):
        diff = [line for line in difflib.unified_diff(output_lines(plain, test),
                                                        output_lines(extension, test),
                                                        lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        patterns = allowed.get(test, [])
        unexplained = [line for line in diff
                       if not (patterns and FRAME.match(line[1:]))
                       and not any(p.search(line[1:]) for p in patterns)]
        if not diff:
            continue
        if unexplained:
            differing += 1
            print(f"{test}: differs from the plain run")
            print("\n".join(f"  {line}" for line in unexplained[:40]))
        else:
            print(f"{test}: differs only as test/core_regress/allowed_differences allows")
    if differing:
        print(f"{differing} test(s) of the core suite differ with the extension")
        return 1
    print("the core suite's output is the same with the extension, but for the allowed lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
