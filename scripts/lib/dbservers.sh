# Sourced by the bench scripts (not run): a MariaDB and a PostgreSQL of
# their own, on free loopback ports, with their data in a temporary
# directory under $1 (/dev/shm or /tmp), each with a database and user
# sbtest (password sbpass, a bench's throw-away credential).
#
#   db_servers_start /dev/shm    # sets DB_TMP, MYSQL=(...), PGSQL=(...)
#   db_servers_stop              # stops both, removes DB_TMP (call it from a trap)
#
# MYSQL and PGSQL are the --db-driver options both sysbench and virtperf take.
DB_TMP=
DB_MARIA_PID=
db_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
db_free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
db_servers_check() {
  DB_PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$DB_PGBIN/initdb" ] || { echo "PostgreSQL not found: apt-get install postgresql" >&2; exit 2; }
  [ -x /usr/sbin/mariadbd ] || { echo "MariaDB not found: apt-get install mariadb-server" >&2; exit 2; }
}
db_servers_start() {
  db_servers_check
  DB_TMP=$(mktemp -d "$1/virtperf-bench-db.XXXXXX")
  chmod 755 "$DB_TMP"
  # PostgreSQL: the server refuses root, so its files belong to postgres.
  local pgport myport
  pgport=$(db_free_port)
  if [ "$(id -u)" = 0 ]; then chown postgres: "$DB_TMP"; fi
  db_as_pg "$DB_PGBIN/initdb" -U postgres --auth-local=trust --auth-host=scram-sha-256 -D "$DB_TMP/pg" >/dev/null
  db_as_pg "$DB_PGBIN/pg_ctl" -w -t 60 -D "$DB_TMP/pg" -l "$DB_TMP/pg.log" \
    -o "-p $pgport -k $DB_TMP -c listen_addresses=127.0.0.1" start >/dev/null
  db_as_pg "$DB_PGBIN/psql" -X -q -h "$DB_TMP" -p "$pgport" -U postgres -d postgres \
    -c "CREATE USER sbtest PASSWORD 'sbpass'" -c "CREATE DATABASE sbtest OWNER sbtest"
  # MariaDB, as root when root (it refuses otherwise).
  myport=$(db_free_port)
  local useropt=()
  [ "$(id -u)" = 0 ] && useropt=(--user=root)
  mkdir -p "$DB_TMP/maria"
  mariadb-install-db --no-defaults "${useropt[@]}" --auth-root-authentication-method=normal \
    --skip-test-db --datadir="$DB_TMP/maria/data" >/dev/null
  /usr/sbin/mariadbd --no-defaults "${useropt[@]}" --datadir="$DB_TMP/maria/data" --port="$myport" \
    --bind-address=127.0.0.1 --skip-name-resolve --socket="$DB_TMP/maria/sock" \
    --pid-file="$DB_TMP/maria/pid" --log-error="$DB_TMP/maria/err.log" &
  DB_MARIA_PID=$!
  local _
  for _ in $(seq 600); do
    mariadb --no-defaults -uroot --socket="$DB_TMP/maria/sock" -e 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --no-defaults -uroot --socket="$DB_TMP/maria/sock" -e \
    "CREATE DATABASE sbtest; CREATE USER sbtest@'%' IDENTIFIED BY 'sbpass'; GRANT ALL ON sbtest.* TO sbtest@'%'"
  MYSQL=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$myport" --mysql-user=sbtest --mysql-password=sbpass --mysql-db=sbtest)
  PGSQL=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$pgport" --pgsql-user=sbtest --pgsql-password=sbpass --pgsql-db=sbtest)
}
db_servers_stop() {
  if [ -n "$DB_TMP" ] && [ -d "$DB_TMP/pg" ]; then
    db_as_pg "$DB_PGBIN/pg_ctl" -w -m immediate -D "$DB_TMP/pg" stop >/dev/null 2>&1 || true
  fi
  if [ -n "$DB_MARIA_PID" ]; then
    kill "$DB_MARIA_PID" 2>/dev/null || true
    local _
    for _ in $(seq 300); do kill -0 "$DB_MARIA_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$DB_MARIA_PID" 2>/dev/null || true
  fi
  if [ -n "$DB_TMP" ]; then rm -rf "$DB_TMP"; fi
}
