#!/usr/bin/env python3
"""The rooms of src/pg and the arrows between them, as doc/design.md draws them.

Each folder of src/pg is a room. The files at its top level are two more: module.cpp, which wires
the rooms together, and the base (everything else there), which every room may use. A room learns
of another only along an arrow that doc/design.md draws in its "Rooms and arrows" block:

- every call between two rooms (read from the object files' symbols with nm: which file defines
  what another file uses) follows a drawn arrow, or goes into the base, or comes from module.cpp;
- every arrow drawn is used by some call, so the drawing cannot go stale;
- the arrows form no circle;
- a room with a door (ROOM/ROOM.hpp) is entered through it: no other room includes another of its
  headers, and includes follow the arrows as calls do;
- the raw steps of the mark (doc/design.md "One write, one raise") are called from the mark's room
  alone, and ids are issued from generation alone, whatever the spelling of the call.

Calls through a function pointer, or by a name in a string (a background worker's entry point),
leave no symbol and are not seen; module.cpp wires those. Run by `make boundarycheck` after the
build: python3 test/rooms_check.py SOURCE_DIR.
"""
import collections
import os
import re
import subprocess
import sys

BLOCK_START = "<!-- rooms: checked by test/rooms_check.py -->"

# Symbols only one room may use: the raw steps of the mark, and the core's decision of an id,
# which every issue of an id (next_id(), a template) calls.
RESTRICTED = {
    "snowflake::raise_floor(": "mark",
    "snowflake::format_mark_file(": "mark",
    "snowflake::decide(": "generation",
}


def room_of(path):
    """The room of a source or object path relative to src/pg."""
    parts = path.split("/")
    if len(parts) == 1:
        return "module" if parts[0].startswith("module.") else "base"
    return parts[0]


def drawn_arrows(design_text):
    """The arrows of the block in doc/design.md, as (from, to) pairs."""
    start = design_text.find(BLOCK_START)
    if start < 0:
        sys.exit(f"doc/design.md has no block after {BLOCK_START}")
    fence = design_text.index("```", start)
    end = design_text.index("```", fence + 3)
    arrows = set()
    for line in design_text[fence + 3:end].splitlines():
        line = line.strip()
        if not line or line == "text":
            continue
        match = re.fullmatch(r"([a-z_]+) -> ([a-z_, ]+)", line)
        if not match:
            sys.exit(f"doc/design.md: the rooms block has a line it cannot read: {line!r}")
        for target in match.group(2).split(","):
            arrows.add((match.group(1), target.strip()))
    return arrows


def symbols(obj, flags):
    """nm's symbols of an object file with the given flags, demangled."""
    out = subprocess.run(["nm", "-C", *flags, obj], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"nm could not read {obj}: {out.stderr.strip()}")
    return out.stdout.splitlines()


def call_edges(pg_dir, problems):
    """(from room, to room) -> example 'file -> file: symbol' for every call between rooms; a
    symbol defined twice, or one only another room may use, goes into problems."""
    # The objects of today's sources only: an object left by a source since moved is no call.
    objects = []
    for root, _, files in os.walk(pg_dir):
        objects += [os.path.join(root, f[:-4] + ".o") for f in files if f.endswith(".cpp")]
    missing = [obj for obj in objects if not os.path.exists(obj)]
    if missing:
        sys.exit(f"{missing[0]} is not built: build first")
    defined = {}
    for obj in objects:
        for line in symbols(obj, ["--defined-only", "-g"]):
            address_type_name = line.split(" ", 2)
            # Strong definitions only: inline functions are weak in every object that uses them.
            if len(address_type_name) == 3 and address_type_name[1] in "TDBR":
                name = address_type_name[2]
                here = os.path.relpath(obj, pg_dir)
                if name in defined:
                    problems.append(f"{name} is defined in {defined[name]} and {here}")
                defined[name] = here
    edges = {}
    for obj in objects:
        user = os.path.relpath(obj, pg_dir)
        for line in symbols(obj, ["-u"]):
            name = line.strip().split(" ", 1)[-1]
            for prefix, room in RESTRICTED.items():
                if name.startswith(prefix) and room_of(user) != room:
                    problems.append(f"{user[:-2]} calls {name}, which only {room}/ may call")
            owner = defined.get(name)
            if owner and room_of(owner) != room_of(user):
                edges.setdefault((room_of(user), room_of(owner)),
                                 f"{user[:-2]} -> {owner[:-2]}: {name}")
    return edges


