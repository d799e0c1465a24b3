#!/usr/bin/env python3
"""Checks that what the docs cite exists (CONTRIBUTING.md, doc/testing.md "docs"): every test they
name by its description, in a test file or by an SQL test's words; every file and folder of the
tree; every SQL object, C function and setting named snowflake_ or snowflake.; and every SQLSTATE,
against PostgreSQL's errcodes.h. Also that doc/reference.md's list of STABLE functions is the
scripts' own, and that no line outside code is longer than 400 characters. Prints each problem
and exits non-zero if there is one. Usage: doc_citations.py SOURCE_DIR ERRCODES_H"""
import glob
import os
import re
import sys

DOCS = ["README.md", "CHANGELOG.md", "CONTRIBUTING.md"] + sorted(
    os.path.relpath(p, sys.argv[1]) for p in glob.glob(os.path.join(sys.argv[1], "doc", "*.md")))
TEST_GLOBS = ["test/t/*.pl", "sql/*.sql", "test/isolation/specs/*.spec", "test/*.sql",
              "test/clients/*/*", "test/core_regress/*", "test/bench/*.pl"]
problems = []


def read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def prose(text):
    """The text outside code blocks, each paragraph or list item on one line."""
    outside = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"\n[ \t]+", " ", outside)


def description_pattern(literal):
    """A test's description as a pattern: Perl's interpolated variables match any text."""
    parts = re.split(r"(\$\{?\w+\}?(?:->\{\w+\}|\[\d+\])*|@\{\[.*?\]\})", literal)
    return "".join(".+" if index % 2 else re.escape(part) for index, part in enumerate(parts))


def test_texts(root):
    """Each test file's text, and the descriptions its Perl string literals give."""
    texts = {}
    for pattern in TEST_GLOBS:
        for path in glob.glob(os.path.join(root, pattern)):
            if os.path.isfile(path):
                texts[os.path.basename(path)] = read(path)
    patterns = {}
    for name, text in list(texts.items()):
        if name.endswith(".pl"):
            # Comments are no test's name.
            code = re.sub(r"^\s*#.*$", "", text, flags=re.M)
            literals = [a.replace("\\'", "'") if a else b.replace('\\"', '"')
                        for a, b in re.findall(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"",
                                               code, re.S) if a or b]
            # A description built from variables matches with any text in their places, if it
            # has words of its own. Double-quoted strings of one line are taken on their own too:
            # a quote inside a pattern (qr/.../) can pair the literals above wrongly.
            literals += re.findall(r"\"([^\"\n]*\$[^\"\n]*)\"", code)
            patterns[name] = [re.compile(description_pattern(literal), re.S)
                              for literal in literals if "$" in literal and len(
                                  re.sub(r"\$\{?\w+\}?", "", literal)) >= 12]
            # The whole text too, its escaped quotes read as quotes: a description may sit
            # beside a pattern whose quotes the literals above pair wrongly.
            texts[name] = code.replace("\\'", "'").replace('\\"', '"') + "\n".join(literals)
        else:
            # An SQL test's comments read as one text across their lines.
            texts[name] = re.sub(r"\n\s*(--|#)\s*", " ", text)
    return texts, patterns


def cited_in(quoted, name, texts, patterns):
    """Whether a quoted test name is in the named test file (or any, when name is None)."""
    names = [name] if name else list(texts)
    for candidate in names:
        if candidate not in texts:
            continue
        if quoted in texts[candidate]:
            return True
        if any(p.fullmatch(quoted) for p in patterns.get(candidate, [])):
            return True
    return False


