#!/usr/bin/env bash
# Throughput of captured output: a command writes SIZE (default 2G) of zeros to stdout.
#   burrow run --json        (captured: read by burrow, head and tail kept, the rest counted)
#   burrow run > /dev/null   (streamed through burrow)
#   a bare pipe into cat     (the floor: one pipe, one reader)
source "$(dirname "$0")/common.sh"
ensure_tools
BURROW=$(burrow_binary)
SIZE=${SIZE:-2G}
RUNS=${RUNS:-5}
bytes=$(numfmt --from=iec "$SIZE")
cd "$REPO"
hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$RESULTS/capture.json" \
    "sh -c 'head -c $SIZE /dev/zero | cat > /dev/null'" \
    "$BURROW run --json --timeout 300 -- head -c $SIZE /dev/zero" \
    "sh -c '$BURROW run --timeout 300 -- head -c $SIZE /dev/zero > /dev/null'" \
    >/dev/null
echo "output of $SIZE through a pipe ($RUNS runs each):"
summarize "$RESULTS/capture.json" 0 "bare pipe into cat" "burrow run --json (captured)" \
    "burrow run (streamed to /dev/null)"
python3 - "$RESULTS/capture.json" "$bytes" <<'PY'
import json, statistics, sys
results = json.load(open(sys.argv[1]))["results"]
size = int(sys.argv[2])
for label, result in zip(["bare pipe", "captured", "streamed"], results):
    print(f"  {label:<10} {size / statistics.median(result['times']) / 1e9:6.2f} GB/s")
PY
