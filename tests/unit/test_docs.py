"""The docs a newcomer follows stay true: every setting is documented, links and tables work.

- Every environment variable the code reads (Python, shell, compose) is named in
  docs/configuration.md. The reads are found in the source itself (an AST walk, not a
  list someone must extend); a read whose name the walk cannot see (a variable built at
  run time) must be registered in DYNAMIC_READS, so a new one fails until it is.
- README.md and docs/*.md: relative links reach files of the repository (and #anchors
  headings of the file), tables are well-formed, the URLs and `manage.py` commands the
  pages name exist, and so do the source paths they quote.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import get_commands
from django.urls import Resolver404, resolve

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "configuration.md"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

# Where the code that reads the environment lives: what ships, the dev tooling, the
# benchmarks, the test suite's shared set-up (not its test modules, whose variables are
# fixtures), and the deployment files.
PYTHON_TREES = ("vera", "tenants", "curation", "retrieval", "common", "kernel", "devtools", "bench")
PYTHON_FILES = ("gunicorn.conf.py", "manage.py", "tests/conftest.py")
PYTHON_SUPPORT = "tests/support"
COMPOSE_FILES = ("compose.yaml",)

# Reads whose name is not a literal: (file, enclosing function) -> how the names are found.
# A pattern: every string constant of that module matching it is a name read there.
# None: the names are chosen at run time (documented through the setting that bounds them).
DYNAMIC_READS: dict[tuple[str, str], re.Pattern[str] | None] = {
    # The demo users' passwords: USERS names one variable per user.
    ("vera/management/commands/seed_demo.py", "_workspace"): re.compile(r"^VERA_DEMO__\w+$"),
    # The old names a deployment may still set, carried over to their new ones.
    ("vera/settings/env.py", "adopt_renamed"): re.compile(r"^VERA_(?![A-Z0-9_]*__)[A-Z0-9_]+$"),
    # A source's `token_env`: a tenant names it, below VERA_SOURCES__TOKEN_ENV_PREFIX.
    ("vera/wiring.py", "source_secret"): None,
}
# Variables a shell sets for itself: not configuration.
SHELL_OWN = frozenset(
    {"BASH_SOURCE", "EUID", "HOME", "HOSTNAME", "IFS", "LINENO", "OSTYPE", "PATH", "PWD",
     "RANDOM", "SECONDS", "UID"}
)  # fmt: skip
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# VERA's own variables: an area, a double underscore, a key (docs/configuration.md).
SECTION_FORM = re.compile(r"^VERA_[A-Z0-9]+(?:_[A-Z0-9]+)*__[A-Z0-9]+(?:_[A-Z0-9]+)*$")


# --- Environment variables the code reads -----------------------------------------------


def _python_files() -> list[Path]:
    files = [ROOT / name for name in PYTHON_FILES]
    for tree in (*PYTHON_TREES, PYTHON_SUPPORT):
        files += sorted((ROOT / tree).rglob("*.py"))
    return [path for path in files if path.exists()]


def _is_environ(node: ast.AST) -> bool:
    """`os.environ`, or `environ` imported from os."""
    if isinstance(node, ast.Attribute):
        return node.attr == "environ" and isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id == "environ"


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _environ_key(node: ast.AST) -> ast.expr | None:
    """The key expression of a direct read of os.environ, if `node` is one."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and _is_environ(func.value):
            if func.attr in {"get", "setdefault", "pop"} and node.args:
                return node.args[0]
        elif _callee(node) == "getenv" and node.args:
            return node.args[0]
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return node.slice if _is_environ(node.value) else None
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    if isinstance(node.ops[0], ast.In | ast.NotIn) and _is_environ(node.comparators[0]):
        return node.left  # "X" in os.environ
    return None


@dataclass(frozen=True)
class Reader:
    """A function that reads the variable one of its parameters names (`env_str(name)`)."""

    index: int  # the parameter's position, counting `self`/`cls`
    param: str
    method: bool  # the first parameter is self/cls


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _positional(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]


