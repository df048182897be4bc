//! `burrow shell ...`: interactive shells on a terminal in a workspace's cell.

use std::io::Write;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use burrow_workspace::client::AgentClient;
use burrow_workspace::client::interactive::ShellWait;
use burrow_workspace::handle::{Handle, workspace_cwd};
use burrow_workspace::journal;
use burrow_workspace::pages::{self, ShellRead};

use crate::cli::{SecretArgs, ShellCommand};
use crate::commands::exec::reach;
use crate::commands::workspaces::finish;
use crate::report::print_json;
use crate::terminal;

/// Ctrl-]: detaches `shell attach`, as in telnet.
const DETACH: u8 = 0x1d;

pub fn shell(command: ShellCommand) -> ExitCode {
    finish(match command {
        ShellCommand::Open {
            workspace,
            cwd,
            cols,
            rows,
            env,
            secrets,
            json,
        } => open(&workspace, &cwd, (cols, rows), &env, &secrets, json),
        ShellCommand::Read {
            workspace,
            shell,
            cursor,
            max_chars,
            wait_idle_ms,
            plain,
            redact,
            json,
        } => read(
            &workspace,
            &shell,
            cursor,
            max_chars,
            wait_idle_ms,
            plain,
            &redact.redact,
            json,
        ),
        ShellCommand::Write {
            workspace,
            shell,
            text,
            no_newline,
        } => reach(&workspace).and_then(|(_, mut client)| {
            let text = if no_newline {
                text
            } else {
                format!("{text}\n")
            };
            Ok(client.shell_write(&shell, &text)?)
        }),
        ShellCommand::Signal {
            workspace,
            shell,
            signal,
        } => reach(&workspace)
            .and_then(|(_, mut client)| Ok(client.shell_signal(&shell, signal.number())?)),
        ShellCommand::Resize {
            workspace,
            shell,
            cols,
            rows,
        } => reach(&workspace)
            .and_then(|(_, mut client)| Ok(client.shell_resize(&shell, cols, rows)?)),
        ShellCommand::Close { workspace, shell } => {
            reach(&workspace).and_then(|(handle, mut client)| {
                client.shell_close(&shell)?;
                Ok(handle.audit(&journal::record("shell.close", shell))?)
            })
        }
        ShellCommand::List { workspace, json } => list(&workspace, json),
        ShellCommand::Attach { workspace, shell } => attach(&workspace, shell.as_deref()),
    })
}

/// Starts a shell for `open` and `attach`.
fn start(
    handle: &Handle,
    client: &mut AgentClient,
    cwd: &str,
    size: (u16, u16),
    env: &[(String, String)],
    secrets: &SecretArgs,
) -> anyhow::Result<(String, u32)> {
    let policy = handle.policy()?;
    let caller: Vec<_> = std::env::vars_os().collect();
    let env = handle.command_env(&policy, &caller, env, &secrets.secret_env)?;
    let cwd = workspace_cwd(Some(cwd))?;
    let (shell, pid) = client.shell_open(&cwd, size, env)?;
    handle.audit(&journal::record("shell.open", format!("{shell} in {cwd}")))?;
    Ok((shell, pid))
}

