#!/usr/bin/env bash
# Sessions, shells and redaction, side by side in one run:
#   `echo hi` through a persistent session: bash over pipes (floor), `burrow session serve`,
#     LangChain's ShellSession with its host policy (pip langchain 1.5.0, in a venv under target/)
#   a PTY shell's write-then-read round trip (burrow-bench shell-roundtrip)
#   redaction throughput with 10 secrets and every PII rule (burrow-bench redact-throughput)
# RUNS=n changes the number of session runs (default 300); NO_LANGCHAIN=1 skips LangChain.
source "$(dirname "$0")/common.sh"
ensure_tools
BURROW=$(burrow_binary)
BENCH=$(bench_binary)
RUNS=${RUNS:-300}
use_fresh_home
trap remove_home EXIT
cd "$REPO"

langchain=()
if [ -z "${NO_LANGCHAIN:-}" ]; then
    venv="$REPO/target/bench-venv"
    if ! "$venv/bin/python" -c 'import langchain.agents.middleware.shell_tool' 2>/dev/null; then
        python3 -m venv "$venv"
        # langchain-core 1.8 asks for a certifi newer than some mirrors carry; its other
        # requirements are installed first, then it without its pin, then langchain.
        "$venv/bin/pip" install -q certifi "httpx>=0.23.0" "jsonpatch>=1.33.0" "langchain-protocol>=0.0.20" \
            "langsmith<1.0.0,>=0.14.9" "packaging>=23.2.0" "pydantic<3.0.0,>=2.7.4" "pyyaml>=5.3.0" \
            "tenacity!=8.4.0,>=8.1.0" "typing-extensions>=4.7.0" "uuid-utils>=0.12.0" "langgraph<1.3.0,>=1.2.12"
        "$venv/bin/pip" install -q --no-deps --force-reinstall "langchain-core==1.8.2" "langchain==1.5.0"
    fi
    python="$venv/bin/python"
else
    python=python3
    langchain=(--no-langchain)
fi

"$BURROW" ws create --name bench >/dev/null
"$BURROW" ws start bench
echo "== a persistent session: \`echo hi\` round trips ($(nproc) CPUs, $(id -un)) =="
"$python" "$BENCH_DIR/session_bench.py" "$BURROW" bench "$RUNS" "${langchain[@]}"
echo
echo "== a PTY shell =="
"$BENCH" shell-roundtrip "$BURROW_HOME" bench "$RUNS"
echo
echo "== redaction =="
"$BENCH" redact-throughput 1024
