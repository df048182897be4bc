"""burrow's HTTP API end to end (docs/api.md), through burrow.Client and raw requests.

A session-wide ``burrow serve`` on 127.0.0.1 (see conftest.py); tenants get their tokens
from ``burrow token create``. Each test works in workspaces of its own.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import threading
import time
import uuid

import pytest

import burrow
from conftest import PATCH, Server, raw_request

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def alpha(server: Server) -> burrow.Client:
    return server.client("alpha")


@pytest.fixture(scope="module")
def beta(server: Server) -> burrow.Client:
    return server.client("beta")


@pytest.fixture
def ws(alpha: burrow.Client) -> str:
    """A fresh workspace of tenant alpha, deleted afterwards."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    created = alpha.create_workspace(name=name)
    assert created["name"] == name
    yield name
    try:
        alpha.delete_workspace(name)
    except burrow.NotFound:
        pass


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ---------------------------------------------------------------------------------------
# Unauthenticated endpoints, one-shot runs


def test_healthz_and_openapi_need_no_token(server: Server) -> None:
    status, _ = raw_request(server.port, "GET", "/healthz")
    assert status == 200
    document = burrow.Client(server.url, token="").openapi()
    assert "openapi" in document
    assert any(path.startswith("/v1/workspaces") for path in document["paths"])


def test_run_string_and_list_commands(alpha: burrow.Client) -> None:
    result = alpha.run("echo $((6*7)); echo err >&2; exit 3")
    assert (result["exit_code"], result["stdout"], result["stderr"]) == (3, "42\n", "err\n")
    assert result["timed_out"] is False
    assert set(result) >= {"exit_code", "signal", "timed_out", "duration_ms", "stdout", "stderr", "truncated"}
    assert alpha.run(["printf", "%s|%s", "a b", "c"])["stdout"] == "a b|c"
    assert alpha.run("echo $GREETING", env={"GREETING": "hi"})["stdout"] == "hi\n"
    assert alpha.run("sleep 10", timeout=1)["timed_out"] is True


# ---------------------------------------------------------------------------------------
# Workspaces


def test_run_with_an_allowlist_refuses_other_hosts(alpha: burrow.Client) -> None:
    """The proxy refuses a name off the list before resolving it: nothing leaves this machine."""
    result = alpha.run("curl -s -w ' %{http_code}' http://elsewhere.invalid/", allow=["pypi.org"])
    assert result["stdout"].endswith(" 403"), result
    assert [d["host"] for d in result["network_denied"]] == ["elsewhere.invalid"]
    with pytest.raises(burrow.Invalid):
        alpha.run("true", network="loopback", allow=["pypi.org"])


def test_workspace_lifecycle(alpha: burrow.Client) -> None:
    name = f"life-{uuid.uuid4().hex[:8]}"
    created = alpha.create_workspace(name=name, labels={"team": "qa"}, ttl=3600)
    assert created["name"] == name
    assert created["labels"] == {"team": "qa"}
    assert created["expires_at"] is not None
    assert set(created) >= {"id", "name", "state", "created_at", "expires_at", "labels", "storage", "snapshots", "based_on"}
    assert name in [w["name"] for w in alpha.list_workspaces()]
    assert alpha.get_workspace(created["id"])["name"] == name
    assert alpha.get_workspace(name)["id"] == created["id"]
    assert alpha.start_workspace(name)["state"] == "running"
    assert alpha.stop_workspace(name)["state"] == "stopped"
    with pytest.raises(burrow.Conflict) as taken:
        alpha.create_workspace(name=name)
    assert taken.value.status == 409
    alpha.delete_workspace(name)
    with pytest.raises(burrow.NotFound) as missing:
        alpha.get_workspace(name)
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert str(missing.value)  # the server's one-line message


