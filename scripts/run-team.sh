#!/usr/bin/env bash
# Haytham's team mode on one machine (docs/deploy.md): PostgreSQL, `haytham migrate`, two app
# instances and two workers on the shared database; Ctrl-C stops them all.
#
#   PORTS="8501 8502"   the app instances' ports (one instance per port)
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
    --server.headless true --browser.gatherUsageStats false "${secrets_flag[@]}"
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