def include_edges(pg_dir):
    """(from room, to room, header, including file) for every include of another room's header,
    however it is spelt: from src/ ("pg/mark/mark.hpp") or from the including file's folder."""
    src_dir = os.path.dirname(pg_dir)
    found = []
    for root, _, files in os.walk(pg_dir):
        for name in files:
            if not name.endswith((".cpp", ".hpp")):
                continue
            path = os.path.join(root, name)
            source = os.path.relpath(path, pg_dir)
            with open(path, encoding="utf-8") as f:
                for spelt in re.findall(r'^\s*#\s*include\s*"([^"]+)"', f.read(), re.M):
                    target = os.path.normpath(os.path.join(src_dir, spelt))
                    if not os.path.exists(target):
                        target = os.path.normpath(os.path.join(root, spelt))
                    # PostgreSQL's own headers are in neither place.
                    if not os.path.exists(target):
                        continue
                    header = os.path.relpath(target, pg_dir)
                    if header.startswith("..") or "/" not in header:
                        continue
                    if room_of(header) != room_of(source):
                        found.append((room_of(source), room_of(header), header, source))
    return found


def has_circle(arrows):
    """Whether the arrows, read as a graph, hold a circle."""
    graph = collections.defaultdict(set)
    for source, target in arrows:
        graph[source].add(target)
    state = {}

    def visit(node):
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open" or (nxt not in state and visit(nxt)):
                return True
        state[node] = "done"
        return False

    return any(node not in state and visit(node) for node in list(graph))


def main():
    source_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    pg_dir = os.path.join(source_dir, "src", "pg")
    with open(os.path.join(source_dir, "doc", "design.md"), encoding="utf-8") as f:
        arrows = drawn_arrows(f.read())
    problems = []
    if has_circle(arrows):
        problems.append("doc/design.md draws a circle of arrows")
    for source, target in sorted(arrows):
        if "module" in (source, target) or "base" in (source, target):
            problems.append(f"doc/design.md draws {source} -> {target}: module.cpp and the base "
                            "are implied, not drawn")
    calls = call_edges(pg_dir, problems)
    for (source, target), example in sorted(calls.items()):
        if source == "module" or target == "base":
            continue
        if target == "module" or source == "base" or (source, target) not in arrows:
            problems.append(f"a call {source} -> {target} that doc/design.md does not draw "
                            f"({example})")
    for arrow in sorted(arrows - set(calls)):
        problems.append(f"doc/design.md draws {arrow[0]} -> {arrow[1]}, which no call uses")
    for source, target, header, including in include_edges(pg_dir):
        door = f"{target}/{target}.hpp"
        if source != "module" and (source, target) not in arrows:
            problems.append(f"{including} includes {header} against the arrows")
        elif os.path.exists(os.path.join(pg_dir, door)) and header != door:
            problems.append(f"{including} includes {header}, not the door {door}")
    for problem in problems:
        print(problem)
    if problems:
        print("src/pg: the rooms do not match doc/design.md \"Rooms and arrows\"")
        return 1
    rooms = sorted(name for name in os.listdir(pg_dir)
                   if os.path.isdir(os.path.join(pg_dir, name)))
    print(f"src/pg: {len(rooms)} rooms ({', '.join(rooms)}), module.cpp and the base; "
          f"{len(arrows)} arrows, no circle, as doc/design.md draws them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
