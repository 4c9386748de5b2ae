"""Row-level security plumbing: the one place that tells Postgres whose rows are visible.

Every knowledge table carries `group_id`; `enable_rls()` (used in migrations) turns
on *forced* row-level security with a policy that admits only the group ids in the
transaction-local setting `vera.group_ids`. No setting means no rows.

At run time the setting is written only here, by:
- `activate()`: the request's own transaction (middleware, DRF authentication);
- `tenant_context()`: a block of its own (Celery tasks, management commands, services
  that act for a principal other than the request's).
Both use `set_config(..., is_local => true)`, so the value dies with the transaction
and a persistent connection carries nothing into the next request.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from contextvars import ContextVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, migrations, transaction
from opentelemetry import trace

from common.reads import current_block, tally_writes
from tenants.domain.access import Principal

GROUPS_SETTING = "vera.group_ids"
# Groups whose published knowledge the principal reads (the scopes above its own), and
# nothing else of them: the tables that hold knowledge admit these rows read-only, and
# only what was published (`published_reads`).
READ_GROUPS_SETTING = "vera.read_groups"
KEY_LOOKUP_SETTING = "vera.api_key_prefix"
INVITATION_LOOKUP_SETTING = "vera.invitation"

ALLOWED_GROUPS_FUNCTION = """
CREATE OR REPLACE FUNCTION vera_allowed_groups() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        string_to_array(nullif(current_setting('vera.group_ids', true), ''), ','),
        '{}'::text[]
    )
$$;
"""


READ_GROUPS_FUNCTION = """
CREATE OR REPLACE FUNCTION vera_read_groups() RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        string_to_array(nullif(current_setting('vera.read_groups', true), ''), ','),
        '{}'::text[]
    )
