#!/usr/bin/env bash
# PostgreSQL for Haytham's team mode on this machine (docs/deploy.md): installs Debian's
# postgresql if it is missing, starts the cluster (listening where Debian's default says:
# localhost only), creates role and database `haytham` (password `haytham`) if missing, waits
# until it answers and prints the HAYTHAM_DATABASE_URL to use. Idempotent, needs no stdin.
#
#   scripts/services.sh             exit 1 (one line why) if PostgreSQL cannot be made ready
#   scripts/services.sh --optional  the same line, exit 0 (`make test` skips the team tests)
set -u
optional=0
[ "${1:-}" = "--optional" ] && optional=1
user=haytham db=haytham host=127.0.0.1 port=5432
export DEBIAN_FRONTEND=noninteractive PGCONNECT_TIMEOUT=3
exec </dev/null

url() { echo "postgresql://$user:$user@$host:$port/$db"; }
give_up() {  # one line, then exit 1 (0 with --optional)
  echo "services: PostgreSQL is not available: $1$([ $optional = 1 ] && echo ' (skipping)')" >&2
  exit $((1 - optional))
}
answers() {
  pg_isready -q -h "$host" -p "$port" && psql -XAtq "$(url)" -c 'SELECT 1' >/dev/null 2>&1
}
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# Quick path: everything already up.
if command -v pg_isready >/dev/null && command -v psql >/dev/null && answers; then
  echo "PostgreSQL is running on $host:$port; database $db answers."
  echo "HAYTHAM_DATABASE_URL=$(url)"
  exit 0
fi

if ! command -v pg_ctlcluster >/dev/null || ! command -v psql >/dev/null; then
  [ "$(id -u)" = 0 ] \
    || give_up "it is not installed, and installing it needs root (apt-get install postgresql)"
  command -v apt-get >/dev/null \
    || give_up "it is not installed and there is no apt-get here to install it"
  echo "installing Debian's postgresql (apt-get)..."
  log=${TMPDIR:-/tmp}/haytham-services-apt.log
  { apt-get update -qq && apt-get install -y -qq postgresql; } >"$log" 2>&1 \
    || give_up "apt-get could not install postgresql (no network?); see $log"
fi
[ "$(id -u)" = 0 ] \
  || give_up "it does not answer on $host:$port as $user, and starting or setting it up needs root"
command -v runuser >/dev/null || give_up "runuser (util-linux) is missing"

# The cluster: the one on 5432 if any, else the first listed; none -> create one (newest version).
cluster=$(pg_lsclusters -h 2>/dev/null | awk '$3 == 5432 {print; exit}')
[ -n "$cluster" ] || cluster=$(pg_lsclusters -h 2>/dev/null | head -n 1)
if [ -z "$cluster" ]; then
  version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null \
    | sort -V | tail -n 1)
  [ -n "$version" ] || give_up "no PostgreSQL server version found in /usr/lib/postgresql"
  pg_createcluster "$version" main >/dev/null 2>&1 \
    || give_up "pg_createcluster $version main failed"
  cluster=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print; exit}')
fi
read -r version name port status _ <<<"$cluster"
if [ "$status" != online ]; then
  echo "starting PostgreSQL $version/$name on port $port..."
  pg_ctlcluster "$version" "$name" start >/dev/null 2>&1 \
    || give_up "pg_ctlcluster $version $name start failed; see /var/log/postgresql/"
fi
for _ in $(seq 60); do pg_isready -q -h "$host" -p "$port" && break; sleep 0.5; done
pg_isready -q -h "$host" -p "$port" \
  || give_up "PostgreSQL $version/$name does not answer on $host:$port after 30 s"

sql() { as_postgres psql -XAtq -p "$port" -c "$1"; }
if [ "$(sql "SELECT 1 FROM pg_roles WHERE rolname = '$user'")" != 1 ]; then
  sql "CREATE ROLE $user LOGIN CREATEDB PASSWORD '$user'" >/dev/null \
    || give_up "could not create role $user"
  echo "created role $user"
fi
if [ "$(sql "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
  as_postgres createdb -p "$port" -O "$user" "$db" || give_up "could not create database $db"
  echo "created database $db"
fi
answers || give_up "cannot log in as $user on $host:$port (password or pg_hba.conf changed?)"
echo "PostgreSQL $version/$name is running on $host:$port; database $db answers."
echo "HAYTHAM_DATABASE_URL=$(url)"
