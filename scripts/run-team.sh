#!/usr/bin/env bash
# Haytham's team mode on one machine (docs/deploy.md): PostgreSQL, `haytham migrate`, two app
# instances and two workers on the shared database; Ctrl-C stops them all. A worker that ends
# is started again (a crash, a lost database); an app instance that ends stops the team.
#
#   PORTS="8501 8502"   the app instances' ports (one instance per port)
#   ADDRESS=127.0.0.1   where they listen: loopback by default; ADDRESS=0.0.0.0 exposes them
#                       to the network (Haytham has no login: put a proxy with one in front)
#   WORKERS=2           how many `haytham worker` processes
#   HAYTHAM_DATABASE_URL (environment or .env) another database; default: the local one that
#                       scripts/services.sh sets up. Provider settings come from the environment
#                       and .env as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PORTS=${PORTS:-8501 8502}
ADDRESS=${ADDRESS:-127.0.0.1}
WORKERS=${WORKERS:-2}

url=$("$BIN/python" -c 'from haytham.config import load_settings
print(load_settings().secret("database_url") or "")')
if [ -z "$url" ]; then
  out=$(bash scripts/services.sh)
  grep -v '^HAYTHAM_DATABASE_URL=' <<<"$out" || true
  url=$(sed -n 's/^HAYTHAM_DATABASE_URL=//p' <<<"$out")
elif [[ $url =~ @(127\.0\.0\.1|localhost)[:/] ]]; then
  # the local server must be up; its own URL is not the one in use, so it is not printed
  bash scripts/services.sh | grep -v '^HAYTHAM_DATABASE_URL=' >&2 || true
fi
export HAYTHAM_DATABASE_URL=$url
echo "database: $("$BIN/python" -c 'import sys
from haytham.pgstore import where
print(where(sys.argv[1]))' "$url") (HAYTHAM_DATABASE_URL)"
"$BIN/haytham" migrate

declare -A tags=()    # pid -> process name
declare -A started=() # worker name -> when it last started (s)
declare -A quick=()   # worker name -> how many times in a row it ended within 10 s
stop() {
  trap - INT TERM EXIT
  echo "stopping (workers finish their running jobs first)..."
  local pids=("${!tags[@]}")
  if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  echo "stopped."
  exit "$1"
}
trap 'stop 130' INT
trap 'stop 143' TERM
trap 'stop 1' EXIT

# each process's output, prefixed with its name; $! is the process itself, not the prefixer
start() {
  local tag=$1
  shift
  "$@" > >(sed -u "s/^/[$tag] /") 2>&1 &
  tags[$!]=$tag
}
start_worker() {
  started[$1]=$(date +%s)
  start "$1" "$BIN/haytham" worker --name "${HOSTNAME:-haytham}-$1"
}
for port in $PORTS; do
  start "web:$port" "$BIN/streamlit" run frontend_streamlit/app.py --server.port "$port" \
    --server.address "$ADDRESS" --server.headless true --browser.gatherUsageStats false
  echo "app instance on http://$ADDRESS:$port"
done
[ "$ADDRESS" = 127.0.0.1 ] && echo "(loopback only; ADDRESS=0.0.0.0 exposes the app instances)"
for i in $(seq "$WORKERS"); do
  start_worker "worker$i"
  echo "worker$i started"
done
echo "Ctrl-C stops everything."

# supervise: a worker that ends is started again (after 2 s; five quick deaths in a row, e.g. a
# wrong setting, stop the team instead); an app instance that ends (a port in use) stops all
while true; do
  ended=
  code=0
  wait -n -p ended "${!tags[@]}" || code=$?
  [ -n "$ended" ] || continue
  tag=${tags[$ended]}
  unset "tags[$ended]"
  if [[ $tag != worker* ]]; then
    echo "$tag ended (exit $code); stopping the others."
    stop 1
  fi
  if [ $(($(date +%s) - ${started[$tag]})) -lt 10 ]; then
    quick[$tag]=$((${quick[$tag]:-0} + 1))
  else
    quick[$tag]=0
  fi
  if [ "${quick[$tag]}" -ge 5 ]; then
    echo "$tag ended within 10 s of starting five times in a row (exit $code); see its lines" \
      "above. Stopping the others."
    stop 1
  fi
  echo "$tag ended (exit $code); starting it again in 2 s."
  sleep 2
  start_worker "$tag"
done
