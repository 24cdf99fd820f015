#!/bin/sh
# Container start for Redmine: wait for the database, make the instance's
# secret key if this container has none yet, migrate, run the set-up script
# (default data, REST API, admin API key, 12 projects with 360 issues; see
# setup.rb), then replace this shell with Puma. Every step is idempotent, so a
# restarted container only re-checks. /health answers 200 only after the
# set-up of this start wrote the ready marker.
set -eu

for v in PGHOST PGUSER PGPASSWORD PGDATABASE; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		echo "rttlab redmine: $v is not set or empty; start the container with PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE" >&2
		exit 1
	fi
done
export PGPORT="${PGPORT:-5432}"

ready="${RTTLAB_READY_FILE:-/run/rttlab/redmine-ready}"
rm -f "$ready"
t0=$(date +%s)

# The database container may still be starting: wait up to
# RTTLAB_DB_WAIT_S seconds (default 120) for it to accept connections.
wait_s="${RTTLAB_DB_WAIT_S:-120}"
i=0
until pg_isready -q -t 1 -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d "$PGDATABASE"; do
	i=$((i + 1))
	if [ "$i" -ge "$wait_s" ]; then
		echo "rttlab redmine: database $PGHOST:$PGPORT did not accept connections within ${wait_s}s" >&2
		exit 1
	fi
	sleep 1
done

secret=/etc/redmine/default/secret_key.txt
if [ ! -s "$secret" ]; then
	(umask 027 && ruby -rsecurerandom -e 'puts SecureRandom.hex(64)' > "$secret.tmp" && mv "$secret.tmp" "$secret")
	echo "rttlab redmine: generated a secret_key_base for this container"
fi

cd /usr/share/redmine
# SCHEMA=/dev/null: like Debian's post-install, write no schema dump;
# VERBOSE=false: no line per migration in the log.
SCHEMA=/dev/null VERBOSE=false bin/rake db:migrate
bin/rails runner /usr/local/share/rttlab/redmine/setup.rb

echo "rttlab redmine: set-up done in $(($(date +%s) - t0))s; starting Puma on port ${PORT:-8080}"
exec puma --config /usr/local/share/rttlab/redmine/puma.rb
