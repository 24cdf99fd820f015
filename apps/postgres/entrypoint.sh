#!/bin/sh
# Container start: set the rttlab role's password from RTTLAB_DB_PASSWORD on
# a server that listens on the Unix socket only, then replace this shell with
# the real server listening on every address. pg_isready -h 127.0.0.1 thus
# answers 0 only once the final server runs, and the schema and seed were
# loaded when the image was built.
set -eu

if [ -z "${RTTLAB_DB_PASSWORD:-}" ]; then
	echo "rttlab postgres: RTTLAB_DB_PASSWORD is not set or empty; start the container with -e RTTLAB_DB_PASSWORD=<password> (rttlab generates one per run; there is no default)" >&2
	exit 1
fi

conf=/etc/rttlab/postgresql.conf
# pg_ctl -w polls the server over the socket as this role.
export PGUSER=postgres PGDATABASE=postgres

pg_ctl -D "$PGDATA" -w -s -o "-c config_file=$conf -c listen_addresses=''" start
# The password is read from the environment by psql (\getenv), so it never
# appears on a command line; statement tracking and error-statement logging
# are switched off for this session so it lands in no log or statistics view.
psql -X -q -v ON_ERROR_STOP=1 -U postgres -d postgres <<'SQL'
SET pg_stat_statements.track_utility = off;
SET log_min_error_statement = panic;
\getenv rttlab_password RTTLAB_DB_PASSWORD
ALTER ROLE rttlab PASSWORD :'rttlab_password';
SQL
pg_ctl -D "$PGDATA" -w -s -m fast stop

exec postgres -c config_file="$conf" "$@"