$$;
"""


def install_read_function() -> migrations.RunSQL:
    """Migration operation creating `vera_read_groups()`, which `published_reads` uses."""
    return migrations.RunSQL(
        READ_GROUPS_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS vera_read_groups()"
    )


def published_reads(table: str, *, published: str = "true") -> migrations.RunSQL:
    """Migration operation: the groups in `vera.read_groups` may read `table`'s rows for
    which `published` (SQL on the row) holds; never write them. A second permissive
    SELECT policy, so it only ever adds rows to what `enable_rls` admits."""
    forward = f"""
        CREATE POLICY {table}_published_read ON {table} FOR SELECT
        USING (group_id = ANY ((SELECT vera_read_groups())::text[]) AND ({published}));
    """
    return migrations.RunSQL(
        forward, reverse_sql=f"DROP POLICY IF EXISTS {table}_published_read ON {table}"
    )


def install_function() -> migrations.RunSQL:
    """Migration operation creating `vera_allowed_groups()`, which every policy uses."""
    return migrations.RunSQL(
        ALLOWED_GROUPS_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS vera_allowed_groups()"
    )


def enable_rls(table: str, *, also_visible_when: str | None = None) -> migrations.RunSQL:
    """Migration operation: enable and FORCE RLS on `table`, policy on the allowed groups.

    `also_visible_when` widens visibility (never writes) with one more SQL condition,
    e.g. the API-key prefix lookup that happens before a principal exists.
    """
    # `(SELECT ...)` makes the planner evaluate the setting once per statement.
    allowed = "group_id = ANY ((SELECT vera_allowed_groups())::text[])"
    using = f"{allowed} OR ({also_visible_when})" if also_visible_when else allowed
    forward = f"""
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
        CREATE POLICY {table}_tenant_read ON {table} FOR SELECT USING ({using});
        CREATE POLICY {table}_tenant_insert ON {table} FOR INSERT WITH CHECK ({allowed});
        CREATE POLICY {table}_tenant_update ON {table} FOR UPDATE
            USING ({using}) WITH CHECK ({allowed});
        CREATE POLICY {table}_tenant_delete ON {table} FOR DELETE USING ({allowed});
    """
    reverse = f"""
        DROP POLICY IF EXISTS {table}_tenant_read ON {table};
        DROP POLICY IF EXISTS {table}_tenant_insert ON {table};
        DROP POLICY IF EXISTS {table}_tenant_update ON {table};
        DROP POLICY IF EXISTS {table}_tenant_delete ON {table};
        ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY;
        ALTER TABLE {table} DISABLE ROW LEVEL SECURITY;
    """
    return migrations.RunSQL(forward, reverse_sql=reverse)


def system_reads(*tables: str) -> migrations.RunSQL:
    """Migration operation: the role that migrates (the tables' owner) may read every row
    of `tables`, so the system finders it owns (`system_finder`) see all tenants' rows.

    The application role never is that role (it cannot `SET ROLE` to it, see
    test_database_roles), so no web, worker or MCP query gains a row from these policies;
    the owner could switch RLS off on its own tables anyway. Read-only: writes stay under
    the tenant policies for every role.
    """
    forward = tuple(
        f"CREATE POLICY {table}_system_read ON {table} FOR SELECT TO CURRENT_USER USING (true)"
        for table in tables
    )
    reverse = tuple(f"DROP POLICY IF EXISTS {table}_system_read ON {table}" for table in tables)
    return migrations.RunSQL(forward, reverse_sql=reverse)


def system_finder(signature: str, *, returns: str, body: str) -> migrations.RunSQL:
    """Migration operation: a SECURITY DEFINER SQL function through which a system job finds
    the tenants that have work (group ids, row ids, counts: never content) across every
    group, without a tenant context listing all of them. The job then does the work itself
    in a tenant context of just those groups, under the ordinary policies.

    The body is SQL-standard (`BEGIN ATOMIC`): its tables and operators are bound when
    the function is created, so no search_path of the caller's can redirect them.
    """
    name = signature.split("(", 1)[0]
    create = (
        f"CREATE FUNCTION {signature} RETURNS {returns} LANGUAGE sql STABLE SECURITY DEFINER "
        f"SET search_path = pg_catalog, pg_temp BEGIN ATOMIC {body}; END"
    )
    drop = f"DROP FUNCTION IF EXISTS {name}"
    return migrations.RunSQL((create,), reverse_sql=(drop,))


# The groups the current work is done for, as set in Postgres, mirrored in the process for
# what must not ask Postgres per call: the provider meter attributes each batch's cost to
# a workspace (vera/wiring.py). Reset with the block that set it, like the setting.
_USAGE_GROUPS: ContextVar[frozenset[str]] = ContextVar("vera_usage_groups", default=frozenset())


_VISIBLE_GROUPS: ContextVar[frozenset[str]] = ContextVar("vera_visible_groups", default=frozenset())


def visible_groups() -> frozenset[str]:
    """Every group the active principal sees rows of (its own and those it reads the
    published knowledge of): for a query to name them, so the planner can use an index
    that leads with the group, while row-level security stays the guard."""
    return _VISIBLE_GROUPS.get()


def usage_groups() -> frozenset[str]:
    """The groups the work in progress is for: the active principal's, or one named group."""
    return _USAGE_GROUPS.get()


@contextmanager
def usage_for(group_id: str) -> Iterator[None]:
    """Attribute provider usage in this block to `group_id` alone (a batch of one group's)."""
    token = _USAGE_GROUPS.set(frozenset([group_id]))
    try:
        yield
    finally:
        _USAGE_GROUPS.reset(token)


def _set(setting: str, value: str, *, using: str) -> None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [setting, value])


def _get(setting: str, *, using: str) -> str:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT coalesce(current_setting(%s, true), '')", [setting])
        row = cursor.fetchone()
    return str(row[0]) if row else ""


def _encode(principal: Principal) -> str:
    return ",".join(sorted(principal.group_ids))


def _encode_reads(principal: Principal) -> str:
    return ",".join(sorted(principal.reads - principal.group_ids))


