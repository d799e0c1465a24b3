"""Checks a release zip's META.json against the PGXN Meta Spec 1.0 (https://pgxn.org/meta/spec.txt:
the keys, their types, terms, SemVer versions, licences, prerequisites and resources) and against
the tree it ships in (the control file's version, the files it names, the zip's name), and that
the version's entries lead CHANGELOG.md and debian/changelog, the two files a new version edits
besides the control file and its update script (CONTRIBUTING.md "Cutting a version"). Prints each
problem and exits non-zero if there is one. Usage: meta_check.py snowflake-X.Y.Z.zip"""
import datetime
import json
import re
import sys
import zipfile

SEMVER = (r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
          r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
          r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?")
VERSION_RANGE = re.compile(rf"^(([=!]=|[<>]=?)\s*)?({SEMVER}|0)(,\s*(([=!]=|[<>]=?)\s*)?{SEMVER})*$")
LICENCES = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
            "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
            "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
            "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown"}
TOP_KEYS = {"name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
            "description", "generated_by", "tags", "no_index", "prereqs", "release_status",
            "resources"}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
problems = []


def problem(text):
    problems.append(text)


def custom(key):
    return re.match(r"^[xX]_.", key) is not None


def is_text(value):
    return isinstance(value, str) and len(value) > 0


def is_term(value):
    return isinstance(value, str) and re.fullmatch(r"[^/\\\s\x00-\x1f\x7f]{2,}", value) is not None


def is_semver(value):
    return isinstance(value, str) and re.fullmatch(SEMVER, value) is not None


def check_keys(where, mapping, allowed):
    for key in mapping:
        if key not in allowed and not custom(key):
            problem(f"{where}: unknown key {key}")


def check_object(where, value):
    if not isinstance(value, dict):
        problem(f"{where} is not an object")
        return False
    return True


def check_license(value):
    if isinstance(value, str):
        ok = value in LICENCES
    elif isinstance(value, list):
        ok = len(value) > 0 and all(item in LICENCES for item in value)
    elif isinstance(value, dict):
        ok = len(value) > 0 and all(is_text(uri) and re.match(r"^[a-z][a-z0-9+.-]*:", uri)
                                    for uri in value.values())
    else:
        ok = False
    if not ok:
        problem(f"license {value!r} is not a known licence, a list of them or names with URIs")


def check_provides(value, names):
    if not check_object("provides", value) or not value:
        problem("provides names no extension")
        return
    for extension, facts in value.items():
        where = f"provides.{extension}"
        if not is_term(extension):
            problem(f"{where}: the name is not a term")
        if not check_object(where, facts):
            continue
        check_keys(where, facts, {"file", "version", "abstract", "docfile", "docpath"})
        for key in ("file", "version"):
            if key not in facts:
                problem(f"{where}.{key} is missing")
        if "version" in facts and not is_semver(facts["version"]):
            problem(f"{where}.version {facts['version']!r} is not SemVer")
        for key in ("file", "docfile"):
            if key in facts and facts[key] not in names:
                problem(f"{where}.{key} {facts[key]} is not in the distribution")
        if "abstract" in facts and not is_text(facts["abstract"]):
            problem(f"{where}.abstract is empty")


def check_prereqs(value):
    if not check_object("prereqs", value):
        return
    check_keys("prereqs", value, {"configure", "build", "test", "runtime", "develop"})
    for phase, relations in value.items():
        if custom(phase) or not check_object(f"prereqs.{phase}", relations):
            continue
        check_keys(f"prereqs.{phase}", relations,
                   {"requires", "recommends", "suggests", "conflicts"})
        for relation, needs in relations.items():
            if custom(relation) or not check_object(f"prereqs.{phase}.{relation}", needs):
                continue
            for name, version in needs.items():
                if not is_term(name):
                    problem(f"prereqs.{phase}.{relation}: {name!r} is not a term")
                if version != 0 and not (isinstance(version, str) and
                                         VERSION_RANGE.match(version)):
                    problem(f"prereqs.{phase}.{relation}.{name}: {version!r} is no version range")


def check_resources(value):
    if not check_object("resources", value):
        return
    check_keys("resources", value, {"homepage", "bugtracker", "repository"})
    if "homepage" in value and not is_text(value["homepage"]):
        problem("resources.homepage is empty")
    for key, parts in (("bugtracker", {"web", "mailto"}), ("repository", {"url", "web", "type"})):
        if key in value and check_object(f"resources.{key}", value[key]):
            check_keys(f"resources.{key}", value[key], parts)
            if not value[key] or not all(is_text(part) for part in value[key].values()):
                problem(f"resources.{key} is empty or has an empty part")


