"""Where reads go: the primary, or the hot standby chosen for a read-only block.

`tenants.replicas.reading()` picks the database for a block of read-only work (a
search, a context pack, a GET page or API list) and sets it here; the router sends the
ORM's reads of that block there, and raw SQL on the read path asks `read_connection()`.
Writes always go to the primary, inside a read-only block too (a search's log row).

Once the block writes to the primary, its later reads follow to the primary, so a
request reads what it has just written. Outside a block everything is the primary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

# A statement that changes data (a data-modifying WITH included). Transaction control,
# savepoints and SET are not writes; a SELECT of a function that writes would not be
# seen, and none is called on a read path.
_WRITE = re.compile(
    r"^\s*(insert|update|delete|merge|copy|truncate|create|alter|drop|lock|call)\b"
    r"|^\s*with\b.*\b(insert|update|delete|merge)\b",
    re.IGNORECASE | re.DOTALL,
)


@dataclass
class ReadBlock:
    """A read-only block's database, until the block writes to the primary."""

    alias: str
    wrote: bool = False

    @property
    def reads(self) -> str:
        return DEFAULT_DB_ALIAS if self.wrote else self.alias


_BLOCK: ContextVar[ReadBlock | None] = ContextVar("vera_read_block", default=None)
_INCIDENTAL: ContextVar[bool] = ContextVar("vera_incidental_writes", default=False)


def read_alias() -> str:
    """The database the current work reads from: a standby inside a read-only block that
    has not written, else the primary."""
    block = _BLOCK.get()
    return block.reads if block is not None else DEFAULT_DB_ALIAS


def current_block() -> ReadBlock | None:
    return _BLOCK.get()


def read_connection() -> BaseDatabaseWrapper:
    """The connection for raw SQL that only reads (the search's lists, a pack's facts)."""
    return connections[read_alias()]


def _flag_writes(block: ReadBlock) -> Callable[..., Any]:
    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if not block.wrote and _WRITE.match(sql):
            block.wrote = True
        return execute(sql, params, many, context)

    return wrapper


@contextmanager
def reads_from(alias: str) -> Iterator[ReadBlock]:
    """Read from `alias` in this block (the caller has opened its transaction); a write to
    the primary in the block sends the block's later reads to the primary."""
    block = ReadBlock(alias)
    token = _BLOCK.set(block)
    try:
        if alias == DEFAULT_DB_ALIAS:
            yield block
            return
        with connections[DEFAULT_DB_ALIAS].execute_wrapper(_flag_writes(block)):
            yield block
    finally:
        _BLOCK.reset(token)


@dataclass
class WriteTally:
    """Writes seen on one connection: incidental ones, inside read-only blocks (a search's
    log row, which nobody reads back through a standby) or marked `incidental`, and the
    others (what the caller did)."""

    inside_reads: int = 0
    outside_reads: int = 0

    @property
    def only_incidental(self) -> bool:
        """Every write seen was inside a read-only block (and there was one)."""
        return self.inside_reads > 0 and self.outside_reads == 0


@contextmanager
def incidental() -> Iterator[None]:
    """Writes in this block are bookkeeping nobody reads back right after (an API key's
    last use): they send no caller's reads to the primary."""
    token = _INCIDENTAL.set(True)
    try:
        yield
    finally:
        _INCIDENTAL.reset(token)


_TALLY: ContextVar[WriteTally | None] = ContextVar("vera_write_tally", default=None)


def current_tally() -> WriteTally | None:
    """The writes of the transaction in progress, when its tenant context counts them."""
    return _TALLY.get()


@contextmanager
def tally_writes(alias: str = DEFAULT_DB_ALIAS) -> Iterator[WriteTally]:
    """Count the writes sent on `alias`'s connection in this block, inside and outside
    read-only blocks."""
    tally = WriteTally()

    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if _WRITE.match(sql):
            if _BLOCK.get() is None and not _INCIDENTAL.get():
                tally.outside_reads += 1
            else:
                tally.inside_reads += 1
        return execute(sql, params, many, context)

    token = _TALLY.set(tally)
    try:
        with connections[alias].execute_wrapper(wrapper):
            yield tally
    finally:
        _TALLY.reset(token)


class ReadReplicaRouter:
    """Django database router: reads of a read-only block to its standby, the rest (and
    every write, migration and relation) to the primary."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str:
        return read_alias()

    def db_for_write(self, model: type[Any], **hints: Any) -> str:
        # Explicitly the primary: an instance read from a standby is saved to the primary.
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, copied

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # a standby replays the primary's schema
