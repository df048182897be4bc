"""burrow's MCP tools through the official MCP Python SDK, over stdio and streamable HTTP.

``burrow mcp --profile P`` runs on a fresh BURROW_HOME per test (it acts for the local user);
``/mcp`` of the session's ``burrow serve`` is reached with a tenant's bearer token. Argument
names follow docs/api.md: those of the HTTP bodies, ``workspace`` for the workspace and
``command`` as a shell command line; ``content`` for the text of ``file_write`` and ``patch``
for the diff of ``patch_apply`` (the HTTP API sends those as raw bodies, so the names are
this suite's reading of the spec, checked against each tool's input schema first).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("mcp")

import httpx  # noqa: E402  (the MCP SDK's own HTTP client)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from conftest import PATCH, Server, burrow_env, raw_request, run_burrow  # noqa: E402

T = TypeVar("T")

CORE = {
    "workspace_create",
    "workspace_exec",
    "file_read",
    "file_write",
    "patch_apply",
    "workspace_diff",
    "workspace_delete",
}
PROFILES = {
    "run": {"run_command"},
    "core": CORE,
    "full": CORE
    | {
        "run_command",
        "workspace_list",
        "workspace_status",
        "workspace_start",
        "workspace_stop",
        "workspace_reset",
        "file_list",
        "file_delete",
        "snapshot_create",
        "snapshot_list",
        "snapshot_delete",
        "audit_log",
        "shell_open",
        "shell_read",
        "shell_write",
        "shell_signal",
        "shell_close",
        "session_open",
        "session_exec",
        "session_close",
        "service_start",
        "service_status",
        "service_logs",
        "service_stop",
        "secret_set",
        "secret_list",
        "secret_delete",
    },
}

# The arguments this suite passes, per tool: each must be in the tool's input schema.
ARGUMENTS = {
    "workspace_create": {"name"},
    "workspace_exec": {"workspace", "command"},
    "file_write": {"workspace", "path", "content"},
    "file_read": {"workspace", "path"},
    "patch_apply": {"workspace", "patch"},
    "workspace_diff": {"workspace"},
    "workspace_delete": {"workspace"},
    "run_command": {"command"},
}

TIMEOUT = 120


def run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, TIMEOUT)

    return asyncio.run(bounded())


# ---------------------------------------------------------------------------------------
# Transports


@contextlib.asynccontextmanager
async def stdio_session(burrow_bin: str, home: Path, profile: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=burrow_bin, args=["mcp", "--profile", profile], env=burrow_env(home))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@contextlib.asynccontextmanager
async def http_session(server: Server, token: str) -> AsyncIterator[ClientSession]:
    url = f"{server.url}/mcp"
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, trust_env=False, timeout=httpx.Timeout(30, read=300)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


# ---------------------------------------------------------------------------------------
# Helpers


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def call_ok(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.isError, f"{tool}({arguments}) failed: {text_of(result)}"
    return result


async def call_error(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.isError, f"{tool}({arguments}) should have failed, got: {text_of(result)}"
    message = text_of(result)
    assert message.strip(), f"{tool}: a tool error should say what to do"
    return message


async def tool_names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def check_arguments(session: ClientSession) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    for name, wanted in ARGUMENTS.items():
        if name not in tools:
            continue
        offered = set(tools[name].inputSchema.get("properties", {}))
        assert wanted <= offered, f"{name} takes {sorted(offered)}; this suite passes {sorted(wanted)}"
    required = set(tools["workspace_exec"].inputSchema.get("required", []))
    assert {"workspace", "command"} <= required


async def workflow(session: ClientSession, name: str) -> None:
    """Create, exec, write, read, patch, diff, delete, with bad calls in between."""
    await check_arguments(session)

    created = await call_ok(session, "workspace_create", {"name": name})
    if created.structuredContent is not None:
        assert created.structuredContent.get("name") == name

    executed = await call_ok(session, "workspace_exec", {"workspace": name, "command": "echo $((20+22)); pwd"})
    assert "42" in text_of(executed)
    if executed.structuredContent is not None:
        assert executed.structuredContent["exit_code"] == 0
        assert executed.structuredContent["stdout"] == "42\n/workspace\n"
    failing = await session.call_tool("workspace_exec", {"workspace": name, "command": "echo nope >&2; exit 3"})
    assert "3" in text_of(failing) and "nope" in text_of(failing)
    if failing.structuredContent is not None:
        assert failing.structuredContent["exit_code"] == 3

    await call_ok(session, "file_write", {"workspace": name, "path": "a.txt", "content": "hello\n"})
    read = await call_ok(session, "file_read", {"workspace": name, "path": "a.txt"})
    assert "hello" in text_of(read)
    if read.structuredContent is not None:
        assert read.structuredContent["content"] == "hello\n"

    await call_ok(session, "patch_apply", {"workspace": name, "patch": PATCH})
    read = await call_ok(session, "file_read", {"workspace": name, "path": "a.txt"})
    assert "world" in text_of(read) and "hello" not in text_of(read)

    diff = await call_ok(session, "workspace_diff", {"workspace": name})
    assert "+world" in text_of(diff)
    if diff.structuredContent is not None:
        assert [f["path"] for f in diff.structuredContent["files"]] == ["a.txt"]

    # Bad calls are tool errors, and the server goes on.
    await call_error(session, "workspace_exec", {"workspace": name})  # no command
    await call_error(session, "workspace_exec", {"workspace": f"{name}-missing", "command": "true"})
    await call_error(session, "file_read", {"workspace": name, "path": "../../etc/passwd"})
    await call_error(session, "patch_apply", {"workspace": name, "patch": "this is not a diff"})
    again = await call_ok(session, "workspace_exec", {"workspace": name, "command": "cat a.txt"})
    assert "world" in text_of(again)

    await call_ok(session, "workspace_delete", {"workspace": name})
    await call_error(session, "workspace_exec", {"workspace": name, "command": "true"})


# ---------------------------------------------------------------------------------------
# stdio


@pytest.mark.parametrize("profile", ["run", "core", "full"])
def test_stdio_profiles_have_exactly_their_tools(burrow_bin: str, cli_home: Path, profile: str) -> None:
    async def go() -> set[str]:
        async with stdio_session(burrow_bin, cli_home, profile) as session:
            return await tool_names(session)

    assert run(go()) == PROFILES[profile]


def test_stdio_default_profile_is_one_of_them(burrow_bin: str, cli_home: Path) -> None:
    async def go() -> set[str]:
        params = StdioServerParameters(command=burrow_bin, args=["mcp"], env=burrow_env(cli_home))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await tool_names(session)

    assert run(go()) in PROFILES.values()


def test_stdio_workflow(burrow_bin: str, cli_home: Path) -> None:
    async def go() -> None:
        async with stdio_session(burrow_bin, cli_home, "core") as session:
            await workflow(session, "mcp-stdio")

    run(go())


def test_stdio_acts_for_the_local_user(burrow_bin: str, cli_home: Path) -> None:
    """Workspaces made over stdio are the CLI's, and the other way round."""
    run_burrow(burrow_bin, cli_home, "ws", "create", "--name", "from-cli")

    async def go() -> str:
        async with stdio_session(burrow_bin, cli_home, "full") as session:
            await call_ok(session, "workspace_create", {"name": "from-mcp"})
            listed = await call_ok(session, "workspace_list", {})
            return text_of(listed) + json.dumps(listed.structuredContent)

    seen = run(go())
    assert "from-cli" in seen
    names = [w["name"] for w in json.loads(run_burrow(burrow_bin, cli_home, "ws", "list", "--json").stdout)]
    assert sorted(names) == ["from-cli", "from-mcp"]