def check_spec(meta, names):
    check_keys("META.json", meta, TOP_KEYS)
    for key in REQUIRED:
        if key not in meta:
            problem(f"{key} is missing")
    if "name" in meta and not is_term(meta["name"]):
        problem(f"name {meta['name']!r} is not a term (two characters, no slash or space)")
    if "version" in meta and not is_semver(meta["version"]):
        problem(f"version {meta['version']!r} is not SemVer")
    for key in ("abstract", "description", "generated_by"):
        if key in meta and not is_text(meta[key]):
            problem(f"{key} is not a non-empty string")
    maintainer = meta.get("maintainer")
    if maintainer is not None and not (is_text(maintainer) or (
            isinstance(maintainer, list) and maintainer and all(map(is_text, maintainer)))):
        problem("maintainer is not a name or a list of names")
    if "license" in meta:
        check_license(meta["license"])
    if "provides" in meta:
        check_provides(meta["provides"], names)
    spec = meta.get("meta-spec")
    if spec is not None and check_object("meta-spec", spec):
        check_keys("meta-spec", spec, {"version", "url"})
        if not re.fullmatch(r"1\.0\.\d+", str(spec.get("version", ""))):
            problem("meta-spec.version is not 1.0.x")
        if "url" in spec and spec["url"] not in ("https://pgxn.org/meta/spec.txt",
                                                 "http://pgxn.org/meta/spec.txt"):
            problem(f"meta-spec.url {spec['url']} is not the spec's")
    tags = meta.get("tags")
    if tags is not None and not (isinstance(tags, list) and tags and all(
            isinstance(tag, str) and 2 <= len(tag) <= 255 and
            re.fullmatch(r"[^/\\\x00-\x1f\x7f]+", tag) for tag in tags)):
        problem("tags are not a list of 2 to 255 characters each, without slashes")
    if "release_status" in meta and meta["release_status"] not in ("stable", "testing",
                                                                   "unstable"):
        problem(f"release_status {meta['release_status']!r} is not stable, testing or unstable")
    if "prereqs" in meta:
        check_prereqs(meta["prereqs"])
    if "resources" in meta:
        check_resources(meta["resources"])
    if "no_index" in meta and check_object("no_index", meta["no_index"]):
        check_keys("no_index", meta["no_index"], {"file", "directory"})


def check_project(meta, names, zip_path, top):
    control = release.read(f"{top}/snowflake.control").decode()
    default_version = re.search(r"^default_version = '([0-9.]+)'$", control, re.M).group(1)
    semver = default_version + ".0" * (2 - default_version.count("."))
    if meta.get("version") != semver:
        problem(f"version {meta.get('version')} is not default_version {default_version}")
    extension = meta.get("provides", {}).get("snowflake", {})
    if extension.get("version") != semver:
        problem("provides.snowflake.version differs from default_version")
    # The first script of the chain that CREATE EXTENSION runs: pgxn load takes a file that does not
    # end in .sql for no extension, and loads nothing.
    if extension.get("file") != "src/sql/snowflake--1.0.sql":
        problem("provides.snowflake.file is not src/sql/snowflake--1.0.sql")
    changelog = release.read(f"{top}/CHANGELOG.md").decode()
    first = re.search(r"^## (\S+)", changelog, re.M)
    if first is None or first.group(1) != default_version:
        problem(f"CHANGELOG.md does not begin with a section for {default_version}")
    debian = release.read(f"{top}/debian/changelog").decode()
    if not debian.startswith(f"snowflake-ids ({semver}) "):
        problem(f"debian/changelog does not begin with an entry for {semver}")
    check_release_dates(changelog, debian)
    if f"src/sql/snowflake--{default_version}.sql" not in names and not any(
            re.fullmatch(rf"src/sql/snowflake--[0-9.]+--{re.escape(default_version)}\.sql", n)
            for n in names):
        problem(f"no script reaches {default_version}")
    if not zip_path.endswith(f"/snowflake-{semver}.zip") or top != f"snowflake-{semver}":
        problem(f"{zip_path} is not named after the version")
    requires = meta.get("prereqs", {}).get("runtime", {}).get("requires", {})
    if requires.get("PostgreSQL") != "15.0.0":
        problem("prereqs do not require PostgreSQL 15, the floor")


def check_release_dates(changelog, debian):
    """Every version CHANGELOG.md dates is dated alike in debian/changelog (CONTRIBUTING.md
    "Releasing a version"): the day a version is declared released goes into both."""
    debian_days = {}
    for version, day in re.findall(
            r"^snowflake-ids \(([0-9.]+)\.0\).*?^ -- .*?  \w{3}, (\d{2} \w{3} \d{4})",
            debian, re.M | re.S):
        debian_days[version] = datetime.datetime.strptime(day, "%d %b %Y").date()
    for version, day in re.findall(r"^## ([0-9.]+) \((\d{4}-\d{2}-\d{2})\)$", changelog, re.M):
        dated = datetime.date.fromisoformat(day)
        if version in debian_days and debian_days[version] != dated:
            problem(f"CHANGELOG.md dates {version} {dated}, debian/changelog "
                    f"{debian_days[version]}")


zip_path = sys.argv[1]
release = zipfile.ZipFile(zip_path)
top = release.namelist()[0].split("/")[0]
names = {name[len(top) + 1:] for name in release.namelist()}
meta = json.loads(release.read(f"{top}/META.json"))
check_spec(meta, names)
check_project(meta, names, zip_path, top)
for text in problems:
    print(f"release check: {text}")
sys.exit(1 if problems else 0)