def check_tests(doc, text, texts, patterns):
    for file_name, quotes in re.findall(
            r"`(?:test/t/|sql/|test/isolation/specs/)?(\d{3}_\w+\.pl|\w+\.sql|\w+\.spec)`"
            r"\s*\((\"[^\"]+\"(?:,\s*\"[^\"]+\")*)\)", text):
        if file_name not in texts:
            problems.append(f"{doc}: cites a test file that does not exist: {file_name}")
            continue
        for quoted in re.findall(r"\"([^\"]+)\"", quotes):
            if not cited_in(quoted, file_name, texts, patterns):
                problems.append(f"{doc}: {file_name} has no test \"{quoted}\"")
    for quoted, _table in re.findall(r"\"([^\"]+)\" \(`(\w+)`\)", text):
        if not cited_in(quoted, None, texts, patterns):
            problems.append(f"{doc}: no test has the words \"{quoted}\"")


def check_paths(doc, text, root):
    for token in set(re.findall(r"`([^`\s]+)`", text)):
        path = token.rstrip("/,.:")
        if path.startswith(("$", "/", "../", "~", "http")) or "=" in path or re.search(r"[A-Z]", path):
            continue
        # PostgreSQL's own tree (src/backend, src/include, src/test) is not this one.
        if path.startswith(("src/backend/", "src/include/", "src/test/")):
            continue
        if "/" in path and re.fullmatch(r"[\w./*-]+", path) and path.split("/")[0] in (
                "src", "test", "doc", "sql", "expected", "debian", ".ci"):
            if not glob.glob(os.path.join(root, path)) and not glob.glob(
                    os.path.join(root, path + "*")):
                problems.append(f"{doc}: cites a path that does not exist: {token}")
        elif re.fullmatch(r"[\w-]+\.(cpp|hpp|pl|sql|spec|py|pm|\*)", path):
            if not glob.glob(os.path.join(root, "**", path), recursive=True):
                problems.append(f"{doc}: cites a file that does not exist: {token}")


def check_names(doc, text, sources, settings):
    for name in set(re.findall(r"`(snowflake_\w+)", text)):
        if not re.search(rf"\b{name}\b", sources):
            problems.append(f"{doc}: cites {name}, which no script or source defines")
    for name in set(re.findall(r"\b(snowflake\.[a-z_]+)\b", text)):
        if name not in settings and name not in ("snowflake.control", "snowflake.conf",
                                                 "snowflake.so"):
            problems.append(f"{doc}: cites the setting {name}, which the library does not define")


def check_sqlstates(doc, text, sqlstates):
    for code in set(re.findall(r"`([0-9A-Z]{5})`", text)):
        if re.search(r"\d", code) and code not in sqlstates:
            problems.append(f"{doc}: cites SQLSTATE {code}, which PostgreSQL does not have")
    for code in set(re.findall(r"`([0-9A-Z]{5})[ :][^`]*`", text)):
        if re.search(r"\d", code) and code not in sqlstates:
            problems.append(f"{doc}: cites SQLSTATE {code}, which PostgreSQL does not have")


