#!/usr/bin/env bash
# Workspaces, side by side in one run:
#   exec of /bin/true on a running cell through the agent protocol vs spawning it in-process
#   burrow exec WS -- /bin/true vs /bin/true itself
#   burrow ws create (empty seed)
#   diff and reset of a 10,000-file workspace with 10 changed files: overlay layers vs the
#     copying fallback
#   resident memory of an idle cell
#   100 live workspaces at once
# RUNS=n changes the number of runs of the fast measurements (default 300).
source "$(dirname "$0")/common.sh"
ensure_tools
BURROW=$(burrow_binary)
BENCH=$(bench_binary)
RUNS=${RUNS:-300}
use_fresh_home
trap remove_home EXIT
cd "$REPO"

echo "== exec on a running cell ($RUNS runs each, $(nproc) CPUs, $(id -un)) =="
"$BURROW" ws create --name bench >/dev/null
"$BURROW" ws start bench
"$BENCH" exec-protocol "$BURROW_HOME" bench "$RUNS"
hyperfine -N --warmup 30 --runs "$RUNS" --export-json "$RESULTS/workspace-exec.json" \
    "/bin/true" "$BURROW exec bench -- /bin/true" >/dev/null
summarize "$RESULTS/workspace-exec.json" 0 "/bin/true" "burrow exec WS -- /bin/true"

echo
echo "== burrow ws create, empty seed ($RUNS runs) =="
hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$RESULTS/workspace-create.json" \
    "$BURROW ws create" >/dev/null
summarize "$RESULTS/workspace-create.json" 0 "burrow ws create"
for id in $("$BURROW" ws list --json | python3 -c 'import json,sys; print(" ".join(w["id"] for w in json.load(sys.stdin) if w["name"] is None))'); do
    "$BURROW" ws delete "$id"
done

echo
echo "== diff and reset: 10,000 files, 10 changed =="
seed="$BURROW_HOME/seed"
python3 - "$seed" <<'PY'
import os, sys
root = sys.argv[1]
for d in range(100):
    os.makedirs(f"{root}/d{d:02}", exist_ok=True)
    for f in range(100):
        with open(f"{root}/d{d:02}/f{f:02}.txt", "w") as out:
            out.write(f"file {d} {f}\n" * 20)
PY
change='for d in 00 11 22 33 44 55 66 77 88 99; do echo changed >> d$d/f00.txt; done'
for storage in overlay copy; do
    BURROW_WORKSPACE_STORAGE=$storage "$BURROW" ws create --name "big-$storage" --seed "$seed" >/dev/null
    "$BURROW" exec "big-$storage" -- sh -c "$change"
done
hyperfine -N --warmup 3 --runs 30 --export-json "$RESULTS/workspace-diff.json" \
    "$BURROW diff big-overlay" "$BURROW diff big-copy" >/dev/null
summarize "$RESULTS/workspace-diff.json" 0 "diff (overlay layers)" "diff (copying fallback)"
"$BURROW" ws stop big-overlay
"$BURROW" ws stop big-copy
hyperfine --warmup 2 --runs 30 --export-json "$RESULTS/workspace-reset.json" \
    --prepare "$BURROW exec big-overlay -- sh -c '$change' && $BURROW ws stop big-overlay" \
    "$BURROW reset big-overlay" \
    --prepare "$BURROW exec big-copy -- sh -c '$change' && $BURROW ws stop big-copy" \
    "$BURROW reset big-copy" \
    --prepare "$BURROW exec big-overlay -- sh -c '$change'" \
    "$BURROW reset big-overlay" >/dev/null
summarize "$RESULTS/workspace-reset.json" 0 "reset, cell stopped (overlay)" \
    "reset, cell stopped (copying fallback)" "reset, cell running: restarted (overlay)"

echo
echo "== resident memory of an idle cell =="
pid=$("$BURROW" ws status bench --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
"$BURROW" exec bench -- /bin/true
busy=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
sleep 5
idle=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
anon=$(awk '/RssAnon/ {print $2}' "/proc/$pid/status")
echo "right after a command: ${busy} KiB; idle (after 5 s): ${idle} KiB, of which ${anon} KiB private anonymous"

echo
echo "== 100 live workspaces =="
before=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
start=$(date +%s%N)
for i in $(seq 1 100); do "$BURROW" ws create --name "live-$i" >/dev/null; done
created=$(date +%s%N)
for i in $(seq 1 100); do "$BURROW" exec "live-$i" -- sh -c 'echo $$ > pid'; done
started=$(date +%s%N)
running=$("$BURROW" ws list --json | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin) if w["name"] and w["name"].startswith("live-") and w["state"] == "running"))')
for i in $(seq 1 100); do "$BURROW" exec "live-$i" -- /bin/true; done
again=$(date +%s%N)
sleep 5
after=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
rss=$("$BURROW" ws list --json | python3 -c '
import json, sys
total = 0
for w in json.load(sys.stdin):
    if w["pid"]:
        for line in open("/proc/%d/smaps_rollup" % w["pid"]):
            if line.startswith("Pss:"):
                total += int(line.split()[1])
print(total)')
echo "created 100 in $(( (created - start) / 1000000 )) ms; first exec (starting each cell) $(( (started - created) / 1000000 )) ms;" \
    "an exec in each of the 100 running cells $(( (again - started) / 1000000 )) ms"
echo "running: $running of 100; memory: $(( (before - after) / 1024 )) MiB less available," \
    "summed PSS of the agents $(( rss / 1024 )) MiB"
