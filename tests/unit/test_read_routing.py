"""The pure parts of reading on standbys: WAL positions, what counts as a write, the
router's answers inside and outside a read-only block, and when a standby serves."""

from __future__ import annotations

import pytest

from common.reads import _WRITE, ReadReplicaRouter, WriteTally, read_alias, reads_from
from tenants.replicas import ReplicaState, lsn, lsn_text


@pytest.mark.parametrize(
    ("text", "value"),
    [("0/0", 0), ("0/3000000", 0x3000000), ("16/B374D848", (0x16 << 32) + 0xB374D848)],
)
def test_wal_positions_compare_as_numbers(text: str, value: int) -> None:
    assert lsn(text) == value
    assert lsn_text(value) == text
    assert lsn(None) == 0


def test_a_later_position_is_greater_across_the_high_word() -> None:
    assert lsn("1/0") > lsn("0/FFFFFFFF")


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO t VALUES (1)",
        "  update t set a = 1",
        "DELETE FROM t",
        "WITH moved AS (DELETE FROM t RETURNING *) INSERT INTO u SELECT * FROM moved",
        "COPY t FROM STDIN",
        "TRUNCATE t",
        "CREATE TEMP TABLE x (a int)",
        "LOCK TABLE t",
    ],
)
def test_writes_are_seen(sql: str) -> None:
    assert _WRITE.match(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "WITH m AS MATERIALIZED (SELECT 1) SELECT * FROM m",
        "SAVEPOINT s1",
        "RELEASE SAVEPOINT s1",
        "ROLLBACK TO SAVEPOINT s1",
        "SET LOCAL hnsw.iterative_scan = relaxed_order",
        "SELECT set_config('vera.group_ids', 'w:1', true)",
        "SELECT * FROM t WHERE note = 'insert here'",
    ],
)
def test_reads_and_transaction_control_are_not_writes(sql: str) -> None:
    assert not _WRITE.match(sql)


def test_only_incidental_needs_an_incidental_write_and_no_other() -> None:
    assert not WriteTally().only_incidental
    assert WriteTally(inside_reads=2).only_incidental
    assert not WriteTally(inside_reads=2, outside_reads=1).only_incidental


def test_the_router_reads_the_blocks_database_and_writes_the_primary() -> None:
    router = ReadReplicaRouter()
    assert router.db_for_read(object) == "default"
    with reads_from("replica_1") as block:
        assert read_alias() == router.db_for_read(object) == "replica_1"
        assert router.db_for_write(object) == "default"
        block.wrote = True  # a write to the primary: the block's later reads follow it
        assert router.db_for_read(object) == "default"
    assert read_alias() == "default"
    assert router.allow_migrate("default", "curation")
    assert not router.allow_migrate("replica_1", "curation")


def test_a_standby_serves_when_up_and_within_the_bound() -> None:
    assert ReplicaState("replica_1", up=True, lag_s=0.0).serves(5)
    assert ReplicaState("replica_1", up=True, lag_s=5.0).serves(5)
    assert not ReplicaState("replica_1", up=True, lag_s=5.1).serves(5)
    assert not ReplicaState("replica_1", up=False, problem="connection refused").serves(5)
