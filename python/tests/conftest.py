"""Shared fixtures: the burrow binary, fresh state directories, and a `burrow serve` to talk to.

Everything runs from ``$BURROW_BIN`` (set by the Rust test that drives this suite; when it is
unset, the repository's ``target/debug/burrow`` or ``burrow`` on PATH). Each test session
gets its own ``BURROW_HOME``; the server listens on a free port of 127.0.0.1 and is stopped
with SIGTERM at the end, which it must survive with exit status 0. Nothing here contacts
any address but 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import burrow

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"

# A diff the suites apply to a file `a.txt` holding "hello".
PATCH = """\
diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-hello
+world
"""


def find_burrow_bin() -> str | None:
    """``$BURROW_BIN``, else the repository's debug build, else ``burrow`` on PATH."""
    explicit = os.environ.get("BURROW_BIN")
    if explicit:
        return explicit
    built = REPO / "target" / "debug" / "burrow"
    if built.is_file():
        return str(built)
    return shutil.which("burrow")


@pytest.fixture(scope="session", autouse=True)
def _loopback_only() -> None:
    """Keep every HTTP client of the suite (urllib, httpx) away from proxies."""
    for name in ("NO_PROXY", "no_proxy"):
        present = [part for part in os.environ.get(name, "").split(",") if part]
        for host in (LOOPBACK, "localhost"):
            if host not in present:
                present.append(host)
        os.environ[name] = ",".join(present)


@pytest.fixture(scope="session")
def burrow_bin() -> str:
    path = find_burrow_bin()
    if path is None or not os.access(path, os.X_OK):
        pytest.fail("no burrow binary: build it (cargo build -p burrow-cli) or set BURROW_BIN")
    return path


def burrow_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["BURROW_HOME"] = str(home)
    env.pop("BURROW_TOKEN", None)
    return env


def run_burrow(
    burrow_bin: str, home: Path, *args: str, input: bytes | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run ``burrow ARGS`` against the state in ``home``; fails the test if it fails (``check``)."""
    done = subprocess.run(
        [burrow_bin, *args],
        input=input.decode() if input is not None else None,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=burrow_env(home),
        timeout=120,
        check=False,
    )
    if check and done.returncode != 0:
        pytest.fail(f"burrow {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def delete_all_workspaces(burrow_bin: str, home: Path) -> None:
    """Deletes every workspace of ``home`` (the tenants' too): a workspace's cell outlives
    the burrow that started it, until its idle timeout."""
    listed = run_burrow(burrow_bin, home, "ws", "list", "--all", "--json", check=False)
    if listed.returncode != 0:
        return
    for workspace in json.loads(listed.stdout or "[]"):
        run_burrow(burrow_bin, home, "ws", "delete", workspace["id"], check=False)


@pytest.fixture
def cli_home(burrow_bin: str, tmp_path: Path):
    """A fresh, empty BURROW_HOME for one test; its workspaces are deleted afterwards."""
    home = tmp_path / "burrow-home"
    home.mkdir()
    yield home
    delete_all_workspaces(burrow_bin, home)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def raw_request(
    port: int,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = 60,
) -> tuple[int, Any]:
    """One HTTP request without the client library: (status, parsed JSON body or raw bytes)."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(payload) if payload else None
    except ValueError:
        return response.status, payload


class Server:
    """A running ``burrow serve`` and the state directory it serves."""

    def __init__(self, burrow_bin: str, home: Path, log: Path) -> None:
        self.bin = burrow_bin
        self.home = home
        self.log = log
        self.port = 0
        self.url = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._tokens: dict[str, str] = {}

    def start(self) -> None:
        for _attempt in range(3):
            self.port = free_port()
            self.url = f"http://{LOOPBACK}:{self.port}"
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(
                    [self.bin, "serve", "--listen", f"{LOOPBACK}:{self.port}"],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=burrow_env(self.home),
                )
            if self._wait_healthy(timeout=30):
                return
            if "in use" not in self.log_tail():  # anything but a lost race for the port
                break
        self.stop(check=False)
        pytest.fail(f"burrow serve did not answer GET /healthz on {self.url}: {self.log_tail()}")

    def _wait_healthy(self, timeout: float) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                status, _ = raw_request(self.port, "GET", "/healthz", timeout=2)
                if status == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.1)
        return False

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])

    def stop(self, *, check: bool = True) -> int | None:
        """SIGTERM, then wait; with ``check``, the exit status must be 0."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            if check:
                pytest.fail("burrow serve did not exit within 30 s of SIGTERM")
            return None
        if check:
            assert status == 0, f"burrow serve exited {status} on SIGTERM: {self.log_tail()}"
        return status

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_burrow(self.bin, self.home, *args, check=check)

    def token(self, tenant: str) -> str:
        """A token for ``tenant`` (made once per tenant with ``burrow token create``)."""
        if tenant not in self._tokens:
            self._tokens[tenant] = self.new_token(tenant)
        return self._tokens[tenant]

    def new_token(self, tenant: str) -> str:
        out = self.cli("token", "create", "--tenant", tenant).stdout
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        assert lines, f"burrow token create --tenant {tenant} printed nothing"
        return lines[-1]

    def token_ids(self, tenant: str) -> list[str]:
        """The ids ``burrow token list --json`` shows for ``tenant``."""
        listed = json.loads(self.cli("token", "list", "--json").stdout)
        if isinstance(listed, dict):
            listed = listed.get("tokens", [])
        return [str(entry["id"]) for entry in listed if entry.get("tenant") == tenant]

    def client(self, tenant: str) -> burrow.Client:
        return burrow.Client(self.url, token=self.token(tenant))


@pytest.fixture(scope="session")
def server(burrow_bin: str, tmp_path_factory: pytest.TempPathFactory):
    """One ``burrow serve`` for the whole session, on its own BURROW_HOME."""
    root = tmp_path_factory.mktemp("server")
    home = root / "home"
    home.mkdir()
    running = Server(burrow_bin, home, root / "serve.log")
    running.start()
    try:
        yield running
    finally:
        try:
            running.stop(check=True)
        finally:
            delete_all_workspaces(burrow_bin, home)
