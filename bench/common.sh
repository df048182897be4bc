# Shared by the benchmark scripts: tools, the burrow binary under test, and the summary.
set -euo pipefail
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$BENCH_DIR")"
RESULTS="$REPO/bench/results"
mkdir -p "$RESULTS"

# hyperfine times whole commands; bubblewrap is the reference sandbox.
ensure_tools() {
    local missing=()
    command -v hyperfine >/dev/null || missing+=(hyperfine)
    command -v bwrap >/dev/null || missing+=(bubblewrap)
    command -v unshare >/dev/null || missing+=(util-linux)
    if ((${#missing[@]})); then
        if [ "$(id -u)" -ne 0 ]; then
            echo "bench: install ${missing[*]} (apt-get install ${missing[*]})" >&2
            exit 1
        fi
        apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# The binary a user installs: static and non-PIE, built the way install.sh builds it.
burrow_binary() {
    local host
    host=$(rustc -vV | sed -n 's/^host: //p')
    (cd "$REPO" && RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
        cargo build --release --quiet --target "$host" -p burrow-cli)
    echo "$REPO/target/$host/release/burrow"
}

# burrow-bench, for timings taken inside one process.
bench_binary() {
    (cd "$REPO" && cargo build --release --quiet -p burrow-bench)
    echo "$REPO/target/release/burrow-bench"
}

# summarize JSON BASELINE_INDEX: medians, p90s and each command's ratio to the baseline.
summarize() {
    python3 "$BENCH_DIR/summarize.py" "$@"
}

# A fresh BURROW_HOME under /var/tmp (exported); `remove_home` deletes every workspace made in
# it (their cells outlive the commands that started them), then the directory.
use_fresh_home() {
    export BURROW_HOME
    BURROW_HOME=$(mktemp -d /var/tmp/burrow-bench.XXXXXX)
}
remove_home() {
    local dir
    for dir in "$BURROW_HOME"/workspaces/*; do
        [ -d "$dir" ] && { "$BURROW" ws delete "$(basename "$dir")" >/dev/null 2>&1 || true; }
    done
    rm -rf "$BURROW_HOME"
}
