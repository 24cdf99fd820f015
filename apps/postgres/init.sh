#!/bin/sh
# Build-time initialisation of the rttlab database (runs as OS user postgres
# during `docker build`): a fresh cluster, the rttlab role and database, the
# pg_stat_statements extension, and the feed schema and seed. The server used
# here listens on the Unix socket only and is stopped cleanly at the end.
set -eu

conf=/etc/rttlab/postgresql.conf
# pg_ctl -w polls the server over the socket as this role.
export PGUSER=postgres PGDATABASE=postgres
share=/usr/local/share/rttlab

initdb -D "$PGDATA" --username=postgres --encoding=UTF8 --locale=C.UTF-8 \
	--auth-local=peer --auth-host=scram-sha-256
# The server reads its configuration from /etc/rttlab; drop initdb's copies
# so nobody edits a file that is not used.
rm -f "$PGDATA/postgresql.conf" "$PGDATA/pg_hba.conf" "$PGDATA/pg_ident.conf"

pg_ctl -D "$PGDATA" -w -o "-c config_file=$conf -c listen_addresses=''" start

psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres <<'SQL'
CREATE ROLE rttlab LOGIN;
CREATE DATABASE rttlab OWNER rttlab;
SQL
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d rttlab \
	-c 'CREATE EXTENSION pg_stat_statements' \
	-c 'SET ROLE rttlab' \
	-f "$share/schema.sql" \
	-c 'RESET ROLE' \
	-c 'VACUUM (FREEZE, ANALYZE)' \
	-c 'SELECT pg_stat_statements_reset()' >/dev/null

echo "rttlab: $(psql -X -At -U postgres -d rttlab -c "SELECT count(*) FROM accounts") account(s)," \
	"$(psql -X -At -U postgres -d rttlab -c "SELECT count(*) FROM articles") articles," \
	"$(psql -X -At -U postgres -d rttlab -c "SELECT count(*) FROM feedback") feedback rows"

pg_ctl -D "$PGDATA" -w -m fast stop
