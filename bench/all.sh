#!/usr/bin/env bash
# Every benchmark, one after the other; see docs/PERFORMANCE.md for the latest results.
set -euo pipefail
dir="$(dirname "$0")"
"$dir/startup.sh"
echo
"$dir/capture.sh"
echo
"$dir/workspace.sh"
echo
"$dir/session.sh"
echo
"$dir/mcp.sh"
echo
"$dir/netproxy.sh"
