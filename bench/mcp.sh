#!/usr/bin/env bash
# The agent surfaces, side by side in one run:
#   a round trip of `true` in a running workspace: `burrow exec WS -- true` as a whole CLI process
#     (the baseline), MCP over stdio (one `burrow mcp --profile core` session), the HTTP API
#     (POST /v1/workspaces/{ws}/exec on a keep-alive connection) and MCP over streamable HTTP
#     (/mcp of the same `burrow serve`), each with the official MCP Python SDK (mcp<2, in the
#     test venv under target/) or Python's http.client
#   `burrow serve` under 50 concurrent keep-alive clients: exec `true` on one shared workspace,
#     then POST /v1/run `true` (a fresh sandbox per request)
# RUNS=n changes the number of round trips (default 300), DURATION=s the seconds of each load
# (default 10), CLIENTS=n the concurrent clients (default 50). Only 127.0.0.1 is contacted.
source "$(dirname "$0")/common.sh"
BURROW=$(burrow_binary)
RUNS=${RUNS:-300}
DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-50}
venv="$REPO/target/py-venv"
"$REPO/python/requirements-test.sh" "$venv"

use_fresh_home
serve_pid=
cleanup() {
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -TERM "$serve_pid"
        local status=0
        wait "$serve_pid" || status=$?
        [ "$status" -eq 0 ] || echo "bench: burrow serve exited $status on SIGTERM" >&2
    fi
    remove_home
}
trap cleanup EXIT
cd "$REPO"

"$BURROW" ws create --name bench >/dev/null
"$BURROW" ws start bench
BENCH_TOKEN=$("$BURROW" token create --tenant bench 2>/dev/null)
export BENCH_TOKEN

# The server's first line on stderr names the port it was given.
log="$BURROW_HOME/serve.log"
"$BURROW" serve --listen 127.0.0.1:0 </dev/null >"$log" 2>&1 &
serve_pid=$!
url=
for _ in $(seq 300); do
    url=$(sed -n '1s|^burrow serve: listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$log")
    [ -n "$url" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$url" ]; then
    echo "bench: burrow serve did not start:" >&2
    cat "$log" >&2
    exit 1
fi

echo "== agent surfaces: \`true\` in a running workspace ($(nproc) CPUs, $(id -un)) =="
"$venv/bin/python" "$BENCH_DIR/mcp_bench.py" "$BURROW" bench "$url" "$RUNS" "$DURATION" "$CLIENTS"