def check_long_lines(doc, raw):
    """A line over 400 characters outside code reads badly in every viewer and diff."""
    in_code = False
    for number, line in enumerate(raw.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and len(line) > 400:
            problems.append(f"{doc}:{number}: a line of {len(line)} characters; the limit is 400")


def script_order(path):
    """Scripts in the order CREATE EXTENSION runs them: 1.0, then each update by its target."""
    versions = re.findall(r"(\d+)\.(\d+)", os.path.basename(path))
    return tuple(int(part) for part in versions[-1])


def statement_at(text, start):
    """The SQL statement from start to its semicolon, with dollar-quoted bodies left out."""
    out, i = [], start
    dollar = re.compile(r"\$\w*\$")
    while i < len(text):
        quote = dollar.match(text, i)
        if quote:
            end = text.find(quote.group(0), i + len(quote.group(0)))
            i = end + len(quote.group(0)) if end >= 0 else len(text)
            continue
        if text[i] == ";":
            break
        out.append(text[i])
        i += 1
    return "".join(out)


def stable_functions(root):
    """The functions whose last CREATE or ALTER in the scripts makes them STABLE."""
    volatility = {}
    for path in sorted(glob.glob(os.path.join(root, "src", "sql", "snowflake--*.sql")),
                       key=script_order):
        text = re.sub(r"--[^\n]*", "", read(path))
        for match in re.finditer(r"\b(CREATE(?:\s+OR\s+REPLACE)?|ALTER|DROP)\s+FUNCTION\s+"
                                 r"(?:IF\s+EXISTS\s+)?(snowflake_\w+)", text, re.I):
            statement = statement_at(text, match.start())
            name = match.group(2)
            if match.group(1).upper() == "DROP":
                volatility.pop(name, None)
                continue
            found = re.search(r"\b(IMMUTABLE|STABLE|VOLATILE)\b", statement, re.I)
            if found or not match.group(1).upper().startswith("ALTER"):
                volatility[name] = (found.group(1) if found else "VOLATILE").upper()
    return {name for name, kind in volatility.items() if kind == "STABLE"}


def script_functions(root):
    """Every function the scripts create and do not drop again."""
    names = set()
    for path in sorted(glob.glob(os.path.join(root, "src", "sql", "snowflake--*.sql")),
                       key=script_order):
        text = re.sub(r"--[^\n]*", "", read(path))
        for verb, name in re.findall(r"\b(CREATE(?:\s+OR\s+REPLACE)?|DROP)\s+FUNCTION\s+"
                                     r"(?:IF\s+EXISTS\s+)?(snowflake_\w+)", text, re.I):
            if verb.upper() == "DROP":
                names.discard(name)
            else:
                names.add(name)
    return names


def check_reference_names_every_function(root):
    """A function of the scripts that doc/reference.md never names has no documentation."""
    text = read(os.path.join(root, "doc", "reference.md"))
    for name in sorted(script_functions(root)):
        if not re.search(rf"\b{name}\(", text):
            problems.append(f"doc/reference.md: names nowhere {name}(), which the scripts create")


def check_stable_list(root):
    """doc/reference.md's bullet of STABLE functions names exactly the scripts' STABLE ones."""
    text = prose(read(os.path.join(root, "doc", "reference.md")))
    bullet = re.search(r"^- `STABLE`: (.*)$", text, re.M)
    if not bullet:
        problems.append("doc/reference.md: no bullet lists the STABLE functions")
        return
    listed = set(re.findall(r"`(snowflake_\w+)\(\)`", bullet.group(1)))
    stable = stable_functions(root)
    for name in sorted(stable - listed):
        problems.append(f"doc/reference.md: the STABLE bullet leaves out {name}, which is STABLE")
    for name in sorted(listed - stable):
        problems.append(f"doc/reference.md: the STABLE bullet names {name}, which is not STABLE")


def main():
    root, errcodes = sys.argv[1], sys.argv[2]
    sqlstates = {"".join(chars) for chars in re.findall(
        r"MAKE_SQLSTATE\('(.)','(.)','(.)','(.)','(.)'\)", read(errcodes))}
    sources = "\n".join(read(p) for pattern in ("src/**/*.sql", "src/**/*.cpp", "src/**/*.hpp")
                        for p in glob.glob(os.path.join(root, pattern), recursive=True))
    settings = set(re.findall(r"\"(snowflake\.[a-z_]+)\"", sources))
    texts, patterns = test_texts(root)
    for doc in DOCS:
        path = os.path.join(root, doc)
        if not os.path.exists(path):
            problems.append(f"{doc} is missing")
            continue
        check_long_lines(doc, read(path))
        text = prose(read(path))
        check_tests(doc, text, texts, patterns)
        check_paths(doc, text, root)
        check_names(doc, text, sources, settings)
        check_sqlstates(doc, text, sqlstates)
    check_stable_list(root)
    check_reference_names_every_function(root)
    for problem in sorted(set(problems)):
        print(problem)
    print(f"doc citations: {len(set(problems))} problems in {len(DOCS)} files (citations of nothing, "
          "long lines, the reference's function lists)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
