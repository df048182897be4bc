"""BurrowExecutionPolicy: its command line, and LangChain's ShellToolMiddleware running on it.

The middleware is driven without a model, as LangChain's own unit tests for it do:
``before_agent`` starts the shell session, ``_run_shell_tool`` runs commands (what the
``shell`` tool calls), ``after_agent`` ends the session. One test also goes through the
tool object with a tool call, and one through ``create_agent`` with a scripted model.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("langchain.agents.middleware.shell_tool")

from langchain.agents.middleware._execution import BaseExecutionPolicy  # noqa: E402
from langchain.agents.middleware.shell_tool import (  # noqa: E402
    ShellToolMiddleware,
    ShellToolState,
)
from langgraph.runtime import Runtime  # noqa: E402

import burrow.langchain as burrow_langchain  # noqa: E402
from burrow.langchain import BurrowExecutionPolicy  # noqa: E402


# ---------------------------------------------------------------------------------------
# The command line


def test_is_a_langchain_execution_policy() -> None:
    assert issubclass(BurrowExecutionPolicy, BaseExecutionPolicy)
    policy = BurrowExecutionPolicy(binary="/bin/true")
    assert policy.command_timeout == 30.0  # LangChain's own fields stay
    assert policy.network == "none"


def test_binary_defaults_to_burrow_bin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURROW_BIN", "/opt/burrow/bin/burrow")
    assert BurrowExecutionPolicy().binary == "/opt/burrow/bin/burrow"
    monkeypatch.delenv("BURROW_BIN")
    assert BurrowExecutionPolicy().binary == "burrow"


def test_minimal_command_line(tmp_path: Path) -> None:
    policy = BurrowExecutionPolicy(binary="/bin/true")
    command = policy._build_command(tmp_path, {}, ("/bin/bash",))
    root = str(tmp_path.resolve())
    assert command == [
        "/bin/true", "run", "--write", root, "--cwd", root, "--timeout", "0",
        "--network", "none", "--", "/bin/bash",
    ]  # fmt: skip


def test_full_command_line(tmp_path: Path) -> None:
    policy = BurrowExecutionPolicy(
        binary="/bin/true",
        network="loopback",
        memory="1G",
        pids=64,
        cpu_time=120,
        extra_write=("/srv/cache", "/srv/out"),
        hide=("/srv/secrets",),
        command_timeout=5.0,
    )
    command = policy._build_command(tmp_path, {"A": "1", "B": "x=y"}, ("/bin/bash", "-l"))
    root = str(tmp_path.resolve())
    assert command == [
        "/bin/true", "run", "--write", root, "--cwd", root, "--timeout", "0",
        "--network", "loopback", "--memory", "1G", "--pids", "64", "--cpu-time", "120",
        "--write", "/srv/cache", "--write", "/srv/out", "--hide", "/srv/secrets",
        "--env", "A=1", "--env", "B=x=y",
        "--", "/bin/bash", "-l",
    ]  # fmt: skip


def test_policy_file_and_network_left_to_it(tmp_path: Path) -> None:
    policy = BurrowExecutionPolicy(binary="/bin/true", network=None, policy="/etc/burrow.toml", extra_args=("--allow-degraded",))
    command = policy._build_command(tmp_path, {}, ("/bin/bash",))
    assert "--network" not in command
    assert command[command.index("--policy") + 1] == "/etc/burrow.toml"
    assert command.index("--allow-degraded") < command.index("--")


def test_an_allowlist_is_passed_as_a_network_mode(tmp_path: Path) -> None:
    policy = BurrowExecutionPolicy(binary="/bin/true", allow=("pypi.org", "*.pythonhosted.org"))
    command = policy._build_command(tmp_path, {}, ("/bin/bash",))
    assert command[command.index("--network") + 1] == "allow:pypi.org,*.pythonhosted.org"
    with pytest.raises(ValueError, match="either network or allow"):
        BurrowExecutionPolicy(binary="/bin/true", network="host", allow=("pypi.org",))


def test_a_shell_with_an_allowlist_is_refused_other_hosts(workspace: Path, burrow_bin: str) -> None:
    """Nothing leaves this machine: the proxy refuses the name before resolving it."""
    policy = BurrowExecutionPolicy(binary=burrow_bin, allow=("pypi.org",))
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    state, runtime, resources = _start(middleware)
    try:
        # LangChain finds the end of a command's output by a marker at the start of a line.
        output = _run(middleware, resources, "curl -s -w ' %{http_code}\\n' http://elsewhere.invalid/")
        assert output.strip().endswith("403"), output
        assert "not on this sandbox's network allowlist" in output
    finally:
        middleware.after_agent(state, runtime)


def test_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="network"):
        BurrowExecutionPolicy(binary="/bin/true", network="internet")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pids"):
        BurrowExecutionPolicy(binary="/bin/true", pids=0)
    with pytest.raises(ValueError, match="cpu_time"):
        BurrowExecutionPolicy(binary="/bin/true", cpu_time=-1)
    with pytest.raises(ValueError, match="max_output_lines"):
        BurrowExecutionPolicy(binary="/bin/true", max_output_lines=0)


def test_missing_binary_is_a_runtime_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="no-such-burrow"):
        BurrowExecutionPolicy(binary="no-such-burrow").spawn(workspace=tmp_path, env={}, command=("/bin/bash",))


def test_spawn_launches_like_langchain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spawn() hands LangChain's _launch_subprocess the burrow command, its own session,
    and the workspace as cwd; burrow itself gets this process's environment."""
    seen: dict[str, Any] = {}

    def fake_launch(command, *, env, cwd, preexec_fn, start_new_session):  # noqa: ANN001, ANN202
        seen.update(command=command, env=env, cwd=cwd, preexec_fn=preexec_fn, start_new_session=start_new_session)
        return "process"

    monkeypatch.setattr(burrow_langchain, "_launch_subprocess", fake_launch)
    monkeypatch.setenv("BURROW_HOME", "/some/state")
    policy = BurrowExecutionPolicy(binary="/bin/true")
    assert policy.spawn(workspace=tmp_path, env={"K": "V"}, command=("/bin/bash",)) == "process"
    assert seen["command"][:2] == ["/bin/true", "run"]
    assert seen["command"][-2:] == ["--", "/bin/bash"]
    assert "K=V" in seen["command"]
    assert seen["cwd"] == tmp_path
    assert seen["start_new_session"] is True
    assert seen["preexec_fn"] is None
    assert seen["env"]["BURROW_HOME"] == "/some/state"
    assert "K" not in seen["env"]  # the middleware's env goes into the sandbox, not to burrow


