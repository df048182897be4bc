"""CliClient against the real burrow binary, with no server: each test on a fresh BURROW_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import burrow
from burrow.cli import resolve_binary
from conftest import PATCH


@pytest.fixture
def cli(burrow_bin: str, cli_home: Path) -> burrow.CliClient:
    return burrow.CliClient(burrow_bin, home=cli_home)


@pytest.fixture
def ws(cli: burrow.CliClient) -> str:
    created = cli.create_workspace(name="proj")
    yield created["name"]
    try:
        cli.delete_workspace("proj")
    except burrow.NotFound:
        pass


def test_binary_comes_from_the_argument_then_burrow_bin(burrow_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_binary("/some/where/burrow") == "/some/where/burrow"
    monkeypatch.setenv("BURROW_BIN", burrow_bin)
    assert resolve_binary() == burrow_bin
    monkeypatch.setenv("BURROW_BIN", "no-such-burrow-binary")
    with pytest.raises(burrow.BurrowError, match="BURROW_BIN"):
        burrow.CliClient()


def test_run_string_and_list(cli: burrow.CliClient) -> None:
    result = cli.run("echo $((6*7)); echo err >&2; exit 3")
    assert result["exit_code"] == 3
    assert result["stdout"] == "42\n"
    assert result["stderr"] == "err\n"
    assert cli.run(["printf", "%s|%s", "a b", "c"])["stdout"] == "a b|c"
    assert cli.run("echo $GREETING", env={"GREETING": "hi"})["stdout"] == "hi\n"
    timed = cli.run("sleep 5", timeout=1)
    assert timed["timed_out"] is True


def test_run_has_no_network(cli: burrow.CliClient) -> None:
    result = cli.run(["python3", "-c", "import socket; socket.socket(socket.AF_INET).connect(('127.0.0.1', 9))"])
    assert result["exit_code"] != 0


def test_run_with_an_allowlist_refuses_other_hosts(cli: burrow.CliClient) -> None:
    result = cli.run("curl -s -w ' %{http_code}' http://elsewhere.invalid/", allow=["pypi.org"])
    assert result["stdout"].endswith(" 403"), result
    assert [d["host"] for d in result["network_denied"]] == ["elsewhere.invalid"]


def test_workspace_lifecycle(cli: burrow.CliClient) -> None:
    created = cli.create_workspace(name="life", labels={"team": "qa"})
    assert created["name"] == "life"
    assert created["labels"] == {"team": "qa"}
    assert created["state"] == "stopped"
    assert [w["name"] for w in cli.list_workspaces()] == ["life"]
    assert cli.get_workspace(created["id"])["name"] == "life"
    assert cli.start_workspace("life")["state"] == "running"
    assert cli.stop_workspace("life")["state"] == "stopped"
    with pytest.raises(burrow.Conflict):
        cli.create_workspace(name="life")
    cli.delete_workspace("life")
    with pytest.raises(burrow.NotFound) as missing:
        cli.get_workspace("life")
    assert "no workspace named life" in str(missing.value)
    assert missing.value.code == "not_found"
    assert missing.value.status is None


def test_exec(cli: burrow.CliClient, ws: str) -> None:
    assert cli.exec(ws, "echo $((1+2))")["stdout"] == "3\n"
    assert cli.exec(ws, ["printf", "%s", "a b"])["stdout"] == "a b"
    failed = cli.exec(ws, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (failed["exit_code"], failed["stdout"], failed["stderr"]) == (3, "out\n", "err\n")
    assert cli.exec(ws, "pwd")["stdout"] == "/workspace\n"
    cli.file_mkdir(ws, "sub/deeper", parents=True)
    assert cli.exec(ws, "pwd", cwd="sub/deeper")["stdout"] == "/workspace/sub/deeper\n"
    assert cli.exec(ws, "echo $K", env={"K": "v"})["stdout"] == "v\n"
    assert cli.exec(ws, "sleep 5", timeout=1)["timed_out"] is True


def test_exec_in_a_missing_workspace_is_not_found(cli: burrow.CliClient) -> None:
    with pytest.raises(burrow.NotFound):
        cli.exec("nowhere", "true")


def test_files_text_and_binary(cli: burrow.CliClient, ws: str) -> None:
    cli.file_write(ws, "hello.txt", "héllo\n")
    assert cli.file_read(ws, "hello.txt") == "héllo\n".encode()
    assert cli.file_read_text(ws, "hello.txt") == "héllo\n"
    blob = bytes(range(256)) * 3
    cli.file_write(ws, "blob.bin", blob)
    assert cli.file_read(ws, "blob.bin") == blob
    assert cli.file_read(ws, "blob.bin", offset=10, max_bytes=5) == blob[10:15]
    big = os.urandom(3 * 1024 * 1024 + 17)  # several pages of `file read`
    cli.file_write(ws, "big.bin", big)
    assert cli.file_read(ws, "big.bin") == big
    cli.file_write(ws, "run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert cli.exec(ws, "./run.sh")["stdout"] == "ran\n"
    entries = {e["path"]: e for e in cli.file_list(ws)["entries"]}
    assert entries["hello.txt"]["kind"] == "file"
    assert entries["blob.bin"]["size"] == len(blob)
    assert entries["run.sh"]["mode"] & 0o777 == 0o755
    cli.file_mkdir(ws, "d/e", parents=True)
    cli.file_write(ws, "d/e/f.txt", "f")
    assert {e["path"] for e in cli.file_list(ws, "d", recursive=True)["entries"]} == {"d/e", "d/e/f.txt"}  # relative to /workspace
    cli.file_delete(ws, "d", recursive=True)
    with pytest.raises(burrow.NotFound):
        cli.file_read(ws, "d/e/f.txt")
    with pytest.raises(burrow.Invalid):
        cli.file_read(ws, "../outside")


def test_patch_diff_snapshots_reset_audit(cli: burrow.CliClient, ws: str) -> None:
    cli.file_write(ws, "a.txt", "hello\n")
    applied = cli.apply_patch(ws, PATCH)
    assert [f["path"] for f in applied["files"]] == ["a.txt"]
    assert cli.file_read(ws, "a.txt") == b"world\n"
    changes = cli.diff(ws)["files"]
    assert [c["path"] for c in changes] == ["a.txt"]
    assert "+world" in changes[0]["patch"]

    snapshot = cli.create_snapshot(ws, "green")
    assert snapshot["name"] == "green"
    cli.file_write(ws, "later.txt", "later")
    assert cli.reset(ws, to="green")["name"] == ws
    with pytest.raises(burrow.NotFound):
        cli.file_read(ws, "later.txt")
    assert cli.file_read(ws, "a.txt") == b"world\n"
    assert [s["name"] for s in cli.list_snapshots(ws)] == ["green"]
    cli.reset(ws)
    with pytest.raises(burrow.NotFound):
        cli.file_read(ws, "a.txt")
    cli.delete_snapshot(ws, "green")
    assert cli.list_snapshots(ws) == []
    with pytest.raises(burrow.NotFound):
        cli.delete_snapshot(ws, "green")

    kinds = [entry["kind"] for entry in cli.audit(ws)]
    assert "patch" in kinds or "write" in kinds
    assert "reset" in kinds


def test_sessions_keep_cwd_and_variables(cli: burrow.CliClient, ws: str) -> None:
    session = cli.session_open(ws)["session"]
    first = cli.session_exec(ws, session, "mkdir -p sub && cd sub && export V=7")
    assert first["exit_code"] == 0
    second = cli.session_exec(ws, session, "pwd; echo $V")
    assert second["stdout"] == "/workspace/sub\n7\n"
    assert cli.session_exec(ws, session, "false")["exit_code"] == 1
    assert session in [s["session"] for s in cli.session_list(ws)]
    cli.session_close(ws, session)
    with pytest.raises(burrow.NotFound):
        cli.session_exec(ws, session, "true")


def test_shells(cli: burrow.CliClient, ws: str) -> None:
    shell = cli.shell_open(ws, cols=100, rows=20)["shell"]
    cli.shell_write(ws, shell, "echo hi-$((1+1))")
    cursor, seen = 0, ""
    deadline = time.monotonic() + 20
    while "hi-2" not in seen and time.monotonic() < deadline:
        page = cli.shell_read(ws, shell, cursor=cursor, wait_idle_ms=200, plain=True)
        seen += page["output"]
        cursor = page["next_cursor"]
    assert "hi-2" in seen
    cli.shell_signal(ws, shell, "INT")
    cli.shell_resize(ws, shell, 80, 24)
    listed = {s["shell"]: s for s in cli.shell_list(ws)}
    assert (listed[shell]["cols"], listed[shell]["rows"]) == (80, 24)
    cli.shell_close(ws, shell)
    with pytest.raises(burrow.NotFound):
        cli.shell_write(ws, shell, "true")


def test_services(cli: burrow.CliClient, ws: str) -> None:
    started = cli.service_start(
        ws, "web", ["sh", "-c", "echo starting; touch ready; echo up; exec sleep 1000"], ready={"file": "ready"}
    )
    assert started["state"] == "ready", started
    assert [s["name"] for s in cli.service_list(ws)] == ["web"]
    assert cli.service_status(ws, "web")["state"] == "ready"
    assert "up" in cli.service_logs(ws, "web")["logs"]
    stopped = cli.service_stop(ws, "web", grace=1)
    assert stopped["state"] == "stopped"
    failed = cli.service_start(ws, "bad", "exit 2", ready={"file": "never"})
    assert (failed["state"], failed["reason"]) == ("failed", "exited_before_ready")


def test_secrets_are_redacted(cli: burrow.CliClient, ws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    value = "s3cr3t-value-1234"
    command_lines: list[tuple[str, ...]] = []
    real_call = cli.call

    def recording_call(*args: str, **kwargs):
        command_lines.append(args)
        return real_call(*args, **kwargs)

    monkeypatch.setattr(cli, "call", recording_call)
    cli.secret_set(ws, "API_KEY", value)
    assert command_lines and all(value not in " ".join(args) for args in command_lines)
    assert cli.secret_list(ws) == ["API_KEY"]
    result = cli.exec(ws, "echo $API_KEY", secret_env=["API_KEY"])
    assert result["stdout"] == "[REDACTED:API_KEY]\n"
    assert value not in json.dumps(result)
    cli.secret_delete(ws, "API_KEY")
    assert cli.secret_list(ws) == []


def test_secrets_at_creation(cli: burrow.CliClient) -> None:
    cli.create_workspace(name="sec", secrets={"TOKEN_A": "abc-123-xyz"})
    assert cli.secret_list("sec") == ["TOKEN_A"]
    assert cli.exec("sec", "cat /run/secrets/TOKEN_A")["stdout"] == "[REDACTED:TOKEN_A]"


def test_connect_without_a_server_is_the_cli(burrow_bin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURROW_BIN", burrow_bin)
    from conftest import free_port

    chosen = burrow.connect(f"http://127.0.0.1:{free_port()}", probe_timeout=1)
    assert isinstance(chosen, burrow.CliClient)
    assert chosen.binary == burrow_bin


def test_cli_sees_what_the_cli_made(burrow_bin: str, cli_home: Path, cli: burrow.CliClient) -> None:
    cli.create_workspace(name="shared")
    listed = subprocess.run(
        [burrow_bin, "ws", "list", "--json"],
        env={**os.environ, "BURROW_HOME": str(cli_home)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert [w["name"] for w in json.loads(listed.stdout)] == ["shared"]
