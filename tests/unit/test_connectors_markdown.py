"""MarkdownFolderConnector over temporary folders and temporary git repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from curation.adapters.connectors.markdown import (
    MarkdownFolderConnector,
    glob_regex,
    markdown_title,
)
from curation.domain.errors import ConnectorError
from curation.domain.records import FetchPage, RecordFailure, SourceRecord

HOUR_NS = 3600 * 10**9
VIETNAMESE = "# Hướng dẫn vận hành\n\nKhởi động lại máy chủ cơ sở dữ liệu, rồi kiểm tra nhật ký.\n"


def _write(root: Path, relative: str, data: bytes | str, *, mtime_ns: int | None = None) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def _items(pages: list[FetchPage]) -> dict[str, SourceRecord | RecordFailure]:
    return {item.external_id: item for page in pages for item in page.items}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=VERA Test", "-c", "user.email=test@example.org",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-C", str(repo), *args],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write(root, "runbook.md", "# Runbook\n\nRestart it.\n")
    _write(root, "guides/dns.md", "# DNS\n")
    _write(root, "guides/old.md", "# Old\n")
    _write(root, "notes.txt", "plain notes\n")
    _write(root, "script.py", "print('not a document')\n")
    _commit(root, "first")
    return root


# --- records and failures --------------------------------------------------------------


def test_markdown_file_becomes_a_record_when_it_is_valid_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path, "ops/runbook.md", "# Runbook\n\nRestart the service.\n")
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    (record,) = page.items
    assert isinstance(record, SourceRecord)
    assert (record.external_id, record.title, record.mime) == (
        "ops/runbook.md",
        "Runbook",
        "text/markdown",
    )
    assert record.url == path.as_uri()
    assert record.content == b"# Runbook\n\nRestart the service.\n"
    assert record.updated_at is not None
    assert record.updated_at.timestamp() == pytest.approx(path.stat().st_mtime)


def test_vietnamese_text_round_trips_exactly_when_it_has_accents(tmp_path: Path) -> None:
    _write(tmp_path, "hướng-dẫn.md", VIETNAMESE)
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    (record,) = page.items
    assert isinstance(record, SourceRecord)
    assert record.content.decode("utf-8") == VIETNAMESE
    assert record.external_id == "hướng-dẫn.md"
    assert record.title == "Hướng dẫn vận hành"
    assert record.url.endswith("/h%C6%B0%E1%BB%9Bng-d%E1%BA%ABn.md")


def test_text_file_is_plain_and_titled_by_stem_when_it_has_no_markdown(tmp_path: Path) -> None:
    _write(tmp_path, "on-call.txt", "# not a heading in a text file\n")
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    (record,) = page.items
    assert isinstance(record, SourceRecord)
    assert (record.mime, record.title) == ("text/plain", "on-call")


def test_invalid_utf8_fails_with_its_offset_when_a_byte_is_wrong(tmp_path: Path) -> None:
    _write(tmp_path, "bad.md", b"# Title\n\xc3\x28 broken")
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    assert page.items == [
        RecordFailure("bad.md", "invalid UTF-8 at byte 8", url=(tmp_path / "bad.md").as_uri())
    ]


def test_binary_file_fails_when_it_contains_nul_bytes(tmp_path: Path) -> None:
    _write(tmp_path, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    (failure,) = page.items
    assert isinstance(failure, RecordFailure)
    assert failure.reason == "binary content (NUL byte at byte 8)"


def test_oversize_file_fails_with_both_sizes_when_over_the_cap(tmp_path: Path) -> None:
    _write(tmp_path, "huge.md", "x" * 2048)
    (page,) = list(MarkdownFolderConnector(tmp_path, max_bytes=1000).pages(cursor=None))
    (failure,) = page.items
    assert isinstance(failure, RecordFailure)
    assert failure.reason == "2048 bytes exceeds the cap of 1000"


def test_unreadable_file_fails_when_its_link_is_dangling(tmp_path: Path) -> None:
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (page,) = list(MarkdownFolderConnector(tmp_path).pages(cursor=None))
    (failure,) = page.items
    assert isinstance(failure, RecordFailure)
    assert failure.external_id == "gone.md"
    assert failure.reason.startswith("unreadable: ")


def test_dangling_link_is_reported_once_when_runs_repeat(tmp_path: Path) -> None:
    now = 1_900_000_000 * 10**9
    link = tmp_path / "gone.md"
    link.symlink_to(tmp_path / "nowhere.md")
    os.utime(link, ns=(now - HOUR_NS, now - HOUR_NS), follow_symlinks=False)
    connector = MarkdownFolderConnector(tmp_path, clock_ns=lambda: now)
    stored = list(connector.pages(cursor=None))[-1].cursor
    assert list(connector.pages(cursor=stored)) == []


def test_link_out_of_the_folder_fails_when_it_would_expose_other_files(tmp_path: Path) -> None:
    outside = _write(tmp_path, "secret/notes.md", "# Private\n")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "peek.md").symlink_to(outside)
    (page,) = list(MarkdownFolderConnector(root).pages(cursor=None))
    (failure,) = page.items
    assert isinstance(failure, RecordFailure)
    assert failure.reason == f"symlink points outside the folder: {root / 'peek.md'}"


def test_failures_and_records_share_a_page_when_files_are_mixed(tmp_path: Path) -> None:
    _write(tmp_path, "a.md", "# A\n")
    _write(tmp_path, "b.md", b"\xff\xfe")
    _write(tmp_path, "c.md", "# C\n")
    items = _items(list(MarkdownFolderConnector(tmp_path).pages(cursor=None)))
    assert [type(items[name]).__name__ for name in ("a.md", "b.md", "c.md")] == [
        "SourceRecord",
        "RecordFailure",
        "SourceRecord",
    ]


def test_other_files_are_ignored_when_they_match_no_pattern(tmp_path: Path) -> None:
    _write(tmp_path, "README.markdown", "# Readme\n")
    _write(tmp_path, "deploy.sh", "echo hi\n")
    _write(tmp_path, ".git/description.txt", "not a work tree, but still skipped\n")
    items = _items(list(MarkdownFolderConnector(tmp_path).pages(cursor=None)))
    assert list(items) == ["README.markdown"]


def test_url_uses_the_base_url_when_one_is_configured(tmp_path: Path) -> None:
    _write(tmp_path, "guides/sổ tay.md", "# Sổ tay\n")
    connector = MarkdownFolderConnector(tmp_path, base_url="https://docs.example/wiki/")
    (page,) = list(connector.pages(cursor=None))
    assert page.items[0].url == "https://docs.example/wiki/guides/s%E1%BB%95%20tay.md"


def test_missing_root_raises_when_the_folder_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="does not exist"):
        list(MarkdownFolderConnector(tmp_path / "nope").pages(cursor=None))


# --- titles and patterns ------------------------------------------------------------------


def test_title_skips_headings_in_code_when_a_fence_comes_first() -> None:
    text = "Intro\n\n```bash\n# install\nmake\n```\n\n# Real title #\n"
    assert markdown_title(text) == "Real title"


def test_title_skips_front_matter_when_it_has_comments() -> None:
    assert markdown_title("---\n# yaml comment\ntags: [a]\n---\n# Title\n") == "Title"


def test_title_is_none_when_there_is_only_a_subheading() -> None:
    assert markdown_title("## Only a section\n") is None


@pytest.mark.parametrize(
    ("path", "matches"),
    [("top.md", True), ("a/b/c.md", True), ("a/b.mdx", False), ("notes.md.bak", False)],
)
def test_double_star_spans_any_depth_when_matching_paths(path: str, matches: bool) -> None:
    assert bool(glob_regex("**/*.md").match(path)) is matches


# --- mtime cursor --------------------------------------------------------------------------


def test_second_run_fetches_only_newer_files_when_given_the_mtime_cursor(tmp_path: Path) -> None:
    now = 1_900_000_000 * 10**9
    _write(tmp_path, "old.md", "# Old\n", mtime_ns=now - 5 * HOUR_NS)
    _write(tmp_path, "older.md", "# Older\n", mtime_ns=now - 6 * HOUR_NS)
    connector = MarkdownFolderConnector(tmp_path, clock_ns=lambda: now)
    first = list(connector.pages(cursor=None))
    assert first[-1].cursor == str(now - 5 * HOUR_NS)
    _write(tmp_path, "new.md", "# New\n", mtime_ns=now - HOUR_NS)
    again = list(connector.pages(cursor=first[-1].cursor))
    assert list(_items(again)) == ["new.md"]
    assert again[-1].cursor == str(now - HOUR_NS)


def test_second_run_yields_nothing_when_no_file_changed(tmp_path: Path) -> None:
    now = 1_900_000_000 * 10**9
    _write(tmp_path, "a.md", "# A\n", mtime_ns=now - HOUR_NS)
    connector = MarkdownFolderConnector(tmp_path, clock_ns=lambda: now)
    stored = list(connector.pages(cursor=None))[-1].cursor
    assert list(connector.pages(cursor=stored)) == []


def test_cursor_stops_short_of_now_when_files_are_fresher_than_the_settle_time(
    tmp_path: Path,
) -> None:
    now = 1_900_000_000 * 10**9
    _write(tmp_path, "future.md", "# Skewed clock\n", mtime_ns=now + HOUR_NS)
    connector = MarkdownFolderConnector(tmp_path, settle_s=2.0, clock_ns=lambda: now)
    (page,) = list(connector.pages(cursor=None))
    assert page.cursor == str(now - 2 * 10**9)
    assert list(_items(list(connector.pages(cursor=page.cursor)))) == ["future.md"]


def test_earlier_pages_stop_below_the_next_file_when_mtimes_tie_across_pages(
    tmp_path: Path,
) -> None:
    now = 1_900_000_000 * 10**9
    tie = now - 3 * HOUR_NS
    _write(tmp_path, "a.md", "# A\n", mtime_ns=now - 4 * HOUR_NS)
    _write(tmp_path, "b.md", "# B\n", mtime_ns=tie)
    _write(tmp_path, "c.md", "# C\n", mtime_ns=tie)
    connector = MarkdownFolderConnector(tmp_path, page_size=2, clock_ns=lambda: now)
    pages = list(connector.pages(cursor=None))
    assert [[item.external_id for item in page.items] for page in pages] == [
        ["a.md", "b.md"],
        ["c.md"],
    ]
    assert [page.cursor for page in pages] == [str(tie - 1), str(tie)]


# --- git cursor ----------------------------------------------------------------------------


def test_first_run_fetches_committed_documents_when_the_root_is_a_git_tree(repo: Path) -> None:
    pages = list(MarkdownFolderConnector(repo).pages(cursor=None))
    assert sorted(_items(pages)) == ["guides/dns.md", "guides/old.md", "notes.txt", "runbook.md"]
    assert pages[-1].cursor == _git(repo, "rev-parse", "HEAD")


def test_second_run_fetches_only_changed_files_when_given_the_commit_cursor(repo: Path) -> None:
    stored = list(MarkdownFolderConnector(repo).pages(cursor=None))[-1].cursor
    _write(repo, "runbook.md", "# Runbook\n\nRestart it, then check the logs.\n")
    _write(repo, "guides/ntp.md", "# NTP\n")
    (repo / "guides/old.md").unlink()
    _write(repo, "script.py", "print('changed, but not a document')\n")
    head = _commit(repo, "second")
    pages = list(MarkdownFolderConnector(repo).pages(cursor=stored))
    assert sorted(_items(pages)) == ["guides/ntp.md", "runbook.md"]
    assert pages[-1].cursor == head


def test_cursor_moves_to_head_when_only_deletions_happened(repo: Path) -> None:
    stored = list(MarkdownFolderConnector(repo).pages(cursor=None))[-1].cursor
    (repo / "guides/old.md").unlink()
    head = _commit(repo, "remove old guide")
    assert list(MarkdownFolderConnector(repo).pages(cursor=stored)) == [FetchPage([], head)]


def test_nothing_is_yielded_when_the_cursor_is_head(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    assert list(MarkdownFolderConnector(repo).pages(cursor=head)) == []


def test_everything_is_fetched_again_when_the_cursor_commit_is_unknown(repo: Path) -> None:
    pages = list(MarkdownFolderConnector(repo).pages(cursor="0" * 40))
    assert len(_items(pages)) == 4


def test_paths_are_relative_to_the_root_when_it_is_a_subfolder_of_the_repo(repo: Path) -> None:
    stored = list(MarkdownFolderConnector(repo / "guides").pages(cursor=None))[-1].cursor
    _write(repo, "guides/dns.md", "# DNS\n\nUse the internal resolver.\n")
    _write(repo, "runbook.md", "# Runbook, outside the subfolder\n")
    _commit(repo, "third")
    pages = list(MarkdownFolderConnector(repo / "guides").pages(cursor=stored))
    assert list(_items(pages)) == ["dns.md"]


def test_earlier_pages_keep_the_old_commit_when_more_files_follow(repo: Path) -> None:
    stored = list(MarkdownFolderConnector(repo).pages(cursor=None))[-1].cursor
    for n in range(3):
        _write(repo, f"new/{n}.md", f"# New {n}\n")
    head = _commit(repo, "three new")
    pages = list(MarkdownFolderConnector(repo, page_size=2).pages(cursor=stored))
    assert [page.cursor for page in pages] == [stored, head]


def test_invalid_utf8_fails_alone_when_committed_among_good_files(repo: Path) -> None:
    stored = list(MarkdownFolderConnector(repo).pages(cursor=None))[-1].cursor
    _write(repo, "broken.md", b"ok\n\xe1\xba")
    _write(repo, "good.md", VIETNAMESE)
    _commit(repo, "mixed")
    items = _items(list(MarkdownFolderConnector(repo).pages(cursor=stored)))
    assert isinstance(items["broken.md"], RecordFailure)
    assert items["broken.md"].reason == "invalid UTF-8 at byte 3"
    assert items["good.md"].content == VIETNAMESE.encode()


def test_a_git_ignored_folder_inside_a_checkout_is_read_by_mtime(repo: Path) -> None:
    (repo / ".gitignore").write_text("/var/\n", encoding="utf-8")
    _commit(repo, "ignore var")
    ignored = repo / "var" / "demo"
    ignored.mkdir(parents=True)
    _write(ignored, "runbook.md", "# Runbook\n\nThe api runs on node-1.\n")
    pages = list(MarkdownFolderConnector(ignored).pages(cursor=None))
    assert list(_items(pages)) == ["runbook.md"]
    assert (pages[-1].cursor or "").isdigit()  # an mtime cursor, not a commit