def test_spawned_process_has_pipes_text_mode_and_its_own_group(burrow_bin: str, tmp_path: Path) -> None:
    """The real Popen: stdin/stdout/stderr pipes in text mode, a new session, stdin reaching
    the sandboxed command."""
    process = BurrowExecutionPolicy(binary=burrow_bin).spawn(
        workspace=tmp_path, env={"WHO": "sandbox"}, command=("/bin/sh",)
    )
    try:
        assert os.getpgid(process.pid) == process.pid != os.getpgrp()
        out, err = process.communicate("echo hello from $WHO; echo $BURROW_SANDBOX\n", timeout=60)
        assert isinstance(out, str)
        assert out == "hello from sandbox\n1\n", err
        assert process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()


# ---------------------------------------------------------------------------------------
# ShellToolMiddleware on burrow


def _start(middleware: ShellToolMiddleware) -> tuple[ShellToolState, Runtime, Any]:
    state = cast("ShellToolState", {"messages": []})
    runtime = Runtime()
    updates = middleware.before_agent(state, runtime)
    if updates:
        state.update(cast("ShellToolState", updates))
    return state, runtime, middleware._get_or_create_resources(state)


def _run(middleware: ShellToolMiddleware, resources: Any, command: str) -> str:
    result = middleware._run_shell_tool(resources, {"command": command}, tool_call_id=None)
    assert isinstance(result, str)
    return result


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return tmp_path / "workspace"


@pytest.fixture
def policy(burrow_bin: str) -> BurrowExecutionPolicy:
    return BurrowExecutionPolicy(binary=burrow_bin, command_timeout=30.0, termination_timeout=2.0)


def test_cwd_and_env_persist_between_commands(workspace: Path, policy: BurrowExecutionPolicy) -> None:
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy, env={"GREETING": "hello"})
    state, runtime, resources = _start(middleware)
    try:
        assert _run(middleware, resources, "echo $GREETING").strip() == "hello"
        assert _run(middleware, resources, "echo $BURROW_SANDBOX").strip() == "1"  # inside burrow
        _run(middleware, resources, "mkdir -p sub && cd sub")
        assert _run(middleware, resources, "pwd").strip() == str((workspace / "sub").resolve())
        _run(middleware, resources, "export FOO=bar; f() { echo fn-$1; }")
        assert _run(middleware, resources, "echo $FOO; f 1").strip() == "bar\nfn-1"
        assert "[stderr] oops" in _run(middleware, resources, "echo oops >&2")
        assert "Exit code: 3" in _run(middleware, resources, "(exit 3)")
    finally:
        middleware.after_agent(state, runtime)


