#!/usr/bin/env bash
# Makes the virtualenv $1 ready for `python -m pytest python/tests`: pytest, the MCP SDK,
# LangChain 1.5.0 and this package (editable). Does nothing when that is already the case.
#
#   python/requirements-test.sh target/py-venv
#
# LangChain: `pip install langchain==1.5.0` fails against this registry (langchain-core>=1.8
# pins a certifi version it lacks), so its dependencies are installed first and
# langchain-core and langchain themselves without theirs.
# MCP: the SDK is held below 2.0, whose client API (httpx2, new transports) differs from the
# 1.x API the tests are written against (stdio_client, streamable_http_client).
set -euo pipefail

venv="${1:?usage: requirements-test.sh VENV_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"

ready() {
    "$venv/bin/python" -I -c "import mcp, pytest, langchain.agents.middleware.shell_tool, burrow; from mcp.client.streamable_http import streamable_http_client" \
        >/dev/null 2>&1
}

if [ -x "$venv/bin/python" ] && ready; then
    exit 0
fi

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)

# 1.30 has streamable_http_client, the client that takes its own httpx client.
"${pip[@]}" install pytest "mcp>=1.30,<2"
"${pip[@]}" install certifi "httpx>=0.23.0" "jsonpatch>=1.33.0" "langchain-protocol>=0.0.20" \
    "langsmith<1.0.0,>=0.14.9" "packaging>=23.2.0" "pydantic<3.0.0,>=2.7.4" "pyyaml>=5.3.0" \
    "tenacity!=8.4.0,>=8.1.0" "typing-extensions>=4.7.0" "uuid-utils>=0.12.0" \
    "langgraph<1.3.0,>=1.2.12"
"${pip[@]}" install --no-deps --force-reinstall "langchain-core==1.8.2" "langchain==1.5.0"
"${pip[@]}" install -e "$here"

ready || { echo "requirements-test.sh: $venv is still missing a test dependency" >&2; exit 1; }
