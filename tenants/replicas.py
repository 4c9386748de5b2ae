"""Hot standbys serve read-only work: which one may, how far behind each is, and when not.

PostgreSQL streaming replication keeps each standby a byte-for-byte copy of the primary,
a little behind. `reading(principal)` runs a block of read-only work (a search, a
context pack, a GET page or API list) on a standby when one is configured
(`VERA_DB__REPLICA_URLS`) and fit to serve it, else on the primary, never with an error
of the standby's:

- **Down**: a standby that refuses a connection or a query is skipped for
  `VERA_DB__REPLICA_RETRY_S` seconds; a block whose standby fails mid-way is run again
  on the primary (`read_only`).
- **Lagging**: one whose replay is more than `VERA_DB__REPLICA_MAX_LAG_S` seconds behind
  the primary is skipped until it catches up.
- **Read-your-writes**: a transaction of a caller's that wrote records the primary's WAL
  position after its commit (in the cache, per user or API key); that caller's next
  reads go to a standby only once it has replayed that far, else to the primary. Work
  that has written in its own transaction reads the primary.

Row-level security holds on a standby exactly as on the primary: the block runs in a
read-only transaction with the caller's groups set (`rls.standby_context`).

Each process checks a standby at most every `VERA_DB__REPLICA_CHECK_S` seconds (one
query to it, one to the primary); `states()` is what health reports.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

from common.reads import current_block, current_tally, reads_from
from tenants import rls
from tenants.domain.access import Principal

logger = logging.getLogger(__name__)
_FAILED = (OperationalError, InterfaceError)


@dataclass(frozen=True)
class ReplicaState:
    """What the last check of one standby found."""

    alias: str
    up: bool
    lag_s: float | None = None  # seconds of the primary's history it has not replayed
    replay_lsn: int = 0
    checked: float = 0.0  # time.monotonic() of the check
    problem: str = ""

    def serves(self, max_lag_s: float) -> bool:
        return self.up and self.lag_s is not None and self.lag_s <= max_lag_s

    def as_dict(self) -> dict[str, object]:
        return {
            "alias": self.alias,
            "up": self.up,
            "lag_s": None if self.lag_s is None else round(self.lag_s, 3),
            "replay_lsn": lsn_text(self.replay_lsn) if self.up else None,
            "problem": self.problem,
        }


_states: dict[str, ReplicaState] = {}
_lock = threading.Lock()
_turn = itertools.count()


# Told of each choice (the alias serving a block) and each check (alias, lag or None
# when down): the composition root connects its metrics here (vera/apps.py).
_served: list[Callable[[str], None]] = []
_checked: list[Callable[[str, float | None], None]] = []


def observe(served: Callable[[str], None], checked: Callable[[str, float | None], None]) -> None:
    """Call `served(alias)` for each block of reads, `checked(alias, lag)` for each check."""
    if served not in _served:
        _served.append(served)
    if checked not in _checked:
        _checked.append(checked)


def configured() -> list[str]:
    """The database aliases of the standbys that serve reads (none unless configured)."""
    return list(getattr(settings, "VERA_DB__REPLICAS", []))


def lsn(text: str | None) -> int:
    """A WAL position ('16/B374D848') as a number, to compare."""
    if not text:
        return 0
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) + int(low, 16)


def lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"


def _primary_lsn() -> int:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        row = cursor.fetchone()
    return lsn(row[0] if row else None)


def probe(alias: str) -> ReplicaState:
    """Ask the standby how far it has replayed and how far behind the primary that is."""
    now = time.monotonic()
    try:
        primary = _primary_lsn()
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text, "
                "extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())"
            )
            row = cursor.fetchone()
    except _FAILED as error:
        connections[alias].close()
        return ReplicaState(alias, up=False, checked=now, problem=_reason(error))
    in_recovery, replayed, since_last_replay = row if row else (False, None, None)
    if not in_recovery:
        # Promoted, or pointed at a primary: it no longer follows this one.
        return ReplicaState(alias, up=False, checked=now, problem="not a standby (not in recovery)")
    position = lsn(replayed)
    # Caught up with everything the primary had written when asked: no lag. Behind: the
    # time since the last transaction it replayed (an upper bound of what it misses).
    lag = 0.0 if position >= primary else float(since_last_replay or 0.0)
    return ReplicaState(alias, up=True, lag_s=lag, replay_lsn=position, checked=now)


def _reason(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def state(alias: str, *, fresh: bool = False) -> ReplicaState:
    """The standby's state, checked again when the last check is older than allowed (a
    standby found down is left alone for the retry interval)."""
    with _lock:
        known = _states.get(alias)
    if known is not None and not fresh:
        age = time.monotonic() - known.checked
        wait = settings.VERA_DB__REPLICA_CHECK_S if known.up else settings.VERA_DB__REPLICA_RETRY_S
        if age < wait:
            return known
    found = probe(alias)
    for checked in _checked:
        checked(alias, found.lag_s if found.up else None)
    if not found.up and (known is None or known.up):
        logger.warning("read replica %s is unavailable (%s); reads go to the primary",
                       alias, found.problem)  # fmt: skip
    with _lock:
        _states[alias] = found
    return found


def states() -> list[ReplicaState]:
    """Every configured standby, as health reports it (checked now)."""
    return [state(alias, fresh=True) for alias in configured()]


def mark_down(alias: str, error: Exception) -> None:
    with _lock:
        _states[alias] = ReplicaState(alias, up=False, checked=time.monotonic(),
                                      problem=_reason(error))  # fmt: skip
    logger.warning("read replica %s failed (%s); reads go to the primary", alias, _reason(error))


def forget() -> None:
    """Drop every check (tests, and a process that was reconfigured)."""
    with _lock:
        _states.clear()


# --- Read-your-writes -----------------------------------------------------------------


def _writer(principal: Principal) -> str | None:
    if principal.api_key_id is not None:
        return f"key:{principal.api_key_id}"
    if principal.user_id is not None:
        return f"user:{principal.user_id}"
    return None


def _written_key(writer: str) -> str:
    return f"replicas:written:{writer}"


def remember_write(principal: Principal) -> None:
    """After a caller's transaction that wrote has committed: its reads wait for this."""
    writer = _writer(principal)
    if writer is None:
        return
    try:
        position = _primary_lsn()
        key = _written_key(writer)
        if position > int(cache.get(key) or 0):
            cache.set(key, position, timeout=settings.VERA_DB__REPLICA_WRITE_MEMORY_S)
    except Exception:  # the cache is down: so are its reads, and then reads go to the primary
        logger.warning("could not record %s's write for read-your-writes", writer)


