#!/usr/bin/env bash
# Haytham's team mode on one machine (docs/deploy.md): PostgreSQL, `haytham migrate`, two app
# instances and two workers on the shared database; Ctrl-C stops them all.
#
#   PORTS="8501 8502"   the app instances' ports (one instance per port)
#   WORKERS=2           how many `haytham worker` processes
#   HAYTHAM_DATABASE_URL (environment or .env) another database; default: the local one that
#                       scripts/services.sh sets up. Provider settings come from the environment
#                       and .env as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PORTS=${PORTS:-8501 8502}
WORKERS=${WORKERS:-2}

url=$("$BIN/python" -c 'from haytham.config import load_settings
print(load_settings().secret("database_url") or "")')
if [ -z "$url" ]; then
  out=$(bash scripts/services.sh)
  echo "$out"
  url=$(sed -n 's/^HAYTHAM_DATABASE_URL=//p' <<<"$out")
elif [[ $url =~ @(127\.0\.0\.1|localhost)[:/] ]]; then
  bash scripts/services.sh >&2
fi
export HAYTHAM_DATABASE_URL=$url
"$BIN/haytham" migrate

pids=()
stop() {
  trap - INT TERM EXIT
  echo "stopping (workers finish their running jobs first)..."
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
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
  pids+=($!)
}
for port in $PORTS; do
  start "web:$port" "$BIN/streamlit" run frontend_streamlit/app.py --server.port "$port" \
    --server.headless true --browser.gatherUsageStats false
  echo "app instance on http://localhost:$port"
done
for i in $(seq "$WORKERS"); do
  start "worker$i" "$BIN/haytham" worker --name "${HOSTNAME:-haytham}-worker$i"
  echo "worker$i started"
done
echo "Ctrl-C stops everything."
# stop everything as soon as one process ends (a port in use, a lost database...)
wait -n "${pids[@]}" || true
echo "a process ended; stopping the others."