def test_timeout_is_reported_and_the_session_restarts(workspace: Path, burrow_bin: str) -> None:
    policy = BurrowExecutionPolicy(binary=burrow_bin, command_timeout=1.0, termination_timeout=1.0)
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    state, runtime, resources = _start(middleware)
    try:
        _run(middleware, resources, "export MARK=before")
        first_burrow = resources.session._process.pid
        result = _run(middleware, resources, "sleep 30; echo finished-$((1+1))")
        assert "timed out after 1.0 seconds" in result
        assert "finished-2" not in result
        # A new burrow, a new shell: the old one's variables are gone, the new one works.
        assert resources.session._process.pid != first_burrow
        assert _run(middleware, resources, "echo ${MARK:-unset}").strip() == "unset"
        assert _process_gone(first_burrow)
    finally:
        middleware.after_agent(state, runtime)


def test_output_is_truncated_by_lines(workspace: Path, burrow_bin: str) -> None:
    policy = BurrowExecutionPolicy(binary=burrow_bin, max_output_lines=5)
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    state, runtime, resources = _start(middleware)
    try:
        result = _run(middleware, resources, "seq 1 20")
        assert result.startswith("1\n2\n3\n4\n5\n")
        assert "6\n" not in result
        assert "Output truncated at 5 lines (observed 20)" in result
    finally:
        middleware.after_agent(state, runtime)


def test_writes_inside_the_workspace_only(workspace: Path, tmp_path: Path, policy: BurrowExecutionPolicy) -> None:
    outside = tmp_path / "outside.txt"  # next to the workspace, on the host
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    state, runtime, resources = _start(middleware)
    try:
        inside = _run(middleware, resources, "echo data > inside.txt && cat inside.txt")
        assert inside.strip() == "data"
        assert (workspace / "inside.txt").read_text() == "data\n"

        usr = _run(middleware, resources, "touch /usr/burrow-test")
        assert "Exit code: 1" in usr and "Read-only file system" in usr
        assert not Path("/usr/burrow-test").exists()

        _run(middleware, resources, f"echo leak > {outside}")
        assert not outside.exists()
        home = _run(middleware, resources, "touch ~/burrow-test-home")
        assert "Exit code" in home
        assert not (Path.home() / "burrow-test-home").exists()
    finally:
        middleware.after_agent(state, runtime)


def test_after_agent_ends_burrow_and_the_sandbox(workspace: Path, policy: BurrowExecutionPolicy) -> None:
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    state, runtime, resources = _start(middleware)
    _run(middleware, resources, "(sleep 777 &)")  # a background job, orphaned inside
    assert _sleepers("sleep 777")
    pid = resources.session._process.pid
    middleware.after_agent(state, runtime)
    assert _process_gone(pid)
    assert not _sleepers("sleep 777")


def test_the_shell_tool_itself(workspace: Path, policy: BurrowExecutionPolicy) -> None:
    """Through the tool object the agent calls, with a tool call."""
    from langchain_core.messages import ToolMessage

    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    (tool,) = middleware.tools
    state = cast("ShellToolState", {"messages": []})
    runtime = Runtime()
    try:
        from langchain.tools import ToolRuntime

        tool_runtime = ToolRuntime(
            state=state, context=None, config={}, stream_writer=lambda _: None,
            tool_call_id="call-1", store=None,
        )  # fmt: skip
        message = tool.invoke(
            {"type": "tool_call", "id": "call-1", "name": tool.name, "args": {"command": "echo via-tool", "runtime": tool_runtime}}
        )
        assert isinstance(message, ToolMessage)
        assert message.status == "success"
        assert message.content.strip() == "via-tool"
    finally:
        middleware.after_agent(state, runtime)


def test_an_agent_runs_its_shell_in_burrow(workspace: Path, policy: BurrowExecutionPolicy) -> None:
    """create_agent with a scripted model: one shell call, then an answer."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    class ScriptedModel(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # noqa: ARG002
            return self

    model = ScriptedModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[{"name": "shell", "args": {"command": "echo $BURROW_SANDBOX > proof && cat proof"}, "id": "c1"}],
                ),
                AIMessage(content="done"),
            ]
        )
    )
    middleware = ShellToolMiddleware(workspace_root=workspace, execution_policy=policy)
    agent = create_agent(model=model, middleware=[middleware])
    result = agent.invoke({"messages": [HumanMessage("prove you are sandboxed")]})
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.content.strip() for m in tool_messages] == ["1"]
    assert (workspace / "proof").read_text() == "1\n"
    assert result["messages"][-1].content == "done"


# ---------------------------------------------------------------------------------------


def _process_gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie child counts as gone once reaped; LangChain waits for it.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def _sleepers(pattern: str) -> list[str]:
    done = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [line for line in done.stdout.split() if line and int(line) != os.getpid()]

