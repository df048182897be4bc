"""A client for the HTTP API of ``burrow serve`` (docs/api.md), on the standard library only.

Every method is one request. Arguments are named as the JSON bodies and query parameters of
the API; answers come back as parsed JSON (dicts and lists), ``None`` for ``204``. A failed
request raises :class:`burrow.BurrowError` (``NotFound`` for 404, ``Unauthorized`` for 401).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import select
import socket
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from burrow._errors import BurrowError, http_error

DEFAULT_URL = "http://127.0.0.1:7878"

Command = str | Sequence[str]
"""A command: a string runs with ``/bin/sh -c``, a list is an argv."""

# Bodies larger than this are sent with `Expect: 100-continue`, so that a server refusing
# them (413) says so before we push megabytes into a connection it is about to close.
_EXPECT_CONTINUE_ABOVE = 1 << 20
_CONTINUE_WAIT_SECONDS = 1.0

_NO_BODY = object()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("burrow-sandbox")
    except Exception:  # not installed as a distribution (e.g. on sys.path from a checkout)
        return "0"


def _quote(segment: str) -> str:
    return urllib.parse.quote(str(segment), safe="")


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if value is not None}


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _command(command: Command) -> str | list[str]:
    if isinstance(command, str):
        return command
    return [str(arg) for arg in command]


def _mode(mode: int | str | None) -> str | None:
    if mode is None:
        return None
    if isinstance(mode, int):
        return format(mode, "o")
    return mode


def decode_content(answer: Mapping[str, Any]) -> bytes:
    """The bytes of a file-read answer (``content`` decoded by its ``encoding``)."""
    content = answer.get("content") or ""
    if answer.get("encoding") == "base64":
        return base64.b64decode(content)
    return content.encode("utf-8")


class Client:
    """burrow's HTTP API.

    >>> c = Client("http://127.0.0.1:7878", token="...")      # doctest: +SKIP
    >>> ws = c.create_workspace(name="proj")                    # doctest: +SKIP
    >>> c.exec("proj", "echo hi")["stdout"]                     # doctest: +SKIP
    'hi\\n'

    ``token`` defaults to the environment variable ``BURROW_TOKEN``. ``timeout`` is the
    socket timeout in seconds for each request (``None``: wait as long as the command runs).
    Proxy variables of the environment are ignored: burrow is reached directly.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http://HOST:PORT or https://HOST:PORT, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get("BURROW_TOKEN")
        self.timeout = timeout
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._user_agent = f"burrow-python/{_version()}"

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    # ----------------------------------------------------------------------------------
    # Transport

    def _connection(self, timeout: float | None) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        json_body: Any = _NO_BODY,
        data: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
        auth: bool = True,
        ok: Sequence[int] = (),
    ) -> Any:
        """Send one request and return its parsed JSON answer (``None`` when empty).

        ``path`` starts with ``/`` (e.g. ``/v1/workspaces``). Statuses of 400 and above
        raise :class:`BurrowError`, except those listed in ``ok``.
        """
        target = self._prefix + path
        if query:
            pairs = [(key, _query_value(value)) for key, value in query.items() if value is not None]
            if pairs:
                target += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        body: bytes | None = None
        if json_body is not _NO_BODY:
            body = json.dumps(json_body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        elif data is not None:
            body = data
            headers["Content-Type"] = content_type or "application/octet-stream"
        status, reason, payload = self._exchange(method, target, headers, body, timeout)
        return self._answer(status, reason, payload, ok)

    def _exchange(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: float | None,
    ) -> tuple[int, str, bytes]:
        conn = self._connection(self.timeout if timeout is None else timeout)
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for name, value in headers.items():
                conn.putheader(name, value)
            length = 0 if body is None else len(body)
            if body is not None or method in ("POST", "PUT", "PATCH"):
                conn.putheader("Content-Length", str(length))
            # Only on plain sockets: peeking at a TLS socket is not possible.
            expect = length > _EXPECT_CONTINUE_ABOVE and self._scheme == "http"
            if expect:
                conn.putheader("Expect", "100-continue")
            conn.endheaders()
            if body:
                if not expect or self._server_wants_body(conn):
                    try:
                        conn.send(body)
                    except (BrokenPipeError, ConnectionResetError):
                        # The server answered (413, 401, ...) and closed without reading
                        # the rest; its answer may still be waiting in our socket.
                        pass
            response = conn.getresponse()
            return response.status, response.reason, response.read()
        except (OSError, http.client.HTTPException) as error:
            raise BurrowError(
                f"cannot reach burrow at {self.base_url} ({error}); is `burrow serve` running?",
                code="unavailable",
            ) from error
        finally:
            conn.close()

    @staticmethod
    def _server_wants_body(conn: http.client.HTTPConnection) -> bool:
        """After headers with ``Expect: 100-continue``: True to send the body.

        Consumes an interim ``100 Continue``; returns False when the final answer came
        instead (the server refused without reading the body); True when nothing came in
        time (RFC 9110: send the body anyway).
        """
        sock = conn.sock
        if sock is None:
            return True
        deadline = time.monotonic() + _CONTINUE_WAIT_SECONDS
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            readable, _, _ = select.select([sock], [], [], remaining)
            if not readable:
                return True
            try:
                peeked = sock.recv(4096, socket.MSG_PEEK)
            except OSError:
                return False
            if not peeked:
                return False  # closed: getresponse() says what happened
            interim = peeked[9:12] == b"100"
            if len(peeked) >= 12 and not interim:
                return False  # the final answer, without reading the body
            end = peeked.find(b"\r\n\r\n")
            if interim and end >= 0:
                sock.recv(end + 4)  # consume exactly the interim answer
                return True
            time.sleep(0.01)  # a partial status line: wait for the rest

    @staticmethod
    def _answer(status: int, reason: str, payload: bytes, ok: Sequence[int]) -> Any:
        parsed: Any = None
        if payload:
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = None
        if status >= 400 and status not in ok:
            if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
                raise http_error(status, parsed.get("code"), parsed["error"])
            text = payload.decode("utf-8", "replace").strip().splitlines()
            detail = text[0][:200] if text else reason
            raise http_error(status, None, f"HTTP {status}: {detail}")
        if payload and parsed is None:
            raise BurrowError(
                f"burrow answered HTTP {status} with a body that is not JSON: "
                f"{payload[:200].decode('utf-8', 'replace')!r}",
                status=status,
                code="internal",
            )
        return parsed

    def _ws(self, workspace: str, *rest: str) -> str:
        path = "/v1/workspaces/" + _quote(workspace)
        for segment in rest:
            path += "/" + segment
        return path

    # ----------------------------------------------------------------------------------
    # Service

    def healthz(self, *, timeout: float | None = None) -> Any:
        """``GET /healthz`` (no token needed); raises when the server does not answer."""
        return self.request("GET", "/healthz", auth=False, timeout=timeout)

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document (``GET /openapi.json``)."""
        return self.request("GET", "/openapi.json", auth=False)

    def run(
        self,
        command: Command,
        *,
        timeout: float | None = None,
        network: str | None = None,
        allow: Sequence[str] | None = None,
        memory: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Run one command in a fresh sandbox; the ``Result`` (exit_code, stdout, ...).

        ``allow`` lists the hosts reachable through burrow's proxy (``pypi.org``,
        ``*.pythonhosted.org``, ``example.com:443``); refusals are in ``network_denied``.
        """
        body = _drop_none(
            {
                "command": _command(command),
                "timeout": timeout,
                "network": network,
                "allow": list(allow) if allow is not None else None,
                "memory": memory,
                "env": env,
            }
        )
        return self.request("POST", "/v1/run", json_body=body)

    # ----------------------------------------------------------------------------------
    # Workspaces

    def create_workspace(
        self,
        *,
        name: str | None = None,
        ttl: int | None = None,
        labels: Mapping[str, str] | None = None,
        network: str | None = None,
        allow: Sequence[str] | None = None,
        timeout: float | None = None,
        memory: str | None = None,
        pids: int | None = None,
        idle_timeout: int | None = None,
        secrets: Mapping[str, str] | None = None,
        redact: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Create a workspace; the ``Workspace`` (``id``, ``name``, ``state``, ...)."""
        body = _drop_none(
            {
                "name": name,
                "ttl": ttl,
                "labels": labels,
                "network": network,
                "allow": list(allow) if allow is not None else None,
                "timeout": timeout,
                "memory": memory,
                "pids": pids,
                "idle_timeout": idle_timeout,
                "secrets": secrets,
                "redact": list(redact) if redact is not None else None,
            }
        )
        return self.request("POST", "/v1/workspaces", json_body=body)

    def list_workspaces(self) -> list[dict[str, Any]]:
        return self.request("GET", "/v1/workspaces")

    def get_workspace(self, workspace: str) -> dict[str, Any]:
        return self.request("GET", self._ws(workspace))

    def delete_workspace(self, workspace: str) -> None:
        self.request("DELETE", self._ws(workspace))

    def start_workspace(self, workspace: str) -> dict[str, Any]:
        return self.request("POST", self._ws(workspace, "start"))

    def stop_workspace(self, workspace: str) -> dict[str, Any]:
        return self.request("POST", self._ws(workspace, "stop"))

    def exec(
        self,
        workspace: str,
        command: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        secret_env: Sequence[str] | None = None,
        redact: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Run a command in the workspace's cell; the ``Result``.

        A command that fails is not an error: look at ``exit_code``, ``timed_out``.
        """
        body = _drop_none(
            {
                "command": _command(command),
                "cwd": cwd,
                "env": env,
                "timeout": timeout,
                "secret_env": list(secret_env) if secret_env is not None else None,
                "redact": list(redact) if redact is not None else None,
            }
        )
        return self.request("POST", self._ws(workspace, "exec"), json_body=body)

    def reset(self, workspace: str, *, to: str | None = None) -> dict[str, Any]:
        """Back to the baseline, or to snapshot ``to``; the ``Workspace``."""
        return self.request("POST", self._ws(workspace, "reset"), json_body=_drop_none({"to": to}))

    def diff(self, workspace: str) -> dict[str, Any]:
        """``{"files": [{"path", "status", "binary", "insertions", "deletions", "patch"}]}``."""
        return self.request("GET", self._ws(workspace, "diff"))

    def apply_patch(self, workspace: str, patch: str | bytes) -> dict[str, Any]:
        """Apply a unified diff, all or nothing; ``{"files": [{"path", "action"}]}``."""
        data = patch.encode("utf-8") if isinstance(patch, str) else bytes(patch)
        return self.request(
            "POST", self._ws(workspace, "patch"), data=data, content_type="text/plain; charset=utf-8"
        )

    def audit(self, workspace: str) -> list[dict[str, Any]]:
        return self.request("GET", self._ws(workspace, "audit"))

    # Snapshots

    def create_snapshot(self, workspace: str, name: str) -> dict[str, Any]:
        return self.request("POST", self._ws(workspace, "snapshots"), json_body={"name": name})

    def list_snapshots(self, workspace: str) -> list[dict[str, Any]]:
        return self.request("GET", self._ws(workspace, "snapshots"))

    def delete_snapshot(self, workspace: str, name: str) -> None:
        self.request("DELETE", self._ws(workspace, "snapshots", _quote(name)))

    # ----------------------------------------------------------------------------------
    # Files (paths relative to /workspace)

    def file_list(self, workspace: str, path: str = ".", *, recursive: bool = False) -> dict[str, Any]:
        """``{"entries": [{"path", "kind", "size", "mode", "target"}], "truncated"}``."""
        return self.request("GET", self._ws(workspace, "files"), query={"path": path, "recursive": recursive})

    def file_read_page(
        self, workspace: str, path: str, *, offset: int = 0, max_bytes: int | None = None
    ) -> dict[str, Any]:
        """One read, as the API answers it: ``{"path", "size", "offset", "next_offset",
        "content", "encoding"}`` (``content`` still text or base64; see :func:`decode_content`)."""
        return self.request(
            "GET",
            self._ws(workspace, "files", "content"),
            query={"path": path, "offset": offset, "max_bytes": max_bytes},
        )

    def file_read(
        self, workspace: str, path: str, *, offset: int = 0, max_bytes: int | None = None
    ) -> bytes:
        """A file's bytes: the whole file from ``offset``, or at most ``max_bytes`` of it.

        Without ``max_bytes`` the pages of the API are followed to the end of the file.
        """
        if max_bytes is not None:
            return decode_content(self.file_read_page(workspace, path, offset=offset, max_bytes=max_bytes))
        chunks: list[bytes] = []
        while True:
            page = self.file_read_page(workspace, path, offset=offset)
            chunk = decode_content(page)
            chunks.append(chunk)
            following = page.get("next_offset")
            size = page.get("size")
            if not chunk or following is None or following <= offset:
                break
            if isinstance(size, int) and following >= size:
                break
            offset = following
        return b"".join(chunks)

    def file_read_text(self, workspace: str, path: str, *, encoding: str = "utf-8") -> str:
        """A whole file as text."""
        return self.file_read(workspace, path).decode(encoding)

    def file_write(
        self, workspace: str, path: str, content: bytes | str, *, mode: int | str | None = None
    ) -> None:
        """Write a file atomically (``str`` is written as UTF-8); ``mode`` e.g. ``0o755`` or ``"755"``."""
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        self.request(
            "PUT",
            self._ws(workspace, "files", "content"),
            query={"path": path, "mode": _mode(mode)},
            data=data,
        )

    def file_delete(self, workspace: str, path: str, *, recursive: bool = False) -> None:
        self.request("DELETE", self._ws(workspace, "files"), query={"path": path, "recursive": recursive})

    def file_mkdir(self, workspace: str, path: str, *, parents: bool = False) -> None:
        self.request("POST", self._ws(workspace, "files", "mkdir"), json_body={"path": path, "parents": parents})

    # ----------------------------------------------------------------------------------
    # Shells

    def shell_open(
        self,
        workspace: str,
        *,
        cwd: str | None = None,
        cols: int | None = None,
        rows: int | None = None,
        env: Mapping[str, str] | None = None,
        secret_env: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Open a PTY shell in the cell; ``{"shell", "pid"}``."""
        body = _drop_none(
            {
                "cwd": cwd,
                "cols": cols,
                "rows": rows,
                "env": env,
                "secret_env": list(secret_env) if secret_env is not None else None,
            }
        )
        return self.request("POST", self._ws(workspace, "shells"), json_body=body)

    def shell_list(self, workspace: str) -> list[dict[str, Any]]:
        return self.request("GET", self._ws(workspace, "shells"))

    def shell_read(
        self,
        workspace: str,
        shell: str,
        *,
        cursor: int = 0,
        max_chars: int | None = None,
        wait_idle_ms: int | None = None,
        plain: bool | None = None,
    ) -> dict[str, Any]:
        """Output after ``cursor``: ``{"output", "cursor", "next_cursor", "lost", "end", "exited"}``."""
        return self.request(
            "GET",
            self._ws(workspace, "shells", _quote(shell), "output"),
            query={"cursor": cursor, "max_chars": max_chars, "wait_idle_ms": wait_idle_ms, "plain": plain},
        )

    def shell_write(self, workspace: str, shell: str, text: str, *, newline: bool = True) -> None:
        """Type ``text`` (and a newline unless ``newline=False``)."""
        self.request(
            "POST",
            self._ws(workspace, "shells", _quote(shell), "input"),
            json_body={"text": text, "newline": newline},
        )

    def shell_signal(self, workspace: str, shell: str, signal: str) -> None:
        """Signal the foreground job: ``INT``, ``TERM``, ``HUP``, ``KILL`` or ``QUIT``."""
        name = signal.upper().removeprefix("SIG")
        self.request("POST", self._ws(workspace, "shells", _quote(shell), "signal"), json_body={"signal": name})

    def shell_resize(self, workspace: str, shell: str, cols: int, rows: int) -> None:
        self.request(
            "POST",
            self._ws(workspace, "shells", _quote(shell), "resize"),
            json_body={"cols": cols, "rows": rows},
        )

    def shell_close(self, workspace: str, shell: str) -> None:
        self.request("DELETE", self._ws(workspace, "shells", _quote(shell)))

    # ----------------------------------------------------------------------------------
    # Sessions

    def session_open(
        self,
        workspace: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        secret_env: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Open a persistent command session; ``{"session"}``."""
        body = _drop_none(
            {"cwd": cwd, "env": env, "secret_env": list(secret_env) if secret_env is not None else None}
        )
        return self.request("POST", self._ws(workspace, "sessions"), json_body=body)

    def session_list(self, workspace: str) -> list[dict[str, Any]]:
        return self.request("GET", self._ws(workspace, "sessions"))

    def session_exec(
        self, workspace: str, session: str, command: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Run a command line in the session's shell; ``{"exit_code", "stdout", "stderr",
        "output", "truncated", "timed_out", "ended", "restarted", "duration_ms"}``."""
        return self.request(
            "POST",
            self._ws(workspace, "sessions", _quote(session), "exec"),
            json_body=_drop_none({"command": command, "timeout": timeout}),
        )

    def session_close(self, workspace: str, session: str) -> None:
        self.request("DELETE", self._ws(workspace, "sessions", _quote(session)))

    # ----------------------------------------------------------------------------------
    # Services

    def service_start(
        self,
        workspace: str,
        name: str,
        command: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        secret_env: Sequence[str] | None = None,
        ready: Mapping[str, str] | None = None,
        ready_timeout: float | None = None,
        ready_interval_ms: int | None = None,
        restart: str | None = None,
    ) -> dict[str, Any]:
        """Start a service and wait until it is ready or has failed; the ``Service``.

        ``command`` is an argv (a string becomes ``["/bin/sh", "-c", command]``); ``ready``
        is one probe: ``{"file": P}``, ``{"tcp": "HOST:PORT"}``, ``{"http": URL}`` or
        ``{"cmd": CMD}``. A service that failed to become ready is returned too (HTTP 422),
        with ``state`` ``"failed"`` and a ``reason``: check ``state``.
        """
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
        body = _drop_none(
            {
                "name": name,
                "command": argv,
                "cwd": cwd,
                "env": env,
                "secret_env": list(secret_env) if secret_env is not None else None,
                "ready": dict(ready) if ready is not None else None,
                "ready_timeout": ready_timeout,
                "ready_interval_ms": ready_interval_ms,
                "restart": restart,
            }
        )
        answer = self.request("POST", self._ws(workspace, "services"), json_body=body, ok=(422,))
        if isinstance(answer, dict) and "error" in answer and "name" not in answer:
            raise http_error(422, answer.get("code"), str(answer["error"]))
        return answer

    def service_list(self, workspace: str) -> list[dict[str, Any]]:
        return self.request("GET", self._ws(workspace, "services"))

    def service_status(self, workspace: str, name: str) -> dict[str, Any]:
        return self.request("GET", self._ws(workspace, "services", _quote(name)))

    def service_logs(
        self, workspace: str, name: str, *, tail: int | None = None, all: bool = False
    ) -> dict[str, Any]:
        """``{"logs": TEXT}``: the last ``tail`` lines (server default 200), or ``all`` kept."""
        return self.request(
            "GET",
            self._ws(workspace, "services", _quote(name), "logs"),
            query={"tail": tail, "all": True if all else None},
        )

    def service_stop(self, workspace: str, name: str, *, grace: float | None = None) -> dict[str, Any]:
        """SIGTERM, then SIGKILL after ``grace`` seconds; the ``Service``."""
        return self.request("DELETE", self._ws(workspace, "services", _quote(name)), query={"grace": grace})

    # ----------------------------------------------------------------------------------
    # Secrets

    def secret_set(self, workspace: str, name: str, value: str) -> None:
        self.request("PUT", self._ws(workspace, "secrets", _quote(name)), json_body={"value": value})

    def secret_list(self, workspace: str) -> list[str]:
        return self.request("GET", self._ws(workspace, "secrets"))

    def secret_delete(self, workspace: str, name: str) -> None:
        self.request("DELETE", self._ws(workspace, "secrets", _quote(name)))
