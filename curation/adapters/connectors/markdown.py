"""Markdown and text files in a folder, incrementally by git commit or by mtime.

In a git work tree the cursor is the HEAD commit: a run with a cursor fetches the files
added or modified between it and HEAD. Only committed files are seen, and their content
is read from the work tree, which is expected to be a clean checkout.

With a SourcePolicy the folder, symlinks resolved, must lie within an allowed file root
(else the run fails), and a file whose symlinks lead out of the folder is a failure.

Elsewhere the cursor is the greatest mtime fetched, in nanoseconds. It never passes
"now minus `settle_s`", so a file written during a scan, in the same clock tick as the
newest one, or with a future mtime is fetched again next time rather than never. Copies
that keep an old mtime (rsync -a, tar) are not seen by mtime; use a git checkout there.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from curation.adapters.connectors.git_tree import GitTree
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord
from curation.domain.source_policy import SourcePolicy, denied_refusal, file_refusal

DEFAULT_PATTERNS = ("**/*.md", "**/*.markdown", "**/*.txt")
_MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}# +(.+?)(?: +#+)? *$")
Item = SourceRecord | RecordFailure


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a POSIX glob: `**/` spans folders (or none), `*` and `?` stay in one."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            parts.append(".*")
            i += 2
        else:
            parts.append({"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])))
            i += 1
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def markdown_title(text: str) -> str | None:
    """The first level-one ATX heading outside fenced code and front matter, if any."""
    lines = text.removeprefix("\ufeff").splitlines()
    if lines and lines[0].strip() == "---":
        # YAML front matter: its "# comments" are not headings.
        closing = next((n for n, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[closing + 1 :]
    fence = ""
    for line in lines:
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group(1)
        elif heading := _HEADING.match(line):
            return heading.group(1).strip()
    return None


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class MarkdownFolderConnector:
    """Connector over a folder of Markdown and text files (see the module docstring)."""

    kind = "markdown"

    def __init__(
        self,
        root: Path,
        *,
        patterns: Sequence[str] = DEFAULT_PATTERNS,
        max_bytes: int = 1_000_000,
        page_size: int = 500,
        base_url: str | None = None,
        settle_s: float = 2.0,
        clock_ns: Callable[[], int] = time.time_ns,
        policy: SourcePolicy | None = None,
    ) -> None:
        if page_size < 1 or max_bytes < 1:
            raise ValueError("page_size and max_bytes must be at least 1")
        self._root = Path(root).expanduser().absolute()
        self._real_root = self._root  # symlinks resolved, once pages() has checked it
        self._policy = policy
        self._patterns = [glob_regex(pattern) for pattern in patterns]
        self._max_bytes = max_bytes
        self._page_size = page_size
        self._base_url = base_url.rstrip("/") + "/" if base_url else None
        self._settle_ns = int(settle_s * 1e9)
        self._clock_ns = clock_ns

    def __repr__(self) -> str:
        return f"MarkdownFolderConnector({str(self._root)!r})"

    def pages(self, *, cursor: str | None) -> Iterator[FetchPage]:
        """Yield pages of changed files: by git commit in a work tree, by mtime elsewhere."""
        # Before anything touches the disk: whether a refused path exists is not to be told.
        self._real_root = self._checked_root()
        if not self._root.is_dir():
            raise ConnectorError(f"the folder {self._root} does not exist or is not a folder")
        tree = GitTree.open(self._root)
        if tree is not None:
            yield from self._git_pages(tree, cursor)
        else:
            yield from self._mtime_pages(cursor)

    def _checked_root(self) -> Path:
        """The folder with symlinks resolved; ConnectorError if it is outside the policy."""
        if self._policy is not None:
            roots, denied = self._policy.file_roots, self._policy.denied_paths
            root = str(self._root)
            if reason := file_refusal(root, roots, resolve=os.path.realpath, denied=denied):
                raise ConnectorError(reason)
        return Path(os.path.realpath(self._root))

    def _matches(self, relative: str) -> bool:
        return any(pattern.match(relative) for pattern in self._patterns) and not self._denied(
            relative
        )

    def _denied(self, relative: str) -> str:
        """Why the file or folder may not be read although below the root ("" if it may):
        the servers' state and secrets are never listed nor read, wherever the root is."""
        if self._policy is None or not self._policy.denied_paths:
            return ""
        path = str(self._root / relative)
        return denied_refusal(path, self._policy.denied_paths, resolve=os.path.realpath)

    def _git_pages(self, tree: GitTree, cursor: str | None) -> Iterator[FetchPage]:
        head = tree.head()
        if cursor == head:
            return
        if cursor is not None and tree.has_commit(cursor):
            names = tree.changed_between(cursor, head)
        else:
            # No cursor, or one this history does not have (rewritten, or an mtime cursor).
            names = tree.files_at(head)
        chosen = sorted(name for name in names if self._matches(name))
        chunks = list(_chunks(chosen, self._page_size)) or [[]]
        for number, chunk in enumerate(chunks, start=1):
            # HEAD is only true once every changed file is in; until then keep the old commit.
            page_cursor = head if number == len(chunks) else cursor
            yield FetchPage(items=[self._read(name) for name in chunk], cursor=page_cursor)

    def _mtime_pages(self, cursor: str | None) -> Iterator[FetchPage]:
        since = _mtime_cursor(cursor)
        cap = self._clock_ns() - self._settle_ns
        found, failures = self._walk()
        fresh = sorted((mtime, name) for mtime, name in found if since is None or mtime > since)
        if not fresh:
            if failures:
                yield FetchPage(items=failures, cursor=cursor)
            return
        names = [name for _, name in fresh]
        chunks = list(_chunks(names, self._page_size))
        done = 0
        for number, chunk in enumerate(chunks, start=1):
            done += len(chunk)
            # All files older than the next unread one are in; ties with it are not.
            ceiling = fresh[-1][0] if number == len(chunks) else fresh[done][0] - 1
            items: list[Item] = [self._read(name) for name in chunk]
            if number == 1:
                items = failures + items
            yield FetchPage(items=items, cursor=_claim(ceiling, since=since, cap=cap))

    def _walk(self) -> tuple[list[tuple[int, str]], list[Item]]:
        """(mtime_ns, relative path) of matching files, and failures for unlistable ones."""
        found: list[tuple[int, str]] = []
        failures: list[Item] = []

        def unlistable(exc: OSError) -> None:
            where = self._relative(Path(exc.filename)) if exc.filename else "."
            failures.append(RecordFailure(where, f"unreadable folder: {exc.strerror or exc}"))

        for folder, subfolders, files in os.walk(self._root, onerror=unlistable):
            subfolders[:] = sorted(
                name
                for name in subfolders
                if name != ".git" and not self._denied(self._relative(Path(folder, name)))
            )
            for name in files:
                relative = self._relative(Path(folder, name))
                if not self._matches(relative):
                    continue
                try:
                    found.append((_mtime_ns(Path(folder, name)), relative))
                except OSError as exc:
                    failures.append(self._failure(relative, f"unreadable: {exc.strerror or exc}"))
        return found, failures

    def _relative(self, path: Path) -> str:
        return path.relative_to(self._root).as_posix()

    def _url(self, relative: str) -> str:
        if self._base_url:
            return self._base_url + quote(relative)
        return (self._root / relative).as_uri()

    def _failure(self, relative: str, reason: str) -> RecordFailure:
        return RecordFailure(external_id=relative, reason=reason, url=self._url(relative))

    def _read(self, relative: str) -> Item:
        """The file as a record, or a failure saying why it cannot be one."""
        loaded = self._load(relative)
        if isinstance(loaded, RecordFailure):
            return loaded
        return self._decoded(relative, *loaded)

    def _load(self, relative: str) -> tuple[bytes, int] | RecordFailure:
        """The file's bytes and mtime (ns), read within the folder and the policy, or a
        failure saying why it cannot be read."""
        path = self._root / relative
        try:
            # Checked against the root resolved at the start of the run, not re-resolved now.
            if not Path(os.path.realpath(path)).is_relative_to(self._real_root):
                return self._failure(relative, f"symlink points outside the folder: {path}")
            if reason := self._denied(relative):  # a symlink swapped in since the listing
                return self._failure(relative, reason)
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                return self._failure(relative, "not a regular file")
            if info.st_size > self._max_bytes:
                return self._failure(
                    relative, f"{info.st_size} bytes exceeds the cap of {self._max_bytes}"
                )
            with path.open("rb") as handle:
                data = handle.read(self._max_bytes + 1)
        except FileNotFoundError:
            return self._failure(relative, "unreadable: missing (deleted, or a dangling symlink)")
        except OSError as exc:
            return self._failure(relative, f"unreadable: {exc.strerror or exc}")
        return data, info.st_mtime_ns

    def _decoded(self, relative: str, data: bytes, mtime_ns: int) -> Item:
        if len(data) > self._max_bytes:  # it grew between stat and read
            return self._failure(relative, f"over {self._max_bytes} bytes, the cap")
        if b"\0" in data:
            return self._failure(relative, f"binary content (NUL byte at byte {data.index(0)})")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._failure(relative, f"invalid UTF-8 at byte {exc.start}")
        markdown = Path(relative).suffix.lower() in _MARKDOWN_SUFFIXES
        title = (markdown_title(text) if markdown else None) or Path(relative).stem
        return SourceRecord(
            external_id=relative,
            content=data,
            mime="text/markdown" if markdown else "text/plain",
            url=self._url(relative),
            title=title,
            updated_at=dt.datetime.fromtimestamp(mtime_ns / 1e9, dt.UTC),
        )


def _mtime_ns(path: Path) -> int:
    """The file's mtime; a dangling symlink's own, so its failure is reported once, not always."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return path.lstat().st_mtime_ns


def _mtime_cursor(cursor: str | None) -> int | None:
    """The mtime a stored cursor names; a git commit or junk means a full fetch."""
    if cursor is None or not cursor.isdigit():
        return None
    return int(cursor)


def _claim(ceiling: int, *, since: int | None, cap: int) -> str:
    """The cursor a page may carry: at most `ceiling` and `cap`, never below `since`."""
    value = min(ceiling, cap)
    if since is not None:
        value = max(value, since)
    return str(value)
