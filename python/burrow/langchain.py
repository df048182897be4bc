"""Run LangChain's persistent shell tool inside a burrow sandbox.

``BurrowExecutionPolicy`` is an execution policy for LangChain's ``ShellToolMiddleware``
(LangChain 1.x). Its ``spawn`` launches the shell the way LangChain's
``CodexSandboxExecutionPolicy`` launches ``codex sandbox ... -- /bin/bash``: as
``burrow run --write WORKSPACE --cwd WORKSPACE --timeout 0 ... -- /bin/bash``, with pipes for
stdin, stdout and stderr. burrow hands its own stdin to the shell, so the middleware types
into the sandboxed shell directly; the shell lives as long as burrow does. The workspace
directory is the only writable place of the host (besides ``extra_write``); the network is
off unless ``network`` says otherwise; credentials in your home are hidden.

>>> from langchain.agents.middleware import ShellToolMiddleware    # doctest: +SKIP
>>> from burrow.langchain import BurrowExecutionPolicy               # doctest: +SKIP
>>> shell = ShellToolMiddleware(                                     # doctest: +SKIP
...     workspace_root="/srv/agent/work",
...     execution_policy=BurrowExecutionPolicy(memory="1G", network="none"),
... )

burrow starts the shell in a new process group of its own (``start_new_session``), so the
middleware's group kill on timeout or shutdown reaches burrow, and everything in the sandbox
ends with it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    from langchain.agents.middleware._execution import BaseExecutionPolicy
except ImportError as error:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "burrow.langchain needs LangChain 1.x: pip install 'burrow-sandbox[langchain]'"
    ) from error

try:
    from langchain.agents.middleware._execution import _launch_subprocess
except ImportError:  # pragma: no cover - a LangChain that renamed its private helper

    def _launch_subprocess(
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        preexec_fn: typing.Callable[[], None] | None,
        start_new_session: bool,
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(  # noqa: S603
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            env=env,
            preexec_fn=preexec_fn,  # noqa: PLW1509
            start_new_session=start_new_session,
        )


__all__ = ["BurrowExecutionPolicy"]

_NETWORK_MODES = ("none", "loopback", "host")


def _default_binary() -> str:
    return os.environ.get("BURROW_BIN") or "burrow"


@dataclass
class BurrowExecutionPolicy(BaseExecutionPolicy):
    """Launch the shell in a fresh burrow sandbox (``burrow run``).

    The sandbox sees the host's files read-only, with the workspace (and ``extra_write``)
    writable and ``hide`` absent; it has a private ``/tmp``, no network unless ``network``
    is ``"loopback"`` or ``"host"`` (``None``: as burrow's default or ``policy`` says) or
    ``allow`` lists hosts reachable through burrow's proxy (``("pypi.org",
    "*.pythonhosted.org")``: ``pip install`` works, nothing else is reached), and
    the limits given here. The shell's environment is
    burrow's default (``PATH HOME LANG TERM TZ``) plus the middleware's ``env``, passed as
    ``--env K=V``: nothing else of the agent's environment reaches it.

    ``command_timeout`` and the other fields of LangChain's ``BaseExecutionPolicy`` apply
    per command as usual; burrow's own wall-clock limit is off (``--timeout 0``) because
    the shell lives across commands. ``cpu_time`` is CPU seconds per process; ``memory``
    (e.g. ``"1G"``) and ``pids`` hold for the whole sandbox. ``policy`` is a burrow policy
    file (TOML); ``extra_args`` go to ``burrow run`` before the ``--``.
    """

    binary: str = field(default_factory=_default_binary)
    network: typing.Literal["none", "loopback", "host"] | None = "none"
    allow: tuple[str, ...] = ()
    memory: str | None = None
    pids: int | None = None
    cpu_time: int | None = None
    extra_write: tuple[str, ...] = ()
    hide: tuple[str, ...] = ()
    policy: str | None = None
    extra_args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.network is not None and self.network not in _NETWORK_MODES:
            msg = f"network must be one of {', '.join(_NETWORK_MODES)}, not {self.network!r}."
            raise ValueError(msg)
        if self.pids is not None and self.pids <= 0:
            msg = "pids must be positive if provided."
            raise ValueError(msg)
        if self.cpu_time is not None and self.cpu_time <= 0:
            msg = "cpu_time must be positive if provided."
            raise ValueError(msg)
        if self.memory is not None and not str(self.memory).strip():
            msg = "memory must be a size such as '1G' if provided."
            raise ValueError(msg)
        self.allow = tuple(str(host) for host in self.allow)
        if self.allow and self.network not in (None, "none"):
            msg = "give either network or allow: an allowlist is its own network mode."
            raise ValueError(msg)
        self.extra_write = tuple(str(path) for path in self.extra_write)
        self.hide = tuple(str(path) for path in self.hide)
        self.extra_args = tuple(str(arg) for arg in self.extra_args)

    def spawn(
        self,
        *,
        workspace: Path,
        env: Mapping[str, str],
        command: Sequence[str],
    ) -> subprocess.Popen[str]:
        full_command = self._build_command(workspace, env, command)
        # burrow itself runs with this process's environment (it needs HOME, BURROW_HOME,
        # ...); the sandbox gets only burrow's defaults and the --env given above.
        return _launch_subprocess(
            full_command,
            env=os.environ.copy(),
            cwd=workspace,
            preexec_fn=None,
            start_new_session=True,
        )

    def _build_command(
        self,
        workspace: Path,
        env: Mapping[str, str],
        command: Sequence[str],
    ) -> list[str]:
        binary = self._resolve_binary()
        root = str(Path(workspace).resolve())
        full_command: list[str] = [binary, "run", "--write", root, "--cwd", root, "--timeout", "0"]
        if self.policy is not None:
            full_command += ["--policy", str(self.policy)]
        if self.allow:
            full_command += ["--network", "allow:" + ",".join(self.allow)]
        elif self.network is not None:
            full_command += ["--network", self.network]
        if self.memory is not None:
            full_command += ["--memory", str(self.memory)]
        if self.pids is not None:
            full_command += ["--pids", str(self.pids)]
        if self.cpu_time is not None:
            full_command += ["--cpu-time", str(self.cpu_time)]
        for path in self.extra_write:
            full_command += ["--write", path]
        for path in self.hide:
            full_command += ["--hide", path]
        for key, value in env.items():
            full_command += ["--env", f"{key}={value}"]
        full_command += list(self.extra_args)
        full_command.append("--")
        full_command.extend(command)
        return full_command

    def _resolve_binary(self) -> str:
        if os.sep in self.binary:
            if not os.access(self.binary, os.X_OK):
                msg = f"Burrow execution policy cannot run {self.binary!r}: not an executable file."
                raise RuntimeError(msg)
            return self.binary
        path = shutil.which(self.binary)
        if path is None:
            msg = (
                "Burrow execution policy requires the '%s' CLI to be installed and available "
                "on PATH (or BURROW_BIN to name it)."
            )
            raise RuntimeError(msg % self.binary)
        return path