def _set_both(groups: str, reads: str, *, using: str) -> tuple[str, str]:
    """Set the groups and the read-only groups for the transaction, in one round trip;
    returns their previous values (read before either is set)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            "WITH previous AS MATERIALIZED (SELECT coalesce(current_setting(%s, true), '') AS g,"
            " coalesce(current_setting(%s, true), '') AS r) "
            "SELECT g, r, set_config(%s, %s, true), set_config(%s, %s, true) FROM previous",
            [GROUPS_SETTING, READ_GROUPS_SETTING, GROUPS_SETTING, groups,
             READ_GROUPS_SETTING, reads],
        )  # fmt: skip
        row = cursor.fetchone()
    return (str(row[0]), str(row[1])) if row else ("", "")


def activate(principal: Principal, *, using: str = "default") -> None:
    """Make `principal`'s groups visible for the rest of the current transaction."""
    if not connections[using].in_atomic_block:
        raise RuntimeError("rls.activate() needs an open transaction (use tenant_context)")
    _set_both(_encode(principal), _encode_reads(principal), using=using)
    block = current_block()
    if using == DEFAULT_DB_ALIAS and block is not None and block.alias != DEFAULT_DB_ALIAS:
        # The request reads on a standby: the same groups there (its transaction's end,
        # with the request's, restores nothing that could leak).
        shows = (block.alias, _encode(principal), _encode_reads(principal))
        _set_both(shows[1], shows[2], using=block.alias)
        _STANDBY_SHOWS.set(shows)
    # Not reset here: the request's tenant_context (TenantContextMiddleware) encloses this
    # and restores the groups on its exit.
    _ACTING.set(principal)
    _USAGE_GROUPS.set(principal.group_ids)
    _VISIBLE_GROUPS.set(principal.group_ids | principal.reads)
    trace_groups(principal)


def trace_groups(principal: Principal) -> None:
    """Name the caller's groups on the current span (the request's, when tracing is on).

    A span attribute, never a metric label: group ids are unbounded.
    """
    trace.get_current_span().set_attribute("vera.group_ids", sorted(principal.group_ids))


@contextmanager
def tenant_context(principal: Principal, *, using: str = "default") -> Iterator[Principal]:
    """A transaction (or savepoint) in which Postgres shows exactly `principal`'s groups.

    On normal exit the previous setting is restored, so an enclosing transaction
    continues with its own principal; on error the savepoint rollback undoes it, and so
    it does when the block was marked for rollback (a refused write answered with a
    4xx): the setting is transaction-local and goes with the rollback, and no query may
    run in such a block.
    """
    # Outermost: this block's own commit (or rollback) ends the transaction. Not so under
    # autocommit off, where Django's outermost block leaves the transaction open.
    connection = connections[using]
    outermost = not connection.in_atomic_block and connection.get_autocommit()
    # While standbys serve reads: who must be told of a committed write, and the writes.
    told = [hook for wanted, hook in _WROTE if wanted()] if outermost else []
    with (
        transaction.atomic(using=using),
        tally_writes(using) if told else nullcontext() as tally,
        _on_standby_too(principal, using=using),
    ):
        previous = _set_both(_encode(principal), _encode_reads(principal), using=using)
        token = _USAGE_GROUPS.set(principal.group_ids)
        visible = _VISIBLE_GROUPS.set(principal.group_ids | principal.reads)
        acting = _ACTING.set(principal)
        try:
            yield principal
        finally:
            actor = _ACTING.get() or principal  # activate()'s inside, if it ran
            _ACTING.reset(acting)
            _VISIBLE_GROUPS.reset(visible)
            _USAGE_GROUPS.reset(token)
        # The outermost block's commit ends the setting with the transaction: nothing to
        # restore (a round trip saved on every request and job).
        if not outermost and not transaction.get_rollback(using=using):
            _set_both(*previous, using=using)
        # A transaction whose only writes were incidental to reading (a search's log row)
        # tells nobody: its caller's next search need not wait for a standby to replay it.
        if told and (
            transaction.get_rollback(using=using)
            or (tally is not None and tally.only_incidental)
            or not _has_written(using)
        ):
            told = []
    for hook in told:  # committed
        hook(actor)


