#!/usr/bin/env bash
# The network allowlist, side by side in one run:
#   throughput of a download from a server on the host's loopback, inside a cell:
#     direct (--network host) against through burrow's proxy (--network allow:...)
#   start-up of `burrow run -- /bin/true`: --network none against --network allow:example.com
# Prints medians and ratios. SIZE=bytes per download (default 2 GiB), TRIES (default 5),
# RUNS for start-up (default 300).
source "$(dirname "$0")/common.sh"
ensure_tools
BURROW=$(burrow_binary)
SIZE=${SIZE:-$((2 << 30))}
TRIES=${TRIES:-5}
RUNS=${RUNS:-300}
work=$(mktemp -d /var/tmp/burrow-netbench.XXXXXX)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
cd "$REPO"

# A file served with sendfile(2) from a Python server: the server is not the bottleneck.
head -c "$SIZE" /dev/urandom >"$work/blob"
python3 - "$work/blob" >"$work/port" <<'PY' &
import os, socket, sys, threading
path = sys.argv[1]
size = os.path.getsize(path)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
print(listener.getsockname()[1], flush=True)
def serve(conn):
    with conn:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(4096)
            if not more:
                return
            data += more
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
        with open(path, "rb") as blob:
            offset = 0
            while offset < size:
                offset += os.sendfile(conn.fileno(), blob.fileno(), offset, size - offset)
while True:
    conn, _ = listener.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
PY
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

download() { # flags... -> bytes per second
    "$BURROW" run --timeout 600 "$@" -- curl -sS -o /dev/null -w '%{speed_download}\n' \
        "http://bench.test:$port/blob"
}
export BURROW_PROXY_RESOLVE="bench.test=127.0.0.1"
direct=()
proxied=()
for _ in $(seq "$TRIES"); do
    # Direct: the host's network, the name given to curl as the host's loopback.
    direct+=("$("$BURROW" run --timeout 600 --network host -- curl -sS -o /dev/null \
        --resolve "bench.test:$port:127.0.0.1" -w '%{speed_download}\n' "http://bench.test:$port/blob")")
    proxied+=("$(download --network allow:bench.test --network-allow-private)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
d=$(median "${direct[@]}")
p=$(median "${proxied[@]}")
echo "== download of $((SIZE >> 20)) MiB from the host's loopback, inside a cell ($TRIES tries, $(nproc) CPUs, $(id -un)) =="
awk -v d="$d" -v p="$p" 'BEGIN {
    printf "%-44s %10.0f MB/s\n", "direct (--network host)", d / 1e6
    printf "%-44s %10.0f MB/s  %.0f%% of direct\n", "through the proxy (--network allow:...)", p / 1e6, 100 * p / d
}'
echo

hyperfine -N --warmup 30 --runs "$RUNS" --export-json "$RESULTS/netproxy-startup.json" \
    "$BURROW run -- /bin/true" \
    "$BURROW run --network allow:example.com -- /bin/true" \
    >/dev/null
echo "== start-up of a sandboxed /bin/true ($RUNS runs each) =="
summarize "$RESULTS/netproxy-startup.json" 0 "--network none" "--network allow:example.com"
python3 - "$RESULTS/netproxy-startup.json" <<'PY'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
none, allow = (statistics.median(r["times"]) * 1000 for r in results)
print(f"added by the allowlist: {allow - none:.2f} ms (median)")
PY
