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
#   Sign-in: an [auth] section in .streamlit/secrets.toml (docs/deploy.md) is used as it is, and
#   so is HAYTHAM_TRUSTED_NETWORK=on. Otherwise a local OpenID Connect provider (oidc-provider,
#   tests/oidc/, installed with npm) starts on OIDC_PORT (9400) with four demo people (password:
#   anything): ada and bob (founders), rita (reviews ada's cohort), ann (admin); roles come from
#   .haytham-team/access.toml unless HAYTHAM_ACCESS_FILE names another. Without Node it falls
#   back to the trusted-network mode, and says so.
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
from haytham.storage.postgres import where
print(where(sys.argv[1]))' "$url") (HAYTHAM_DATABASE_URL)"
"$BIN/haytham" migrate

OIDC_PORT=${OIDC_PORT:-9400}
secrets_flag=()
has_auth() { [ -f .streamlit/secrets.toml ] && grep -q '^\[auth' .streamlit/secrets.toml; }
trusted=$("$BIN/python" -c 'from haytham.config import load_settings
print("on" if load_settings().trusted_network else "")')
local_idp=""
if ! has_auth && [ -z "$trusted" ]; then
  if command -v node >/dev/null && command -v npm >/dev/null \
     && { [ -d tests/oidc/node_modules/oidc-provider ] || npm ci --prefix tests/oidc --silent; }; then
    local_idp=1
    mkdir -p .haytham-team
    redirects=$(for p in $PORTS; do printf 'http://localhost:%s/oauth2callback,' "$p"; done)
    cookie=$("$BIN/python" -c 'import secrets; print(secrets.token_urlsafe(32))')
    cat > .haytham-team/secrets.toml <<EOF
[auth]
redirect_uri = "http://localhost:{port}/oauth2callback"
cookie_secret = "$cookie"
client_id = "haytham"
client_secret = "haytham-local-secret"
server_metadata_url = "http://127.0.0.1:$OIDC_PORT/.well-known/openid-configuration"
client_kwargs = { scope = "openid email profile groups", prompt = "login" }
EOF
    [ -f .haytham-team/access.toml ] || cat > .haytham-team/access.toml <<'EOF'
# Roles for `make run-team`'s demo people (docs/deploy.md "Identity"); edits apply at once.
admins = ["ann@example.org"]
founders = ["group:founders"]
four_eyes = true
[cohorts.demo]
founders = ["ada@example.org"]
reviewers = ["rita@example.org"]
EOF
    export HAYTHAM_ACCESS_FILE=${HAYTHAM_ACCESS_FILE:-$PWD/.haytham-team/access.toml}
    secrets_flag=(--secrets.files .haytham-team/secrets.toml)
  else
    echo "Node.js/npm not found: no local identity provider; running on a trusted network" \
      "(names recorded, not checked). See docs/deploy.md to configure sign-in." >&2
    export HAYTHAM_TRUSTED_NETWORK=on
  fi
fi

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
if [ -n "$local_idp" ]; then
  users='{"ada":{"email":"ada@example.org","name":"Ada (founder)","groups":["founders"]},
"bob":{"email":"bob@example.org","name":"Bob (founder)","groups":["founders"]},
"rita":{"email":"rita@example.org","name":"Rita (reviewer)","groups":["reviewers"]},
"ann":{"email":"ann@example.org","name":"Ann (admin)","groups":["admins"]}}'
  PORT=$OIDC_PORT OIDC_USERS=$users OIDC_REDIRECT_URIS=${redirects%,} \
    start "idp" node tests/oidc/provider.mjs
  echo "local identity provider on http://127.0.0.1:$OIDC_PORT: sign in as ada, bob, rita or ann"
fi
for port in $PORTS; do
  start "web:$port" "$BIN/streamlit" run frontend_streamlit/app.py --server.port "$port" \
    --server.address "$ADDRESS" --server.headless true --browser.gatherUsageStats false \
    "${secrets_flag[@]}"
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