@contextmanager
def _on_standby_too(principal: Principal, *, using: str) -> Iterator[None]:
    """Inside a block that reads on a standby, a tenant context on the primary (a scope
    narrowed for one search or list) narrows the standby's reads alike, until its end."""
    block = current_block()
    if using != DEFAULT_DB_ALIAS or block is None or block.alias == DEFAULT_DB_ALIAS:
        yield
        return
    with standby_context(principal, using=block.alias):
        yield


# Told when an outermost tenant_context committed a transaction that wrote (set by
# tenants.replicas while standbys serve reads, so a caller's next read waits for its write).
_WROTE: list[tuple[Callable[[], bool], Callable[[Principal], None]]] = []
_ACTING: ContextVar[Principal | None] = ContextVar("vera_acting_principal", default=None)


def on_write_committed(wanted: Callable[[], bool], hook: Callable[[Principal], None]) -> None:
    """While `wanted()`, call `hook(principal)` after each outermost tenant_context that
    wrote has committed, with the principal that acted in it (activate()'s, if called)."""
    if (wanted, hook) not in _WROTE:
        _WROTE.append((wanted, hook))


def _has_written(using: str) -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT pg_current_xact_id_if_assigned() IS NOT NULL")
        row = cursor.fetchone()
    return bool(row and row[0])


# What the current standby transaction shows: (alias, groups, read groups).
_STANDBY_SHOWS: ContextVar[tuple[str, str, str] | None] = ContextVar(
    "vera_standby_shows", default=None
)


@contextmanager
def standby_context(principal: Principal, *, using: str) -> Iterator[Principal]:
    """A read-only transaction on a hot standby in which Postgres shows exactly
    `principal`'s groups, as `tenant_context` does on the primary (the same
    transaction-local settings; a standby replays the policies with the schema).

    Always rolled back: it wrote nothing. Once the block's own work is done, an error of
    the standby's while ending it (the standby went away) is not the caller's: it is
    dropped with the connection.
    """
    shows = (using, _encode(principal), _encode_reads(principal))
    if _STANDBY_SHOWS.get() == shows:  # already so (a narrowing that narrowed nothing)
        yield principal
        return
    atomic = transaction.atomic(using=using)
    atomic.__enter__()
    try:
        _set_both(shows[1], shows[2], using=using)
    except BaseException:
        with suppress(DatabaseError):
            atomic.__exit__(*sys.exc_info())
        connections[using].close()
        raise
    token = _STANDBY_SHOWS.set(shows)
    try:
        yield principal
    except BaseException:
        with suppress(DatabaseError):
            atomic.__exit__(*sys.exc_info())
        raise
    finally:
        _STANDBY_SHOWS.reset(token)
    transaction.set_rollback(True, using=using)
    try:
        atomic.__exit__(None, None, None)
    except DatabaseError:
        connections[using].close()


@contextmanager
def api_key_lookup(prefix: str, *, using: str = "default") -> Iterator[None]:
    """Let the current transaction see the one API key row with this public prefix.

    No savepoint of its own inside a transaction (two round trips saved per request): an
    error in the block breaks the enclosing transaction, which rolls back with the setting.
    """
    with transaction.atomic(using=using, savepoint=False):
        _set(KEY_LOOKUP_SETTING, prefix, using=using)
        yield
        _set(KEY_LOOKUP_SETTING, "", using=using)


@contextmanager
def invitation_lookup(token_hash: str, *, using: str = "default") -> Iterator[None]:
    """Let the current transaction see the one invitation with this token hash (a person
    following its link has no role in its scope yet)."""
    with transaction.atomic(using=using):
        _set(INVITATION_LOOKUP_SETTING, token_hash, using=using)
        yield
        _set(INVITATION_LOOKUP_SETTING, "", using=using)


def current_group_ids(*, using: str = "default") -> list[str]:
    """The group ids Postgres currently admits (for diagnostics and tests)."""
    value = _get(GROUPS_SETTING, using=using)
    return value.split(",") if value else []