def test_exec_string_and_list_commands(alpha: burrow.Client, ws: str) -> None:
    assert alpha.exec(ws, "echo $((1+2))")["stdout"] == "3\n"
    assert alpha.exec(ws, ["printf", "%s", "a b"])["stdout"] == "a b"
    failed = alpha.exec(ws, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (failed["exit_code"], failed["stdout"], failed["stderr"]) == (3, "out\n", "err\n")
    assert alpha.exec(ws, "pwd")["stdout"] == "/workspace\n"
    alpha.file_mkdir(ws, "sub/deeper", parents=True)
    assert alpha.exec(ws, "pwd", cwd="sub/deeper")["stdout"] == "/workspace/sub/deeper\n"
    assert alpha.exec(ws, "echo $K", env={"K": "v"})["stdout"] == "v\n"
    assert alpha.exec(ws, "sleep 10", timeout=1)["timed_out"] is True
    assert alpha.exec(ws, "echo still here")["stdout"] == "still here\n"


def test_files_text_and_binary(alpha: burrow.Client, ws: str) -> None:
    alpha.file_write(ws, "hello.txt", "héllo\n")
    assert alpha.file_read(ws, "hello.txt") == "héllo\n".encode()
    page = alpha.file_read_page(ws, "hello.txt")
    assert (page["encoding"], page["content"], page["size"]) == ("utf-8", "héllo\n", len("héllo\n".encode()))

    blob = bytes(range(256)) * 3
    alpha.file_write(ws, "blob.bin", blob)
    assert alpha.file_read(ws, "blob.bin") == blob
    assert alpha.file_read_page(ws, "blob.bin")["encoding"] == "base64"
    assert alpha.file_read(ws, "blob.bin", offset=10, max_bytes=5) == blob[10:15]

    big = os.urandom(200_000)  # more than one 64 KiB page
    alpha.file_write(ws, "big.bin", big)
    first = alpha.file_read_page(ws, "big.bin")
    assert first["size"] == len(big) and first["next_offset"] is not None
    assert alpha.file_read(ws, "big.bin") == big

    alpha.file_write(ws, "run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert alpha.exec(ws, "./run.sh")["stdout"] == "ran\n"

    listing = alpha.file_list(ws)
    entries = {e["path"]: e for e in listing["entries"]}
    assert listing["truncated"] is False
    assert entries["hello.txt"]["kind"] == "file"
    assert entries["blob.bin"]["size"] == len(blob)
    assert entries["run.sh"]["mode"] & 0o777 == 0o755

    alpha.file_mkdir(ws, "d/e", parents=True)
    alpha.file_write(ws, "d/e/f.txt", "f")
    assert {e["path"] for e in alpha.file_list(ws, "d", recursive=True)["entries"]} == {"d/e", "d/e/f.txt"}
    alpha.file_delete(ws, "d", recursive=True)
    with pytest.raises(burrow.NotFound):
        alpha.file_read(ws, "d/e/f.txt")
    alpha.file_delete(ws, "hello.txt")
    assert "hello.txt" not in {e["path"] for e in alpha.file_list(ws)["entries"]}
    with pytest.raises(burrow.BurrowError) as escape:
        alpha.file_read(ws, "../outside")
    assert escape.value.status == 400


def test_patch_then_diff(alpha: burrow.Client, ws: str) -> None:
    alpha.file_write(ws, "a.txt", "hello\n")
    applied = alpha.apply_patch(ws, PATCH)
    assert [f["path"] for f in applied["files"]] == ["a.txt"]
    assert alpha.file_read(ws, "a.txt") == b"world\n"
    changes = alpha.diff(ws)["files"]
    assert [c["path"] for c in changes] == ["a.txt"]
    assert "+world" in changes[0]["patch"]
    assert changes[0]["binary"] is False
    with pytest.raises(burrow.BurrowError) as stale:
        alpha.apply_patch(ws, PATCH)  # its context no longer matches: nothing changes
    assert stale.value.status in (400, 409)
    assert alpha.file_read(ws, "a.txt") == b"world\n"


def test_snapshots_and_reset(alpha: burrow.Client, ws: str) -> None:
    alpha.file_write(ws, "a.txt", "one\n")
    snapshot = alpha.create_snapshot(ws, "green")
    assert snapshot["name"] == "green"
    alpha.file_write(ws, "later.txt", "later")
    assert alpha.reset(ws, to="green")["name"] == ws
    with pytest.raises(burrow.NotFound):
        alpha.file_read(ws, "later.txt")
    assert alpha.file_read(ws, "a.txt") == b"one\n"
    listed = alpha.list_snapshots(ws)
    assert [s["name"] for s in listed] == ["green"]
    assert set(listed[0]) >= {"name", "id", "parent", "created_at", "current"}
    alpha.reset(ws)
    with pytest.raises(burrow.NotFound):
        alpha.file_read(ws, "a.txt")
    alpha.delete_snapshot(ws, "green")
    assert alpha.list_snapshots(ws) == []
    with pytest.raises(burrow.NotFound):
        alpha.delete_snapshot(ws, "green")


def test_audit(alpha: burrow.Client, ws: str) -> None:
    alpha.exec(ws, "echo audited")
    alpha.file_write(ws, "x.txt", "x")
    log = alpha.audit(ws)
    execs = [e for e in log if e["kind"] == "exec"]
    assert execs and "echo audited" in execs[-1]["subject"]
    assert execs[-1]["exit_code"] == 0
    assert set(execs[-1]) >= {"at_ms", "kind", "subject", "cwd", "exit_code", "duration_ms"}


# ---------------------------------------------------------------------------------------
# Shells, sessions, services, secrets


def _read_until(client: burrow.Client, ws: str, shell: str, cursor: int, needle: str) -> tuple[int, str]:
    """Reads a shell's output from ``cursor`` until ``needle`` shows (30 s at most)."""
    seen = ""
    deadline = time.monotonic() + 30
    while needle not in seen and time.monotonic() < deadline:
        page = client.shell_read(ws, shell, cursor=cursor, wait_idle_ms=200, plain=True)
        seen += page["output"]
        cursor = page["next_cursor"]
    assert needle in seen, seen
    return cursor, seen


def _wait_for_process(client: burrow.Client, ws: str, comm: str) -> None:
    """Waits (10 s at most) until a process named ``comm`` runs in the workspace's cell."""
    probe = f'for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = {comm} ] && exit 0; done; exit 1'
    deadline = time.monotonic() + 10
    while client.exec(ws, probe)["exit_code"] != 0:
        assert time.monotonic() < deadline, f"no {comm} process in {ws}"
        time.sleep(0.05)


def test_shell(alpha: burrow.Client, ws: str) -> None:
    opened = alpha.shell_open(ws, cols=100, rows=20)
    shell = opened["shell"]
    assert isinstance(opened["pid"], int)
    alpha.shell_write(ws, shell, "echo hi-$((1+1))")
    cursor, _ = _read_until(alpha, ws, shell, 0, "hi-2")
    # The INT must find `sleep` in the foreground: until the shell has started it, a signal
    # goes to the shell itself (as a Ctrl-C typed too early would).
    alpha.shell_write(ws, shell, "echo started-$((1+2)); sleep 100")
    cursor, _ = _read_until(alpha, ws, shell, cursor, "started-3")
    _wait_for_process(alpha, ws, "sleep")
    alpha.shell_signal(ws, shell, "INT")
    alpha.shell_resize(ws, shell, 80, 24)
    listed = {s["shell"]: s for s in alpha.shell_list(ws)}
    assert (listed[shell]["cols"], listed[shell]["rows"]) == (80, 24)
    alpha.shell_write(ws, shell, "echo after-$((2+2))")
    _read_until(alpha, ws, shell, cursor, "after-4")  # the INT ended the sleep; the shell goes on
    alpha.shell_close(ws, shell)
    with pytest.raises(burrow.NotFound):
        alpha.shell_write(ws, shell, "true")


def test_session_keeps_cwd_and_variables(alpha: burrow.Client, ws: str) -> None:
    session = alpha.session_open(ws)["session"]
    first = alpha.session_exec(ws, session, "mkdir -p sub && cd sub && export V=7")
    assert first["exit_code"] == 0
    second = alpha.session_exec(ws, session, "pwd; echo $V; echo e >&2")
    assert second["stdout"] == "/workspace/sub\n7\n"
    assert second["stderr"] == "e\n"
    assert [chunk["stream"] for chunk in second["output"]] == ["stdout", "stderr"]
    assert alpha.session_exec(ws, session, "false")["exit_code"] == 1
    timed = alpha.session_exec(ws, session, "sleep 30", timeout=1)
    assert timed["timed_out"] is True
    assert alpha.session_exec(ws, session, "pwd")["stdout"] == "/workspace/sub\n"
    listed = {s["session"]: s for s in alpha.session_list(ws)}
    assert listed[session]["cwd"] == "/workspace/sub"
    alpha.session_close(ws, session)
    with pytest.raises(burrow.NotFound):
        alpha.session_exec(ws, session, "true")


def test_service_with_file_probe_and_logs(alpha: burrow.Client, ws: str) -> None:
    started = alpha.service_start(
        ws,
        "web",
        ["sh", "-c", "echo starting; touch ready; echo up; exec sleep 1000"],
        ready={"file": "ready"},
        ready_timeout=30,
    )
    assert started["state"] == "ready", started
    assert started["argv"] == ["sh", "-c", "echo starting; touch ready; echo up; exec sleep 1000"]
    assert [s["name"] for s in alpha.service_list(ws)] == ["web"]
    assert alpha.service_status(ws, "web")["state"] == "ready"
    logs = alpha.service_logs(ws, "web")["logs"]
    assert "starting" in logs and "up" in logs
    assert alpha.service_logs(ws, "web", tail=1)["logs"].strip() == "up"
    stopped = alpha.service_stop(ws, "web", grace=1)
    assert stopped["state"] == "stopped"
    failed = alpha.service_start(ws, "bad", ["sh", "-c", "exit 2"], ready={"file": "never"})
    assert (failed["state"], failed["reason"], failed["exit_code"]) == ("failed", "exited_before_ready", 2)
    with pytest.raises(burrow.NotFound):
        alpha.service_status(ws, "nope")


def test_secrets_are_redacted(alpha: burrow.Client, ws: str) -> None:
    value = "s3cr3t-value-98765"
    alpha.secret_set(ws, "API_KEY", value)
    assert alpha.secret_list(ws) == ["API_KEY"]
    result = alpha.exec(ws, "echo $API_KEY; cat /run/secrets/API_KEY", secret_env=["API_KEY"])
    assert result["stdout"] == "[REDACTED:API_KEY]\n[REDACTED:API_KEY]"
    assert value not in json.dumps(result)
    not_given = alpha.exec(ws, "echo ${API_KEY:-absent}")
    assert not_given["stdout"] == "absent\n"
    alpha.file_write(ws, "leak.txt", f"key={value}\n")
    assert alpha.file_read(ws, "leak.txt") == b"key=[REDACTED:API_KEY]\n"
    alpha.secret_delete(ws, "API_KEY")
    assert alpha.secret_list(ws) == []


def test_secrets_at_creation(alpha: burrow.Client) -> None:
    name = f"sec-{uuid.uuid4().hex[:8]}"
    alpha.create_workspace(name=name, secrets={"DB_PASSWORD": "pw-0123456789"})
    try:
        assert alpha.secret_list(name) == ["DB_PASSWORD"]
        out = alpha.exec(name, "echo $PW", secret_env=["DB_PASSWORD=PW"])["stdout"]
        assert out == "[REDACTED:DB_PASSWORD]\n"
    finally:
        alpha.delete_workspace(name)


# ---------------------------------------------------------------------------------------
# Authentication and tenants


def test_no_token_is_401(server: Server) -> None:
    status, body = raw_request(server.port, "GET", "/v1/workspaces")
    assert status == 401
    assert body["code"] == "unauthorized" and body["error"]
    with pytest.raises(burrow.Unauthorized) as refused:
        burrow.Client(server.url, token="").list_workspaces()
    assert refused.value.status == 401


def test_bad_token_is_401(server: Server) -> None:
    status, body = raw_request(server.port, "GET", "/v1/workspaces", headers=bearer("not-a-token"))
    assert (status, body["code"]) == (401, "unauthorized")
    status, _ = raw_request(server.port, "GET", "/v1/workspaces", headers={"Authorization": "Basic Zm9vOmJhcg=="})
    assert status == 401
    with pytest.raises(burrow.Unauthorized):
        burrow.Client(server.url, token="nope").create_workspace(name="x")


def test_revoked_token_is_401(server: Server) -> None:
    tenant = f"revoked-{uuid.uuid4().hex[:6]}"
    token = server.new_token(tenant)
    client = burrow.Client(server.url, token=token)
    assert client.list_workspaces() == []
    (token_id,) = server.token_ids(tenant)
    server.cli("token", "revoke", token_id)
    with pytest.raises(burrow.Unauthorized):
        client.list_workspaces()


def test_other_tenants_workspace_is_404(alpha: burrow.Client, beta: burrow.Client) -> None:
    name = f"private-{uuid.uuid4().hex[:8]}"
    mine = alpha.create_workspace(name=name)
    alpha.file_write(name, "secret.txt", "alpha's")
    try:
        for attempt in (
            lambda: beta.get_workspace(name),
            lambda: beta.get_workspace(mine["id"]),
            lambda: beta.exec(name, "true"),
            lambda: beta.file_read(name, "secret.txt"),
            lambda: beta.delete_workspace(name),
            lambda: beta.delete_workspace(mine["id"]),
        ):
            with pytest.raises(burrow.NotFound) as hidden:
                attempt()
            assert hidden.value.status == 404
        assert name not in [w["name"] for w in beta.list_workspaces()]
        # Names are per tenant: beta may have its own workspace of that name.
        theirs = beta.create_workspace(name=name)
        assert theirs["id"] != mine["id"]
        beta.delete_workspace(name)
        assert alpha.get_workspace(name)["id"] == mine["id"]
        assert alpha.file_read(name, "secret.txt") == b"alpha's"
    finally:
        alpha.delete_workspace(name)


def test_oversize_body_is_413(alpha: burrow.Client, ws: str) -> None:
    with pytest.raises(burrow.TooLarge) as upload:
        alpha.file_write(ws, "huge.bin", b"\0" * (33 * MIB))
    assert (upload.value.status, upload.value.code) == (413, "too_large")
    with pytest.raises(burrow.TooLarge):
        alpha.exec(ws, ["echo", "x" * (17 * MIB)])  # JSON bodies: 16 MiB
    # A large write within the workspace's max_file_write (8 MiB by default) still goes
    # through, and the server is still there.
    alpha.file_write(ws, "large.bin", b"\1" * (6 * MIB))
    assert any(e["path"] == "large.bin" and e["size"] == 6 * MIB for e in alpha.file_list(ws)["entries"])
    assert alpha.exec(ws, "echo ok")["stdout"] == "ok\n"


def test_malformed_json_is_400_and_the_server_goes_on(server: Server, alpha: burrow.Client) -> None:
    token = server.token("alpha")
    headers = {**bearer(token), "Content-Type": "application/json"}
    for body in (b'{"name": ', b"not json at all", b'{"name": 5}', b"[]"):
        status, answer = raw_request(server.port, "POST", "/v1/workspaces", headers=headers, body=body)
        assert status == 400, (body, status, answer)
        assert answer["code"] == "invalid" and answer["error"]
    status, answer = raw_request(server.port, "POST", "/v1/run", headers=headers, body=b'{"command": }')
    assert (status, answer["code"]) == (400, "invalid")
    assert isinstance(alpha.list_workspaces(), list)
    assert alpha.run("echo fine")["stdout"] == "fine\n"


def test_unknown_route_is_a_json_404(server: Server) -> None:
    status, answer = raw_request(server.port, "GET", "/v1/nothing-here", headers=bearer(server.token("alpha")))
    assert status == 404
    assert answer["code"] == "not_found"


# ---------------------------------------------------------------------------------------
# Load


def test_fifty_concurrent_clients(server: Server) -> None:
    clients = 50
    start = threading.Barrier(clients)
    run_id = uuid.uuid4().hex[:6]
    token = server.token("load")

    def one(n: int) -> str:
        client = burrow.Client(server.url, token=token)  # one client per thread
        name = f"load-{run_id}-{n}"
        start.wait(timeout=60)
        client.create_workspace(name=name)
        try:
            result = client.exec(name, f"echo {n}")
            assert result["exit_code"] == 0, result
            return result["stdout"]
        finally:
            client.delete_workspace(name)

    with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
        outputs = list(pool.map(one, range(clients), timeout=600))
    assert outputs == [f"{n}\n" for n in range(clients)]
    left = [w["name"] for w in server.client("load").list_workspaces() if w["name"].startswith(f"load-{run_id}-")]
    assert left == []
