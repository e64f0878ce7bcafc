#!/usr/bin/env bash
# PostgreSQL for Haytham's team mode on this machine (docs/deploy.md): installs Debian's
# postgresql if it is missing, starts the cluster (listening where Debian's default says:
# localhost only), creates role and database `haytham` if missing (the role with a random
# password, kept in .services.env, mode 600, git-ignored), waits until it answers and prints the
# HAYTHAM_DATABASE_URL to use. Idempotent, needs no stdin.
#
#   scripts/services.sh                 exit 1 (one line why) if PostgreSQL cannot be made ready
#   scripts/services.sh --optional      the same line, exit 0 (`make test` skips the team tests)
#   scripts/services.sh --new-password  give the role a new random password (root)
set -u
optional=0 renew=0
for arg in "$@"; do
  case $arg in
    --optional) optional=1 ;;
    --new-password) renew=1 ;;
  esac
done
user=haytham db=haytham host=127.0.0.1 port=5432
saved="$(cd "$(dirname "$0")/.." && pwd)/.services.env"
export DEBIAN_FRONTEND=noninteractive PGCONNECT_TIMEOUT=3
exec </dev/null

# the password: the one saved here, else the default of earlier versions (`haytham`, which
# --new-password replaces: redaction hides every "haytham" in messages while it is the password)
password=$(sed -n 's|^HAYTHAM_DATABASE_URL=postgresql://[^:]*:\([^@]*\)@.*|\1|p' "$saved" 2>/dev/null)
[ -n "$password" ] || password=$user
url() { echo "postgresql://$user:$password@$host:$port/$db"; }
new_password() { tr -dc 'a-z0-9' </dev/urandom | head -c 24; }
save_url() {  # the URL with the password, for this machine's later runs (and the tests)
  (umask 077 && echo "HAYTHAM_DATABASE_URL=$(url)" >"$saved")
}
legacy_note() {
  [ "$password" = "$user" ] && echo "note: role $user still has the old default password;" \
    "scripts/services.sh --new-password replaces it with a random one" >&2
  return 0
}
give_up() {  # one line, then exit 1 (0 with --optional)
  echo "services: PostgreSQL is not available: $1$([ $optional = 1 ] && echo ' (skipping)')" >&2
  exit $((1 - optional))
}
answers() {
  pg_isready -q -h "$host" -p "$port" && psql -XAtq "$(url)" -c 'SELECT 1' >/dev/null 2>&1
}
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# Quick path: everything already up.
if [ $renew = 0 ] && command -v pg_isready >/dev/null && command -v psql >/dev/null && answers
then
  echo "PostgreSQL is running on $host:$port; database $db answers."
  legacy_note
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
  password=$(new_password)
  sql "CREATE ROLE $user LOGIN CREATEDB PASSWORD '$password'" >/dev/null \
    || give_up "could not create role $user"
  save_url
  echo "created role $user (random password, saved in $saved)"
elif [ $renew = 1 ]; then
  password=$(new_password)
  sql "ALTER ROLE $user PASSWORD '$password'" >/dev/null || give_up "could not set the password"
  save_url
  echo "role $user has a new random password (saved in $saved); update HAYTHAM_DATABASE_URL" \
    "wherever it is set"
fi
if [ "$(sql "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
  as_postgres createdb -p "$port" -O "$user" "$db" || give_up "could not create database $db"
  echo "created database $db"
fi
answers || give_up "cannot log in as $user on $host:$port (password or pg_hba.conf changed? \
scripts/services.sh --new-password sets a new one)"
echo "PostgreSQL $version/$name is running on $host:$port; database $db answers."
legacy_note
echo "HAYTHAM_DATABASE_URL=$(url)"
