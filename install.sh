#!/bin/sh
# Builds burrow as one static, non-PIE binary and installs it into $PREFIX/bin (default
# ~/.local/bin). Static and non-PIE because the dynamic loader's relocations cost more at
# start-up than the whole sandbox set-up; the target triple is passed explicitly so that the
# flags apply to burrow only, not to the proc-macros cargo builds for itself.
set -eu
cd "$(dirname "$0")"
PREFIX="${PREFIX:-$HOME/.local}"
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
    cargo build --release --locked --target "$host" -p burrow-cli
mkdir -p "$PREFIX/bin"
install -m 0755 "target/$host/release/burrow" "$PREFIX/bin/burrow"
echo "installed $PREFIX/bin/burrow"
