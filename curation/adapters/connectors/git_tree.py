"""Read-only questions to a git work tree through the git CLI (no shell, no writes)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from curation.domain.errors import ConnectorError

# A full SHA-1 or SHA-256 object name; anything else (an option, a ref) is never passed on.
COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_TIMEOUT_S = 120


class GitTree:
    """A folder inside a git work tree; paths it returns are POSIX and relative to it."""

    def __init__(self, folder: Path, git: str) -> None:
        self._folder = folder
        self._git = git

    @classmethod
    def open(cls, folder: Path) -> GitTree | None:
        """The tree if `folder` is inside a git work tree with at least one commit, else None.

        A git-ignored folder inside a checkout (e.g. `var/`) is no part of its history:
        read by commits it would show nothing, so it is read by mtime instead (None).
        """
        git = shutil.which("git")
        if git is None:
            return None
        tree = cls(folder, git)
        inside = tree._run("rev-parse", "--is-inside-work-tree", check=False)
        if inside is None or inside.strip() != b"true":
            return None
        if tree._run("check-ignore", "-q", ".", check=False) is not None:
            return None
        return tree if tree._run("rev-parse", "--verify", "-q", "HEAD", check=False) else None

    def head(self) -> str:
        """The commit HEAD points at."""
        return self._text("rev-parse", "--verify", "HEAD^{commit}")

    def has_commit(self, name: str) -> bool:
        """Whether `name` is a full object name of a commit present in this repository."""
        if not COMMIT.match(name):
            return False
        return self._run("cat-file", "-e", f"{name}^{{commit}}", check=False) is not None

    def files_at(self, commit: str) -> list[str]:
        """Every file of `commit` under the folder."""
        return self._paths("ls-tree", "-r", "-z", "--name-only", commit)

    def changed_between(self, old: str, new: str) -> list[str]:
        """Files under the folder added or modified from `old` to `new` (deletions left out)."""
        # --no-renames: a rename is then a deletion (ignored) plus an addition (fetched).
        return self._paths(
            "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", "--relative", old, new
        )

    def _paths(self, *args: str) -> list[str]:
        output = self._run(*args, check=True) or b""
        # Names are bytes in git; surrogateescape keeps undecodable ones round-trippable.
        return [name.decode("utf-8", "surrogateescape") for name in output.split(b"\0") if name]

    def _text(self, *args: str) -> str:
        return (self._run(*args, check=True) or b"").decode().strip()

    def _run(self, *args: str, check: bool) -> bytes | None:
        """stdout of `git -C folder args`; None on failure unless `check` makes it raise."""
        try:
            done = subprocess.run(  # noqa: S603 - fixed argv, no shell; arguments are validated
                [self._git, "-C", str(self._folder), *args],
                capture_output=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            if check:
                raise ConnectorError(f"git {args[0]} failed: {exc}") from exc
            return None
        if done.returncode != 0:
            if check:
                detail = done.stderr.decode(errors="replace").strip().splitlines()
                raise ConnectorError(
                    f"git {args[0]} failed: {detail[-1] if detail else done.returncode}"
                )
            return None
        return done.stdout
