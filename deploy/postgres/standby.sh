#!/usr/bin/env bash
# Entry point of the optional hot standby (compose profile `standby`), run as the
# postgres user: on an empty data volume, a base backup of the primary over a
# replication connection (role vera_replication, a physical slot so the primary keeps
# the WAL the standby has not received), then PostgreSQL as a streaming hot standby.
# VERA reads from it when VERA_DB__REPLICA_URLS names it (docs/operations.md).
set -euo pipefail

: "${VERA_DB__REPLICATION_PASSWORD:?VERA_DB__REPLICATION_PASSWORD must be set}"
PRIMARY_HOST="${VERA_STANDBY__PRIMARY_HOST:-postgres}"
SLOT="${VERA_STANDBY__SLOT:-vera_standby}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    until pg_isready -h "$PRIMARY_HOST" -U vera_replication -d postgres >/dev/null; do
        echo "standby: waiting for the primary at $PRIMARY_HOST"
        sleep 2
    done
    export PGPASSWORD="$VERA_DB__REPLICATION_PASSWORD"
    backup=(pg_basebackup -h "$PRIMARY_HOST" -U vera_replication -D "$PGDATA" -R -X stream
            -S "$SLOT" --checkpoint=fast --no-password)
    # The slot survives a standby rebuilt on a new volume: create it only the first time.
    if ! "${backup[@]}" -C; then
        rm -rf "${PGDATA:?}"/*
        "${backup[@]}"
    fi
    unset PGPASSWORD
    chmod 700 "$PGDATA"
fi

exec postgres -c hot_standby=on -c hot_standby_feedback=on \
    -c shared_buffers="${POSTGRES_SHARED_BUFFERS:-1GB}"