def written_at(principal: Principal) -> int | None:
    """The WAL position the caller's reads must see (0: nothing recent), None if unknown."""
    writer = _writer(principal)
    if writer is None:
        return 0
    try:
        return int(cache.get(_written_key(writer)) or 0)
    except Exception:  # the cache is down: not known, so the primary
        return None


def install() -> None:
    """Record each caller's committed writes while standbys serve reads (VeraConfig)."""
    rls.on_write_committed(lambda: bool(configured()), remember_write)


# --- Choosing -------------------------------------------------------------------------


def _own_uncommitted_write() -> bool:
    """The work in progress wrote in its still-open transaction on the primary."""
    connection = connections[DEFAULT_DB_ALIAS]
    if not connection.in_atomic_block:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id_if_assigned() IS NOT NULL")
        row = cursor.fetchone()
    return bool(row and row[0])


def choose(principal: Principal) -> tuple[str, str]:
    """The database to read from for `principal` now, and why."""
    replicas = configured()
    if not replicas:
        return DEFAULT_DB_ALIAS, "no standby configured"
    tally = current_tally()
    wrote = tally.outside_reads > 0 if tally is not None else _own_uncommitted_write()
    if wrote:
        return DEFAULT_DB_ALIAS, "this transaction has written"
    needed = written_at(principal)
    if needed is None:
        return DEFAULT_DB_ALIAS, "the caller's last write is not known"
    start = next(_turn) % len(replicas)
    reasons = []
    for alias in replicas[start:] + replicas[:start]:
        found = state(alias)
        if not found.serves(settings.VERA_DB__REPLICA_MAX_LAG_S):
            reasons.append(f"{alias}: {found.problem or f'{found.lag_s:.1f} s behind'}")
            continue
        if found.replay_lsn < needed:
            found = state(alias, fresh=True)
            if found.replay_lsn < needed or not found.up:
                reasons.append(f"{alias}: has not replayed the caller's last write")
                continue
        return alias, "standby"
    return DEFAULT_DB_ALIAS, "; ".join(reasons)


@contextmanager
def reading(principal: Principal) -> Iterator[str]:
    """Run the block's reads on a standby fit to serve `principal`, else on the primary;
    yields the alias read from. Writes in the block go to the primary, and the block's
    later reads with them. A block inside another reads where the outer one does, with
    its own principal's groups (a search narrowed to a scope inside a GET request)."""
    block = current_block()
    if block is not None:
        alias, nested = block.reads, True
    else:
        (alias, _why), nested = choose(principal), False
        for served in _served:
            served(alias)
    if alias == DEFAULT_DB_ALIAS:
        if nested:
            yield alias
            return
        with reads_from(alias):
            yield alias
        return
    standby = ExitStack()
    try:
        standby.enter_context(rls.standby_context(principal, using=alias))
    except _FAILED as error:
        mark_down(alias, error)
        with reads_from(DEFAULT_DB_ALIAS):
            yield DEFAULT_DB_ALIAS
        return
    with standby, nullcontext() if nested else reads_from(alias):
        yield alias


def read_only[T](principal: Principal, work: Callable[[], T]) -> T:
    """`work()` read on a standby when one may serve it; run again on the primary when
    the standby fails during it, so a standby going away costs time, never an error."""
    with reading(principal) as alias:
        if alias == DEFAULT_DB_ALIAS:
            return work()
        try:
            return work()
        except _FAILED as error:
            used = connections[alias]
            if used.connection is not None and used.is_usable():
                raise  # the standby is fine: the error is the primary's or the work's
            mark_down(alias, error)
            with reads_from(DEFAULT_DB_ALIAS):
                return work()


# --- Requests -------------------------------------------------------------------------

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_REQUEST_READS = "_vera_replica_reads"


@contextmanager
def request_reads(request: object, principal: Principal) -> Iterator[None]:
    """Around a request (TenantContextMiddleware): a GET page or API list of a signed-in
    caller reads on a standby; a caller authenticated later (an API key, an OIDC token)
    gets its block from `read_request` when it is known. Unsafe methods read the primary."""
    if not configured() or getattr(request, "method", None) not in SAFE_METHODS:
        yield
        return
    with ExitStack() as stack:
        setattr(request, _REQUEST_READS, stack)
        if principal.user_id is not None or principal.api_key_id is not None:
            stack.enter_context(reading(principal))
        yield


def read_request(request: object, principal: Principal) -> None:
    """The request's caller is now known (DRF authentication): its reads go to a standby
    for the rest of a GET request, as `request_reads` does for a signed-in caller."""
    stack = getattr(request, _REQUEST_READS, None)
    if stack is not None:
        # Inside the signed-in caller's block too: the standby then shows this principal's
        # groups, as activate() made the primary show them.
        stack.enter_context(reading(principal))