def test_stdio_run_command(burrow_bin: str, cli_home: Path) -> None:
    async def go() -> Any:
        async with stdio_session(burrow_bin, cli_home, "run") as session:
            result = await call_ok(session, "run_command", {"command": "echo $((3*4))"})
            await call_error(session, "run_command", {})
            return result

    result = run(go())
    assert "12" in text_of(result)
    if result.structuredContent is not None:
        assert result.structuredContent["stdout"] == "12\n"


def test_stdio_full_profile_sessions_and_files(burrow_bin: str, cli_home: Path) -> None:
    async def go() -> None:
        async with stdio_session(burrow_bin, cli_home, "full") as session:
            await call_ok(session, "workspace_create", {"name": "full"})
            opened = await call_ok(session, "session_open", {"workspace": "full"})
            session_id = (opened.structuredContent or {}).get("session") or text_of(opened).strip()
            await call_ok(session, "session_exec", {"workspace": "full", "session": session_id, "command": "mkdir -p s && cd s"})
            pwd = await call_ok(session, "session_exec", {"workspace": "full", "session": session_id, "command": "pwd"})
            assert "/workspace/s" in text_of(pwd)
            await call_ok(session, "session_close", {"workspace": "full", "session": session_id})
            listed = await call_ok(session, "file_list", {"workspace": "full"})
            assert "s" in text_of(listed) or "s" in json.dumps(listed.structuredContent)

    run(go())


# ---------------------------------------------------------------------------------------
# streamable HTTP


def test_http_workflow(server: Server) -> None:
    token = server.token("mcp-tenant")

    async def go() -> set[str]:
        async with http_session(server, token) as session:
            await workflow(session, f"mcp-http-{uuid.uuid4().hex[:6]}")
            return await tool_names(session)

    names = run(go())
    assert CORE <= names


def test_http_mcp_needs_a_token(server: Server) -> None:
    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        }
    ).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    status, _ = raw_request(server.port, "POST", "/mcp", headers=headers, body=initialize)
    assert status == 401
    status, _ = raw_request(
        server.port, "POST", "/mcp", headers={**headers, "Authorization": "Bearer wrong"}, body=initialize
    )
    assert status == 401


def test_http_tenants_do_not_see_each_other(server: Server) -> None:
    name = f"mcp-own-{uuid.uuid4().hex[:6]}"

    async def go() -> str:
        async with http_session(server, server.token("mcp-a")) as session:
            await call_ok(session, "workspace_create", {"name": name})
        async with http_session(server, server.token("mcp-b")) as session:
            message = await call_error(session, "workspace_exec", {"workspace": name, "command": "true"})
        async with http_session(server, server.token("mcp-a")) as session:
            await call_ok(session, "workspace_exec", {"workspace": name, "command": "true"})
            await call_ok(session, "workspace_delete", {"workspace": name})
        return message

    assert run(go())