fn open(
    workspace: &str,
    cwd: &str,
    size: (u16, u16),
    env: &[(String, String)],
    secrets: &SecretArgs,
    json: bool,
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    let (shell, pid) = start(&handle, &mut client, cwd, size, env, secrets)?;
    if json {
        print_json(&serde_json::json!({ "shell": shell, "pid": pid }));
    } else {
        println!("{shell}");
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn read(
    workspace: &str,
    shell: &str,
    cursor: u64,
    max_chars: usize,
    wait_idle_ms: Option<u64>,
    plain: bool,
    redact: &[burrow_redact::RuleSpec],
    json: bool,
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    let read = ShellRead {
        cursor,
        max_chars,
        wait_idle: wait_idle_ms.map(Duration::from_millis),
        plain,
    };
    let page = pages::read_shell(&handle, &mut client, shell, &read, redact)?;
    if json {
        print_json(&page);
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&page.output)?;
    out.flush()?;
    if page.lost > 0 {
        eprintln!(
            "burrow: {} bytes before this fell out of the shell's buffer",
            page.lost
        );
    }
    eprintln!("burrow: next cursor {}", page.next_cursor);
    if let Some(exit) = page.exited
        && page.next_cursor >= page.end
    {
        eprintln!("burrow: the shell has exited ({})", describe(exit));
    }
    Ok(())
}

fn list(workspace: &str, json: bool) -> anyhow::Result<()> {
    let (_, mut client) = reach(workspace)?;
    let shells = client.shell_list()?;
    if json {
        print_json(&shells);
        return Ok(());
    }
    println!(
        "{:<8}  {:>7}  {:>9}  {:>10}  STATE",
        "SHELL", "PID", "SIZE", "OUTPUT"
    );
    for shell in &shells {
        println!(
            "{:<8}  {:>7}  {:>9}  {:>10}  {}",
            shell.shell,
            shell.pid,
            format!("{}x{}", shell.cols, shell.rows),
            shell.end,
            shell.exit.map_or_else(
                || "running".to_owned(),
                |exit| format!("exited ({})", describe(exit))
            )
        );
    }
    Ok(())
}

fn describe(exit: burrow_proto::shell::ExitStatus) -> String {
    match (exit.code, exit.signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "unknown status".to_owned(),
    }
}

/// Connects this terminal to a shell: keys go in, output comes out, Ctrl-] detaches.
fn attach(workspace: &str, shell: Option<&str>) -> anyhow::Result<()> {
    if !rustix::termios::isatty(std::io::stdin().as_fd()) {
        bail!(
            "`shell attach` needs a terminal on standard input; use `shell write` and `shell read` instead"
        );
    }
    let (handle, mut input) = reach(workspace)?;
    let size = terminal::size().unwrap_or((120, 30));
    let shell = match shell {
        Some(shell) => shell.to_owned(),
        None => start(&handle, &mut input, ".", size, &[], &SecretArgs::default())?.0,
    };
    input.shell_resize(&shell, size.0, size.1)?;
    // Output has a connection of its own, waiting for the shell while keys are read here.
    let mut output = handle.connect()?;
    let redactor = handle.redactor(&[])?;
    let start = output
        .shell_read(&shell, 0, 0, ShellWait::default())
        .context("cannot read the shell")?
        .end;
    eprintln!("burrow: attached to {shell}; Ctrl-] detaches\r");
    let raw = terminal::RawMode::enter()?;
    let shell_name = shell.clone();
    let printer = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut stream = redactor.stream();
        let mut cursor = start;
        let mut out = std::io::stdout();
        loop {
            let wait = ShellWait {
                idle: None,
                for_data: true,
                limit: Duration::from_secs(1),
            };
            let chunk = output.shell_read(&shell_name, cursor, 64 * 1024, wait)?;
            cursor = chunk.start + chunk.bytes.len() as u64;
            let shown = stream.push(&chunk.bytes);
            out.write_all(&shown)?;
            out.flush()?;
            if chunk.exit.is_some() && cursor >= chunk.end {
                out.write_all(&stream.finish())?;
                out.flush()?;
                return Ok(());
            }
        }
    });
    let typed = forward_keys(&mut input, &shell, size, &printer);
    drop(raw);
    if printer.is_finished() {
        eprintln!("burrow: the shell has exited");
    } else {
        eprintln!("burrow: detached from {shell}");
    }
    typed
}

/// Sends keys until Ctrl-] or the shell ends; follows the terminal's size.
fn forward_keys(
    client: &mut AgentClient,
    shell: &str,
    mut size: (u16, u16),
    printer: &std::thread::JoinHandle<anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let stdin = rustix::stdio::stdin();
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        if printer.is_finished() {
            return Ok(());
        }
        if let Some(now) = terminal::size()
            && now != size
        {
            size = now;
            client.shell_resize(shell, size.0, size.1)?;
        }
        let mut fds = [rustix::event::PollFd::new(
            &stdin,
            rustix::event::PollFlags::IN,
        )];
        let tick = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 100_000_000,
        };
        match rustix::event::poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(error) => return Err(error.into()),
        }
        let n = match rustix::io::read(stdin, &mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error.into()),
        };
        let typed = &buffer[..n];
        let (typed, detach) = match typed.iter().position(|&b| b == DETACH) {
            Some(at) => (&typed[..at], true),
            None => (typed, false),
        };
        pending.extend_from_slice(typed);
        // Keys go as text: a character split across reads waits for its end.
        let whole = burrow_output::terminal_text::utf8_prefix(&pending);
        if whole > 0 {
            let text = String::from_utf8_lossy(&pending[..whole]).into_owned();
            client.shell_write(shell, &text)?;
            pending.drain(..whole);
        }
        if detach {
            return Ok(());
        }
    }
}
