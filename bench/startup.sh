#!/usr/bin/env bash
# Start-up cost of one sandboxed command, side by side in one run:
#   burrow run -- /bin/true        (every layer: namespaces, pivot_root, Landlock, seccomp, limits)
#   bare /bin/true                 (the floor)
#   unshare with user, mount, pid, ipc, uts and net namespaces (namespaces only, no set-up)
#   bwrap --unshare-all            (bubblewrap, the sandbox Codex and srt build on)
# Prints medians, p90s and ratios to unshare. RUNS=n changes the number of runs (default 500).
source "$(dirname "$0")/common.sh"
ensure_tools
BURROW=$(burrow_binary)
RUNS=${RUNS:-500}
cd "$REPO"
hyperfine -N --warmup 50 --runs "$RUNS" --export-json "$RESULTS/startup.json" \
    "/bin/true" \
    "unshare --user --map-root-user --mount --pid --ipc --uts --net --fork /bin/true" \
    "$BURROW run -- /bin/true" \
    "bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent /bin/true" \
    >/dev/null
echo "start-up of a sandboxed /bin/true ($RUNS runs each, $(nproc) CPUs, $(id -un)):"
summarize "$RESULTS/startup.json" 1 "bare /bin/true" "unshare (6 namespaces)" \
    "burrow run -- /bin/true" "bwrap --unshare-all"
