#!/bin/bash
# Container start for the upstream (official image) variant: map the libpq
# variables the orchestrator sets onto the official image's REDMINE_DB_*
# ones, wait for the database, let the official entrypoint write
# database.yml, make the secret key and migrate while it runs setup.rb (the
# same set-up as the Debian image), then start Puma through it with the same
# settings (one thread, /health) and no second migration.
set -euo pipefail

for v in PGHOST PGUSER PGPASSWORD PGDATABASE; do
	if [ -z "${!v:-}" ]; then
		echo "rttlab redmine-upstream: $v is not set or empty; start the container with PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE" >&2
		exit 1
	fi
done
export REDMINE_DB_POSTGRES="$PGHOST" \
	REDMINE_DB_PORT="${PGPORT:-5432}" \
	REDMINE_DB_USERNAME="$PGUSER" \
	REDMINE_DB_PASSWORD="$PGPASSWORD" \
	REDMINE_DB_DATABASE="$PGDATABASE"

ready="${RTTLAB_READY_FILE:-/run/rttlab/redmine-ready}"
rm -f "$ready"
t0=$(date +%s)

# The official image has no psql/pg_isready: wait for the port instead (the
# rttlab database listens on TCP only once it is ready).
wait_s="${RTTLAB_DB_WAIT_S:-120}"
i=0
until ruby -rsocket -e 'TCPSocket.new(ARGV[0], Integer(ARGV[1])).close' "$PGHOST" "$REDMINE_DB_PORT" 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -ge "$wait_s" ]; then
		echo "rttlab redmine-upstream: database $PGHOST:$REDMINE_DB_PORT did not accept connections within ${wait_s}s" >&2
		exit 1
	fi
	sleep 1
done

/docker-entrypoint.sh rails runner /usr/local/share/rttlab/redmine/setup.rb

echo "rttlab redmine-upstream: set-up done in $(($(date +%s) - t0))s; starting Puma on port ${PORT:-8080}"
export REDMINE_NO_DB_MIGRATE=1
exec /docker-entrypoint.sh bundle exec puma --config /usr/local/share/rttlab/redmine/puma.rb
