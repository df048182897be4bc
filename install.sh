#!/bin/sh
# Builds burrow and installs it into $PREFIX/bin (default ~/.local/bin).
#
# The binary is linked statically and without PIE: the dynamic loader's relocations cost more
# at start-up than the whole sandbox set-up (see docs/PERFORMANCE.md). The target triple is
# passed explicitly so that these flags apply to burrow only, not to the proc-macros cargo
# builds for itself. Where the C library has no static archive, a normal build is installed.
set -eu
cd "$(dirname "$0")"
PREFIX="${PREFIX:-$HOME/.local}"
host=$(rustc -vV | sed -n 's/^host: //p')
if RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static" \
    cargo build --release --locked --target "$host" -p burrow-cli; then
    binary="target/$host/release/burrow"
else
    echo "install: static linking failed (is libc6-dev installed?); installing a dynamic build" >&2
    cargo build --release --locked -p burrow-cli
    binary="target/release/burrow"
fi
mkdir -p "$PREFIX/bin"
install -m 0755 "$binary" "$PREFIX/bin/burrow"
echo "installed $PREFIX/bin/burrow"
