"""`echo hi` round trips through a persistent shell session, side by side in one run:

  raw       bash over pipes, a marker line after each command (the floor: no isolation, no
            stderr, no exit status)
  burrow    `burrow session serve WS`: one JSON request per line, one JSON result per line
            (stdout and stderr in order, exit status, inside the workspace's cell)
  langchain LangChain's ShellSession with its HostExecutionPolicy (no isolation)

usage: session_bench.py BURROW WORKSPACE RUNS [--no-langchain]
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import measure

burrow, workspace, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
with_langchain = "--no-langchain" not in sys.argv


results = []

# The floor: bash reading commands from a pipe.
raw = subprocess.Popen(["bash"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def raw_once():
    raw.stdin.write("echo hi; echo __done__\n")
    raw.stdin.flush()
    lines = []
    while True:
        line = raw.stdout.readline()
        if line == "__done__\n":
            break
        lines.append(line)
    assert lines == ["hi\n"], lines


results.append(measure("bash over pipes (floor)", raw_once, runs))
raw.stdin.close()
raw.wait()

serve = subprocess.Popen([burrow, "session", "serve", workspace], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def burrow_once():
    serve.stdin.write('{"command": "echo hi"}\n')
    serve.stdin.flush()
    answer = json.loads(serve.stdout.readline())
    assert answer["stdout"] == "hi\n" and answer["exit_code"] == 0, answer


results.append(measure("burrow session serve", burrow_once, runs))
serve.stdin.close()
serve.wait()

if with_langchain:
    from langchain.agents.middleware._execution import HostExecutionPolicy
    from langchain.agents.middleware.shell_tool import ShellSession

    directory = Path(tempfile.mkdtemp())
    session = ShellSession(directory, HostExecutionPolicy(), ("/bin/bash",), {})
    session.start()

    def langchain_once():
        result = session.execute("echo hi", timeout=10)
        assert result.output.strip() == "hi", result

    results.append(measure("LangChain ShellSession (host policy)", langchain_once, max(20, runs // 10)))
    session.stop(5)

base = results[1][1]
print(f"{'session':<40} {'median':>10} {'p90':>10} {'runs':>6} {'vs burrow':>10}")
for label, median, p90, count in results:
    print(f"{label:<40} {median * 1e3:8.3f}ms {p90 * 1e3:8.3f}ms {count:>6} {median / base:9.2f}x")
