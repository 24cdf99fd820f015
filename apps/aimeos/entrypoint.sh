#!/bin/sh
# Container start for the Aimeos shop: point Laravel at the database from the
# libpq variables, wait for it, make the application key if this container
# has none yet, run the migrations and, on a database without the demo
# catalog, `aimeos:setup` with the demo data; then serve with `php artisan
# serve` (PHP's built-in server: one process, one request at a time). Every
# step is idempotent, so a restarted container only re-checks. GET /health
# is a static file written once set-up is done.
set -eu

for v in PGHOST PGUSER PGPASSWORD PGDATABASE; do
	eval "val=\${$v:-}"
	if [ -z "$val" ]; then
		echo "aimeos: $v is not set or empty; start the container with PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE" >&2
		exit 1
	fi
done
export PGPORT="${PGPORT:-5432}"
export DB_CONNECTION=pgsql DB_HOST="$PGHOST" DB_PORT="$PGPORT" \
	DB_DATABASE="$PGDATABASE" DB_USERNAME="$PGUSER" DB_PASSWORD="$PGPASSWORD"

cd /app
rm -f public/health
t0=$(date +%s)
probe=/usr/local/share/rttlab/aimeos/dbcheck.php

wait_s="${RTTLAB_DB_WAIT_S:-120}"
i=0
until php "$probe" wait 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -ge "$wait_s" ]; then
		php "$probe" wait || true
		echo "aimeos: database $PGHOST:$PGPORT did not accept connections within ${wait_s}s" >&2
		exit 1
	fi
	sleep 1
done

if ! grep -q '^APP_KEY=base64:' .env; then
	php artisan key:generate --force --no-interaction
fi

php artisan migrate --force --no-interaction
if [ "$(php "$probe" demo)" = "0" ]; then
	php artisan aimeos:setup --option=setup/default/demo:1 --no-interaction
else
	echo "aimeos: demo catalog already present"
fi
echo "aimeos: $(php "$probe" demo) demo products"

echo ok > public/health
echo "aimeos: set-up done in $(($(date +%s) - t0))s; serving on port ${PORT:-8080}"
exec php artisan serve --host 0.0.0.0 --port "${PORT:-8080}" --no-reload
