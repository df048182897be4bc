"""burrow's agent surfaces, side by side in one run:

  round trips of `true` in a running workspace, one client, one call at a time:
    exec        `burrow exec WS -- true`, a whole CLI process per call (the baseline)
    mcp stdio   one `burrow mcp --profile core` session, call_tool("workspace_exec") repeated
    rest        POST /v1/workspaces/{ws}/exec on one keep-alive HTTP connection
    mcp http    one MCP session over streamable HTTP (/mcp of `burrow serve`), call_tool repeated
  throughput of `burrow serve` with CLIENTS threads, each with its own keep-alive connection,
  for DURATION seconds: POST /v1/workspaces/{ws}/exec `true` on one shared workspace, then
  POST /v1/run `true` (a fresh sandbox per request). Every answer must say exit_code 0; the
  others are counted as errors.

Every time is taken here, with time.perf_counter, so each includes this client's own work
(for `exec`, Python's spawn of the process). The HTTP workspace is created through the API
(it belongs to the token's tenant) and deleted at the end.

usage: BENCH_TOKEN=TOKEN mcp_bench.py BURROW CLI_WORKSPACE URL RUNS DURATION CLIENTS
"""
import asyncio
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

from timing import measure, measure_async, stats

import httpx  # the MCP SDK's own HTTP client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

burrow, cli_workspace, url = sys.argv[1], sys.argv[2], sys.argv[3]
runs, duration, clients = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
token = os.environ["BENCH_TOKEN"]
address = urllib.parse.urlsplit(url)
host, port = address.hostname, address.port
assert host == "127.0.0.1", url
# httpx (under the MCP SDK) honours proxy variables; nothing here may leave loopback.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
http_workspace = "bench-http"
def request(conn, method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    payload = response.read()
    return response.status, json.loads(payload) if payload else None


def check_tool(result):
    content = result.structuredContent
    if result.isError or content is None or content.get("exit_code") != 0:
        text = " ".join(getattr(block, "text", "") for block in result.content)
        raise AssertionError(f"workspace_exec failed: {text}")


# a. The baseline: a CLI process per call.
def exec_once():
    done = subprocess.run([burrow, "exec", cli_workspace, "--", "true"], stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done


# b. MCP over stdio, on the local user's workspace.
async def mcp_stdio():
    params = StdioServerParameters(command=burrow, args=["mcp", "--profile", "core"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            arguments = {"workspace": cli_workspace, "command": "true"}

            async def once():
                check_tool(await session.call_tool("workspace_exec", arguments))

            return await measure_async("MCP over stdio (burrow mcp)", once, runs)


# d. MCP over streamable HTTP, on the tenant's workspace.
async def mcp_http():
    endpoint = f"{url}/mcp"
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=auth, trust_env=False, timeout=httpx.Timeout(30, read=300)) as client:
        async with streamable_http_client(endpoint, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await mcp_http_loop(session)


async def mcp_http_loop(session):
    arguments = {"workspace": http_workspace, "command": "true"}

    async def once():
        check_tool(await session.call_tool("workspace_exec", arguments))

    return await measure_async("MCP over streamable HTTP (/mcp)", once, runs)


def load(label, path, body):
    """CLIENTS threads, each on its own keep-alive connection, for DURATION seconds."""
    latencies = [[] for _ in range(clients)]
    errors = [0] * clients
    samples = []  # the first error of each kind, to show
    start = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(index):
        conn = http.client.HTTPConnection(host, port, timeout=120)
        start.wait()
        while time.perf_counter() < deadline[0]:
            started = time.perf_counter()
            try:
                status, answer = request(conn, "POST", path, body)
                ok = status == 200 and answer.get("exit_code") == 0
                problem = None if ok else f"{status} {json.dumps(answer)[:200]}"
            except (OSError, http.client.HTTPException, ValueError) as error:
                problem = f"{type(error).__name__}: {error}"
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
            if problem is None:
                latencies[index].append(time.perf_counter() - started)
            else:
                errors[index] += 1
                if len(samples) < 3:
                    samples.append(problem)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + duration
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    done = [t for per in latencies for t in per]
    median, p90 = stats(done) if done else (float("nan"), float("nan"))
    return label, len(done), sum(errors), len(done) / elapsed, median, p90, samples


results, loads = [], []
conn = http.client.HTTPConnection(host, port, timeout=120)
status, answer = request(conn, "POST", "/v1/workspaces", {"name": http_workspace})
assert status == 201, (status, answer)
try:
    results.append(measure("burrow exec WS -- true (a CLI process)", exec_once, runs))
    results.append(asyncio.run(mcp_stdio()))

    def rest_once():
        status, answer = request(conn, "POST", f"/v1/workspaces/{http_workspace}/exec", {"command": "true"})
        assert status == 200 and answer["exit_code"] == 0, (status, answer)

    results.append(measure("REST, keep-alive (POST .../exec)", rest_once, runs))
    results.append(asyncio.run(mcp_http()))

    base = results[0][1]
    print(f"{'round trip of `true`':<44} {'median':>10} {'p90':>10} {'runs':>6} {'vs exec':>8}")
    for label, median, p90, count in results:
        print(f"{label:<44} {median * 1e3:8.3f}ms {p90 * 1e3:8.3f}ms {count:>6} {median / base:7.2f}x")
    sys.stdout.flush()

    loads.append(load("POST /v1/workspaces/{ws}/exec (one workspace)", f"/v1/workspaces/{http_workspace}/exec", {"command": "true"}))
    loads.append(load("POST /v1/run (a fresh sandbox each)", "/v1/run", {"command": "true"}))
    print()
    print(f"{f'{clients} clients, {duration:g} s each':<44} {'requests':>9} {'req/s':>8} {'median':>10} {'p90':>10} {'errors':>7}")
    for label, count, errors, rate, median, p90, samples in loads:
        print(f"{label:<44} {count:>9} {rate:>8.0f} {median * 1e3:8.2f}ms {p90 * 1e3:8.2f}ms {errors:>7}")
        for sample in samples:
            print(f"    error: {sample}")
finally:
    conn.close()
    conn = http.client.HTTPConnection(host, port, timeout=120)
    status, _ = request(conn, "DELETE", f"/v1/workspaces/{http_workspace}")
    if status != 204:
        print(f"mcp_bench: DELETE /v1/workspaces/{http_workspace} answered {status}", file=sys.stderr)
    conn.close()
