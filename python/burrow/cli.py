"""The methods of :class:`burrow.Client`, carried out by running the ``burrow`` binary.

For when no server runs: the CLI acts for the local user, on the state in ``$BURROW_HOME``.
Answers have the shapes of the HTTP API's (the CLI's ``--json`` where it has one, rebuilt
otherwise). A failure (exit status 125 and ``burrow: ...`` on stderr) raises
:class:`burrow.BurrowError`, with ``status`` ``None`` and ``code`` read from the message
where it says (``not_found``, ``conflict``, ``invalid``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from burrow._errors import BurrowError, NotFound, cli_error
from burrow.client import Command, _mode


_CONTINUE_AT = re.compile(r"continue with --offset (\d+)")


def resolve_binary(binary: str | None = None) -> str:
    """The burrow binary: ``binary``, else ``$BURROW_BIN``, else ``burrow`` on ``PATH``."""
    name = binary or os.environ.get("BURROW_BIN") or "burrow"
    if os.sep in name:
        return name
    found = shutil.which(name)
    if found is None:
        raise BurrowError(
            f"cannot find the burrow binary {name!r} on PATH; install burrow or set BURROW_BIN",
            code="unavailable",
        )
    return found


def _pairs(flag: str, values: Mapping[str, Any] | None) -> list[str]:
    args: list[str] = []
    for key, value in (values or {}).items():
        args += [flag, f"{key}={value}"]
    return args


def _each(flag: str, values: Sequence[str] | None) -> list[str]:
    args: list[str] = []
    for value in values or ():
        args += [flag, str(value)]
    return args


def _network(network: str | None, allow: Sequence[str] | None) -> str | None:
    """``--network``'s value: ``allow:HOST,...`` for an allowlist, which is a mode of its own."""
    if not allow:
        return network
    if network is not None:
        raise ValueError("give either network or allow: an allowlist is its own network mode")
    return "allow:" + ",".join(allow)


def _opt(flag: str, value: Any) -> list[str]:
    if value is None:
        return []
    return [flag, str(value)]


def _argv(command: Command) -> list[str]:
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    return [str(arg) for arg in command]


