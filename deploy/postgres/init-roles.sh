#!/usr/bin/env bash
# First-init script for the postgres image (/docker-entrypoint-initdb.d), run as the
# superuser while the server listens on the local socket only. Creates:
#   vera_owner - owns the database and its schema; runs migrations (and creates test DBs).
#   vera_app   - what web, worker and beat connect as: no superuser, no BYPASSRLS, owns nothing,
#                so row-level security always applies. Data grants come from `migrate`.
#   vera_replication - only when VERA_DB__REPLICATION_PASSWORD is set: streams the WAL to
#                hot standbys (compose profile `standby`); reads no table.
# Passwords travel as psql variables (:'var' quotes them as literals), never spliced into SQL.
set -euo pipefail

: "${VERA_DB__OWNER_PASSWORD:?VERA_DB__OWNER_PASSWORD must be set}"
: "${VERA_DB__APP_PASSWORD:?VERA_DB__APP_PASSWORD must be set}"

psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname postgres \
    -v owner_pw="$VERA_DB__OWNER_PASSWORD" \
    -v app_pw="$VERA_DB__APP_PASSWORD" <<'EOSQL'
CREATE ROLE vera_owner WITH LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS NOCREATEROLE
    PASSWORD :'owner_pw';
CREATE ROLE vera_app WITH LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE
    PASSWORD :'app_pw';
ALTER DATABASE vera OWNER TO vera_owner;
EOSQL

# Extensions need the superuser. template1 too, so databases vera_owner creates later
# (e.g. the test database) have them without further privileges.
for db in vera template1; do
    psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "$db" <<'EOSQL'
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gist;
EOSQL
done

# Hot standbys (optional): a replication role, and replication connections admitted
# with a password from the compose network (the image admits only ordinary ones).
if [ -n "${VERA_DB__REPLICATION_PASSWORD:-}" ]; then
    psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname postgres \
        -v repl_pw="$VERA_DB__REPLICATION_PASSWORD" <<'EOSQL'
CREATE ROLE vera_replication WITH LOGIN REPLICATION NOSUPERUSER NOBYPASSRLS NOCREATEDB
    PASSWORD :'repl_pw';
EOSQL
    echo "host replication vera_replication all scram-sha-256" >> "$PGDATA/pg_hba.conf"
fi