def _readers(trees: dict[Path, ast.Module]) -> dict[str, Reader]:
    found: dict[str, Reader] = {}
    for tree in trees.values():
        for function in _functions(tree):
            params = _positional(function)
            for node in ast.walk(function):
                key = _environ_key(node)
                if isinstance(key, ast.Name) and key.id in params:
                    found[function.name] = Reader(
                        index=params.index(key.id),
                        param=key.id,
                        method=bool(params) and params[0] in {"self", "cls"},
                    )
    return found


def _reader_key(call: ast.Call, reader: Reader) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == reader.param:
            return keyword.value
    bound = reader.method and isinstance(call.func, ast.Attribute)
    index = reader.index - 1 if bound else reader.index
    return call.args[index] if 0 <= index < len(call.args) else None


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` assignments."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def _enclosing(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Each node's innermost enclosing function."""
    owner: dict[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for function in _functions(tree):  # outer functions first: inner ones overwrite
        for node in ast.walk(function):
            if node is not function:
                owner[node] = function
    return owner


@dataclass
class Reads:
    names: dict[str, set[str]]  # name -> files reading it
    unregistered: list[str]  # dynamic reads missing from DYNAMIC_READS


def _literal(key: ast.expr, constants: dict[str, str]) -> str | None:
    """The variable's name when the code spells it: a literal or a module constant."""
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    if isinstance(key, ast.Name):
        return constants.get(key.id)
    return None


def _dynamic_names(site: tuple[str, str], tree: ast.Module) -> set[str]:
    """The names a registered dynamic read may read: its module's matching constants."""
    pattern = DYNAMIC_READS[site]
    if pattern is None:
        return set()
    return {value for value in _string_constants(tree) if pattern.match(value)}


def _module_reads(path: Path, tree: ast.Module, readers: dict[str, Reader], reads: Reads) -> None:
    relative = path.relative_to(ROOT).as_posix()
    constants, owner = _constants(tree), _enclosing(tree)
    for node in ast.walk(tree):
        key = _environ_key(node)
        if key is None and isinstance(node, ast.Call) and _callee(node) in readers:
            key = _reader_key(node, readers[str(_callee(node))])
        if key is None:
            continue
        name = _literal(key, constants)
        function = owner.get(node)
        reader = readers.get(function.name) if function else None
        if name is None and reader and isinstance(key, ast.Name) and key.id == reader.param:
            continue  # inside a reader (env_str): its callers name the variable
        site = (relative, function.name if function else "<module>")
        if name is None and site not in DYNAMIC_READS:
            reads.unregistered.append(f"{relative}:{getattr(node, 'lineno', 0)} in {site[1]}")
            continue
        for found in {name} if name else _dynamic_names(site, tree):
            reads.names.setdefault(found, set()).add(relative)


def _python_reads() -> Reads:
    trees = {path: ast.parse(path.read_text(), filename=str(path)) for path in _python_files()}
    readers = _readers(trees)
    reads = Reads(names={}, unregistered=[])
    for path, tree in trees.items():
        _module_reads(path, tree, readers, reads)
    return reads


def _string_constants(tree: ast.Module) -> set[str]:
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


SHELL_DEFAULTED = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::?[-?+=])")
SHELL_PLAIN = re.compile(r"\$\{?([A-Z][A-Z0-9_]*)\}?")


def _shell_reads(text: str, *, compose: bool) -> set[str]:
    """Variables a shell script (or compose's interpolation) takes from its environment."""
    text = text.replace("$$", "") if compose else text  # $$ escapes compose interpolation
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assigned = set(
        re.findall(r"^\s*(?:local\s+|export\s+|readonly\s+)?([A-Z][A-Z0-9_]*)=", text, re.M)
    )
    names = set(SHELL_DEFAULTED.findall(text))
    names |= {name for name in SHELL_PLAIN.findall(text) if name not in assigned}
    return names - SHELL_OWN


def _shell_files() -> list[Path]:
    files = [ROOT / "bin" / "vera", ROOT / ".ci" / "run", *sorted((ROOT / "deploy").rglob("*.sh"))]
    return [path for path in files if path.exists()]


def environment_reads() -> Reads:
    """Every variable name read anywhere, with the files reading it."""
    reads = _python_reads()
    for path in _shell_files():
        for name in _shell_reads(path.read_text(), compose=False):
            reads.names.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    for name in COMPOSE_FILES:
        for variable in _shell_reads((ROOT / name).read_text(), compose=True):
            reads.names.setdefault(variable, set()).add(name)
    return reads


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def test_the_scan_finds_the_reads_it_must_find() -> None:
    """Each way of reading the environment is seen (so an empty scan cannot pass)."""
    names = environment_reads().names
    expected = {
        "VERA_OUTBOX__LEASE_S": "vera/settings/base.py",  # env_int(...)
        "DATABASE_CONNECT_TIMEOUT": "vera/settings/base.py",  # a call spread over lines
        "OTEL_EXPORTER_OTLP_ENDPOINT": "vera/tracing.py",  # through a module constant
        "OPENAI_API_KEY": "vera/wiring.py",  # through required_env(), a reader found
        "VERA_DEMO__ADMIN_PASSWORD": "vera/management/commands/seed_demo.py",  # dynamic
        "VERA_DEV__ROOT": "devtools/common.py",  # os.environ.get
        "PROMETHEUS_MULTIPROC_DIR": "gunicorn.conf.py",
        "VERA_DEV__PYTHON": "bin/vera",  # shell
        "VERA_DB__OWNER_PASSWORD": "deploy/postgres/init-roles.sh",
        "NEO4J_PASSWORD": "compose.yaml",  # compose interpolation
    }
    missing = {name: file for name, file in expected.items() if file not in names.get(name, ())}
    assert not missing, missing
    assert "HOSTNAME" not in names  # compose's $$HOSTNAME is the container shell's


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    reads = environment_reads()
    assert not reads.unregistered, (
        "reads of a variable whose name is not a literal; register them in DYNAMIC_READS "
        f"and document the names: {reads.unregistered}"
    )
    documented = CONFIGURATION.read_text()
    missing = {
        name: sorted(files)
        for name, files in sorted(reads.names.items())
        if ENV_NAME.match(name) and not _mentions(documented, name)
    }
    assert not missing, f"docs/configuration.md does not mention: {missing}"


def test_every_vera_variable_has_one_form() -> None:
    """`VERA_<AREA>__<KEY>` for all; the old flat names only where they are carried over."""
    from vera.settings.env import LEGACY_SECRET_PREFIX, RENAMED

    old = {*RENAMED, LEGACY_SECRET_PREFIX}
    read = environment_reads().names
    wrong = sorted(
        name
        for name in read
        if name.startswith("VERA_") and name not in old and not SECTION_FORM.match(name)
    )
    assert not wrong, f"name these VERA_<AREA>__<KEY>: {wrong}"
    assert all(SECTION_FORM.match(new) for new in RENAMED.values())
    assert set(RENAMED.values()) <= set(read), "an old name carried over to one nobody reads"
    assert not SECTION_FORM.match("VERA_CACHE_URL")  # the check can fail


# --- Markdown: links, anchors, tables -------------------------------------------------------

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: formatting dropped, lower case, punctuation removed."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(path.read_text()):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = _slug(match.group(1))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def link_errors(path: Path, root: Path = ROOT) -> list[str]:
    errors = []
    for number, line in _prose_lines(path.read_text()):
        for target in LINK.findall(CODE_SPAN.sub("", line)):
            where = f"{path.relative_to(root)}:{number}: {target}"
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # a URL
                if not target.startswith(("https://", "http://", "mailto:")):
                    errors.append(f"{where}: not a public URL")
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.is_relative_to(root):
                errors.append(f"{where}: points outside the repository")
            elif not resolved.exists():
                errors.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                errors.append(f"{where}: no heading #{anchor} in {resolved.relative_to(root)}")
    return errors


def _cells(row: str) -> int:
    """Cells of a table row: split on unescaped pipes (GFM splits inside code spans too)."""
    inner = row.strip()
    inner = inner.removeprefix("|")
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return len(re.split(r"(?<!\\)\|", inner))


DELIMITER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def table_errors(path: Path, root: Path = ROOT) -> list[str]:
    errors: list[str] = []
    lines = list(_prose_lines(path.read_text()))
    width: int | None = None  # the header's cell count while inside a table
    for position, (number, line) in enumerate(lines):
        where = f"{path.relative_to(root)}:{number}"
        if not line.lstrip().startswith("|"):
            width = None
            continue
        following = lines[position + 1][1] if position + 1 < len(lines) else ""
        if width is None:
            if not DELIMITER.match(following):
                errors.append(f"{where}: a table row outside a table (a blank line above it?)")
                continue
            width = _cells(line)
        elif _cells(line) != width:
            errors.append(f"{where}: {_cells(line)} cells, the header has {width}")
    return errors


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(page: Path) -> None:
    assert not link_errors(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_tables_are_well_formed(page: Path) -> None:
    assert not table_errors(page)


def test_the_checks_catch_a_broken_link_and_a_broken_table(tmp_path: Path) -> None:
    """The checks above fail on what they are for (they run on real pages otherwise)."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "outside.md").write_text("# Outside\n")
    broken = root / "docs" / "page.md"
    broken.write_text(
        "# Title\n\n[a](../../outside.md) [b](missing.md) [c](#nowhere) [d](#title)\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n| 1 |\n\n| 3 | 4 |\n"
    )
    links, tables = link_errors(broken, root), table_errors(broken, root)
    assert [error.rsplit(": ", 1)[1] for error in links] == [
        "points outside the repository",
        "no such file",
        "no heading #nowhere in docs/page.md",
    ]
    assert len(tables) == 2
    assert "1 cells, the header has 2" in tables[0]
    assert "outside a table" in tables[1]


def test_heading_anchors_follow_github() -> None:
    assert _slug("Agents (MCP)") == "agents-mcp"
    assert _slug("`make run`, step by step") == "make-run-step-by-step"
    assert _slug("Sources are a trust boundary") == "sources-are-a-trust-boundary"


# --- What the pages name exists ------------------------------------------------------------

API_PATH = re.compile(r"(?<![\w.])(/api/v1/[A-Za-z0-9_<][A-Za-z0-9_<>:/.-]*)")
LOCAL_URL = re.compile(r"http://127\.0\.0\.1:8000(/[A-Za-z0-9_<>:/.?=&+-]*)")
MANAGE = re.compile(r"manage\.py\s+([a-z_]+)")
SOURCE_PATH = re.compile(
    r"`((?:vera|tenants|curation|retrieval|common|kernel|devtools|bench|tests|deploy|demo|bin|docs"
    r"|templates|static)/[A-Za-z0-9_./-]*)`"
)


def _sample(path: str) -> str:
    """A concrete path for a documented pattern: `<id>` becomes 1, `<group_id>` a group id."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        if "group" in name:
            return "w:1"
        return "RUNS_ON" if name == "name" else "1"

    return re.sub(r"<([^>]+)>", value, path.split("?")[0].split("#")[0])


def url_errors(page: Path) -> list[str]:
    errors = []
    for number, line in _prose_lines(page.read_text()):
        for path in API_PATH.findall(line) + LOCAL_URL.findall(line):
            sample = _sample(path.rstrip("."))
            try:
                resolve(sample)
            except Resolver404:
                errors.append(f"{page.relative_to(ROOT)}:{number}: {path} ({sample}) is no URL")
    return errors


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_documented_urls_exist(page: Path) -> None:
    assert not url_errors(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_documented_commands_and_paths_exist(page: Path) -> None:
    text = page.read_text()
    commands = set(get_commands())
    unknown = sorted(set(MANAGE.findall(text)) - commands)
    assert not unknown, f"no such manage.py command: {unknown}"
    missing = sorted(
        {path for path in SOURCE_PATH.findall(text) if not (ROOT / path.rstrip("/")).exists()}
    )
    assert not missing, f"no such file or folder: {missing}"