class CliClient:
    """The methods of :class:`burrow.Client` that the CLI has, run through ``burrow``.

    ``binary``: the burrow binary (default ``$BURROW_BIN``, else ``burrow`` on ``PATH``).
    ``home``: the state directory (sets ``BURROW_HOME``; default: burrow's own default).
    ``env``: the environment of each burrow process (default: this process's).
    """

    def __init__(
        self,
        binary: str | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.binary = resolve_binary(binary)
        self.env = dict(os.environ if env is None else env)
        if home is not None:
            self.env["BURROW_HOME"] = os.fspath(home)

    def __repr__(self) -> str:
        return f"CliClient({self.binary!r})"

    # ----------------------------------------------------------------------------------
    # Running burrow

    def call(
        self,
        *args: str,
        input: bytes | None = None,
        cwd: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run ``burrow ARGS...``; the completed process, whatever its exit status."""
        try:
            return subprocess.run(
                [self.binary, *args],
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                env=self.env,
                cwd=cwd,
                check=False,
            )
        except OSError as error:
            raise BurrowError(f"cannot run {self.binary}: {error}", code="unavailable") from error

    def _ok(self, *args: str, input: bytes | None = None) -> bytes:
        done = self.call(*args, input=input)
        if done.returncode != 0:
            raise cli_error(done.stderr.decode("utf-8", "replace"), done.returncode)
        return done.stdout

    def _json(self, *args: str, input: bytes | None = None, any_status: bool = False, cwd: str | None = None) -> Any:
        """Run a ``--json`` command and parse what it prints.

        With ``any_status``, a JSON answer counts whatever the exit status (``exec`` exits
        with the command's status, ``service start`` with 1 when the service failed).
        burrow's own failures raise: no JSON, or ``{"exit_code": 125, "error": "..."}``
        without the ``stdout`` that a command's result always has.
        """
        done = self.call(*args, input=input, cwd=cwd)
        if done.returncode == 0 or any_status:
            try:
                answer = json.loads(done.stdout)
            except ValueError:
                answer = None
            own_failure = isinstance(answer, dict) and answer.get("error") and "stdout" not in answer
            if done.returncode != 0 and own_failure:
                raise cli_error("burrow: " + str(answer["error"]), done.returncode)
            if answer is not None:
                return answer
            if done.returncode == 0:
                raise BurrowError(
                    f"burrow {' '.join(args[:2])} printed no JSON: {done.stdout[:200]!r}",
                    code="internal",
                )
        raise cli_error(done.stderr.decode("utf-8", "replace"), done.returncode)

    # ----------------------------------------------------------------------------------
    # Sandboxed commands

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
        """Run one command in a fresh sandbox (in an empty temporary directory); the ``Result``."""
        args = ["run", "--json", "--no-stdin"]
        args += _opt("--timeout", timeout) + _opt("--network", _network(network, allow)) + _opt("--memory", memory)
        args += _pairs("--env", env)
        with tempfile.TemporaryDirectory(prefix="burrow-run-") as scratch:
            return self._json(*args, "--", *_argv(command), any_status=True, cwd=scratch)

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
        """Create a workspace; the ``Workspace``.

        Secrets are set after creation through stdin, so that they never show in the
        process list.
        """
        args = ["ws", "create", "--json"]
        args += _opt("--name", name) + _opt("--ttl", ttl) + _pairs("--label", labels)
        args += _opt("--network", _network(network, allow)) + _opt("--timeout", timeout) + _opt("--memory", memory)
        args += _opt("--pids", pids) + _opt("--idle-timeout", idle_timeout) + _each("--redact", redact)
        workspace = self._json(*args)
        for secret, value in (secrets or {}).items():
            self.secret_set(workspace["id"], secret, value)
        return workspace

    def list_workspaces(self) -> list[dict[str, Any]]:
        return self._json("ws", "list", "--json")

    def get_workspace(self, workspace: str) -> dict[str, Any]:
        return self._json("ws", "status", workspace, "--json")

    def delete_workspace(self, workspace: str) -> None:
        self._ok("ws", "delete", workspace)

    def start_workspace(self, workspace: str) -> dict[str, Any]:
        self._ok("ws", "start", workspace)
        return self.get_workspace(workspace)

    def stop_workspace(self, workspace: str) -> dict[str, Any]:
        self._ok("ws", "stop", workspace)
        return self.get_workspace(workspace)

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
        """Run a command in the workspace's cell; the ``Result`` (a failing command is no error)."""
        args = ["exec", workspace, "--json"] + _opt("--cwd", cwd) + _pairs("--env", env)
        args += _opt("--timeout", timeout) + _each("--secret-env", secret_env) + _each("--redact", redact)
        return self._json(*args, "--", *_argv(command), any_status=True)

    def reset(self, workspace: str, *, to: str | None = None) -> dict[str, Any]:
        self._ok("reset", workspace, *_opt("--to", to))
        return self.get_workspace(workspace)

    def diff(self, workspace: str) -> dict[str, Any]:
        """``{"files": [...]}``, as the API answers (the CLI prints the bare list)."""
        answer = self._json("diff", workspace, "--json")
        if isinstance(answer, list):
            return {"files": answer}
        return answer

    def apply_patch(self, workspace: str, patch: str | bytes) -> dict[str, Any]:
        data = patch.encode("utf-8") if isinstance(patch, str) else bytes(patch)
        return self._json("patch", workspace, "--json", input=data)

    def audit(self, workspace: str) -> list[dict[str, Any]]:
        return self._json("audit", workspace, "--json")

    # Snapshots

    def create_snapshot(self, workspace: str, name: str) -> dict[str, Any]:
        self._ok("snapshot", "create", workspace, name)
        for snapshot in self.list_snapshots(workspace):
            if snapshot.get("name") == name:
                return snapshot
        raise NotFound(f"snapshot {name} was created but is not listed", code="not_found")

    def list_snapshots(self, workspace: str) -> list[dict[str, Any]]:
        return self._json("snapshot", "list", workspace, "--json")

    def delete_snapshot(self, workspace: str, name: str) -> None:
        self._ok("snapshot", "delete", workspace, name)

    # ----------------------------------------------------------------------------------
    # Files

    def file_list(self, workspace: str, path: str = ".", *, recursive: bool = False) -> dict[str, Any]:
        args = ["file", "ls", workspace, path, "--json"] + (["-r"] if recursive else [])
        return self._json(*args)

    def file_read(
        self, workspace: str, path: str, *, offset: int = 0, max_bytes: int | None = None
    ) -> bytes:
        """A file's bytes: the whole file from ``offset``, or at most ``max_bytes`` of it."""
        if max_bytes is not None:
            return self._ok("file", "read", workspace, path, "--offset", str(offset), "--max-bytes", str(max_bytes))
        # Each call says on stderr where the next one starts when it stopped short
        # ("showed bytes A..B of N; continue with --offset B"); redaction can change the
        # length of what is printed, so the offset comes from there, not from the output.
        chunks: list[bytes] = []
        while True:
            done = self.call("file", "read", workspace, path, "--offset", str(offset), "--max-bytes", str(1 << 20))
            if done.returncode != 0:
                raise cli_error(done.stderr.decode("utf-8", "replace"), done.returncode)
            chunks.append(done.stdout)
            following = _CONTINUE_AT.search(done.stderr.decode("utf-8", "replace"))
            if following is None or int(following.group(1)) <= offset:
                break
            offset = int(following.group(1))
        return b"".join(chunks)

    def file_read_text(self, workspace: str, path: str, *, encoding: str = "utf-8") -> str:
        return self.file_read(workspace, path).decode(encoding)

    def file_write(
        self, workspace: str, path: str, content: bytes | str, *, mode: int | str | None = None
    ) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        self._ok("file", "write", workspace, path, *_opt("--mode", _mode(mode)), input=data)

    def file_delete(self, workspace: str, path: str, *, recursive: bool = False) -> None:
        self._ok("file", "rm", workspace, path, *(["-r"] if recursive else []))

    def file_mkdir(self, workspace: str, path: str, *, parents: bool = False) -> None:
        self._ok("file", "mkdir", workspace, path, *(["-p"] if parents else []))

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
        args = ["shell", "open", workspace, "--json"] + _opt("--cwd", cwd) + _opt("--cols", cols)
        args += _opt("--rows", rows) + _pairs("--env", env) + _each("--secret-env", secret_env)
        return self._json(*args)

    def shell_list(self, workspace: str) -> list[dict[str, Any]]:
        return self._json("shell", "list", workspace, "--json")

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
        args = ["shell", "read", workspace, shell, "--json", "--cursor", str(cursor)]
        args += _opt("--max-chars", max_chars) + _opt("--wait-idle-ms", wait_idle_ms)
        args += ["--plain"] if plain else []
        return self._json(*args)

    def shell_write(self, workspace: str, shell: str, text: str, *, newline: bool = True) -> None:
        self._ok("shell", "write", workspace, shell, *([] if newline else ["--no-newline"]), "--", text)

    def shell_signal(self, workspace: str, shell: str, signal: str) -> None:
        # The CLI takes the names in lower case (int, term, hup, kill, quit).
        name = signal.upper().removeprefix("SIG").lower()
        self._ok("shell", "signal", workspace, shell, name)

    def shell_resize(self, workspace: str, shell: str, cols: int, rows: int) -> None:
        self._ok("shell", "resize", workspace, shell, str(cols), str(rows))

    def shell_close(self, workspace: str, shell: str) -> None:
        self._ok("shell", "close", workspace, shell)

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
        args = ["session", "open", workspace, "--json"] + _opt("--cwd", cwd) + _pairs("--env", env)
        args += _each("--secret-env", secret_env)
        return self._json(*args)

    def session_list(self, workspace: str) -> list[dict[str, Any]]:
        return self._json("session", "list", workspace, "--json")

    def session_exec(
        self, workspace: str, session: str, command: str, *, timeout: float | None = None
    ) -> dict[str, Any]:
        args = ["session", "exec", workspace, session, "--json"] + _opt("--timeout", timeout)
        return self._json(*args, "--", command, any_status=True)

    def session_close(self, workspace: str, session: str) -> None:
        self._ok("session", "close", workspace, session)

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
        """Start a service; the ``Service``, also when it failed (``state`` ``"failed"``)."""
        args = ["service", "start", workspace, name, "--json"] + _opt("--cwd", cwd) + _pairs("--env", env)
        args += _each("--secret-env", secret_env)
        for probe, target in (ready or {}).items():
            if probe not in ("file", "tcp", "http", "cmd"):
                raise ValueError(f"ready probe must be file, tcp, http or cmd, not {probe!r}")
            args += [f"--ready-{probe}", str(target)]
        args += _opt("--ready-timeout", ready_timeout) + _opt("--ready-interval-ms", ready_interval_ms)
        args += _opt("--restart", restart)
        return self._json(*args, "--", *_argv(command), any_status=True)

    def service_list(self, workspace: str) -> list[dict[str, Any]]:
        return self._json("service", "list", workspace, "--json")

    def service_status(self, workspace: str, name: str) -> dict[str, Any]:
        return self._json("service", "status", workspace, name, "--json")

    def service_logs(
        self, workspace: str, name: str, *, tail: int | None = None, all: bool = False
    ) -> dict[str, Any]:
        """``{"logs": TEXT}``, as the API answers."""
        args = ["service", "logs", workspace, name] + (["--all"] if all else _opt("--tail", tail))
        return {"logs": self._ok(*args).decode("utf-8", "replace")}

    def service_stop(self, workspace: str, name: str, *, grace: float | None = None) -> dict[str, Any]:
        self._ok("service", "stop", workspace, name, *_opt("--grace", grace))
        return self.service_status(workspace, name)

    # ----------------------------------------------------------------------------------
    # Secrets

    def secret_set(self, workspace: str, name: str, value: str) -> None:
        """Set a secret; the value goes through stdin, never the command line."""
        self._ok("secret", "set", workspace, name, input=value.encode("utf-8"))

    def secret_list(self, workspace: str) -> list[str]:
        return self._json("secret", "list", workspace, "--json")

    def secret_delete(self, workspace: str, name: str) -> None:
        self._ok("secret", "rm", workspace, name)
