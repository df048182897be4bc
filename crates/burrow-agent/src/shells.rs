//! Interactive shells on pseudo-terminals. Each lives in the cell until it exits or is closed,
//! whatever the connection that opened it does; its output goes to a bounded ring (`ring.rs`)
//! read by cursor.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

use burrow_proto::shell::{ExitStatus, ShellInfo};
use burrow_sandbox::Grouping;
use rustix::fs::{Mode, OFlags};
use rustix::pty::OpenptFlags;
use tokio::io::unix::AsyncFd;

use crate::agent::Agent;
use crate::ring::OutputRing;
use crate::spawn::{Program, spawn};
use crate::unknown::Unknown;

/// Output a shell keeps for readers.
const SHELL_BUFFER: usize = 1 << 20;

/// The longest a read may wait, whatever it asks.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// One shell.
#[derive(Debug)]
pub struct Shell {
    /// Its pid (and process group, and session).
    pub pid: u32,
    master: Rc<AsyncFd<OwnedFd>>,
    /// Its output.
    pub output: Rc<OutputRing>,
    size: Cell<(u16, u16)>,
    /// Set once it has exited.
    pub exit: Rc<Cell<Option<ExitStatus>>>,
}

/// The agent's shells.
#[derive(Debug, Default)]
pub struct Shells {
    shells: RefCell<BTreeMap<String, Rc<Shell>>>,
    opened: Cell<u64>,
}

/// Why a shell request failed.
pub type ShellResult<T> = Result<T, String>;

impl Shells {
    /// Starts a shell (bash if the cell has it, else sh) on a new pseudo-terminal.
    pub fn open(
        &self,
        agent: &Rc<Agent>,
        cwd: &str,
        size: (u16, u16),
        env: &[(String, String)],
    ) -> ShellResult<(String, u32)> {
        let (master, slave) = open_pty(size).map_err(|e| format!("cannot open a terminal: {e}"))?;
        let mut env = env.to_vec();
        if !env.iter().any(|(name, _)| name == "TERM") {
            env.push(("TERM".to_owned(), "xterm-256color".to_owned()));
        }
        let argv = shell_argv();
        let program = Program {
            argv: &argv,
            env: &env,
            cwd,
        };
        let pid = spawn(
            agent,
            &program,
            [slave.as_fd(), slave.as_fd(), slave.as_fd()],
            Grouping::SessionWithTerminal,
        )
        .map_err(|errno| {
            format!(
                "cannot start a shell: {}",
                std::io::Error::from_raw_os_error(errno)
            )
        })?;
        // Registered before any await: its SIGCHLD cannot be handled first.
        let exited = agent.reaper.watch(pid as i32);
        drop(slave);
        let master = crate::spawn::nonblocking(master).map_err(|e| e.to_string())?;
        // SAFETY: the OwnedFd is moved into the AsyncFd, which alone owns it from here on: the
        // descriptor stays open and the same for as long as it is registered.
        let master = Rc::new(unsafe { AsyncFd::register(master) }.map_err(|e| e.to_string())?);
        let shell = Rc::new(Shell {
            pid,
            master: Rc::clone(&master),
            output: OutputRing::new(SHELL_BUFFER),
            size: Cell::new(size),
            exit: Rc::new(Cell::new(None)),
        });
        tokio::task::spawn_local(pump(master, Rc::clone(&shell.output)));
        let exit = Rc::clone(&shell.exit);
        tokio::task::spawn_local(async move {
            if let Ok(status) = exited.await {
                exit.set(Some(ExitStatus {
                    code: status.code(),
                    signal: status.signal(),
                }));
            }
        });
        let number = self.opened.get() + 1;
        self.opened.set(number);
        let name = format!("sh-{number}");
        self.shells.borrow_mut().insert(name.clone(), shell);
        Ok((name, pid))
    }

    /// A shell by name.
    pub fn get(&self, name: &str) -> Result<Rc<Shell>, Unknown> {
        self.shells
            .borrow()
            .get(name)
            .cloned()
            .ok_or_else(|| Unknown::new("shell", name))
    }

    /// Ends a shell: hang-up to its session, then SIGKILL.
    pub fn close(&self, name: &str) -> Result<(), Unknown> {
        let shell = self
            .shells
            .borrow_mut()
            .remove(name)
            .ok_or_else(|| Unknown::new("shell", name))?;
        let group = shell.pid as i32;
        crate::exec::kill_group(group, libc::SIGHUP);
        crate::exec::kill_group(group, libc::SIGCONT);
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            crate::exec::kill_group(group, libc::SIGKILL);
        });
        Ok(())
    }

    /// Every shell.
    pub fn list(&self) -> Vec<ShellInfo> {
        self.shells
            .borrow()
            .iter()
            .map(|(name, shell)| {
                let (cols, rows) = shell.size.get();
                ShellInfo {
                    shell: name.clone(),
                    pid: shell.pid,
                    cols,
                    rows,
                    end: shell.output.end(),
                    exit: shell.exit.get(),
                }
            })
            .collect()
    }

    /// Kills every shell (the agent is exiting).
    pub fn kill_all(&self) {
        for shell in self.shells.borrow().values() {
            crate::exec::kill_group(shell.pid as i32, libc::SIGKILL);
        }
    }
}

impl Shell {
    /// Types `data` into the terminal.
    pub async fn write(&self, mut data: &[u8]) -> ShellResult<()> {
        while !data.is_empty() {
            let mut guard = self.master.writable().await.map_err(|e| e.to_string())?;
            match guard.try_io(|fd| Ok(rustix::io::write(fd.get_ref(), data)?)) {
                Ok(Ok(n)) => data = &data[n..],
                Ok(Err(error)) => return Err(format!("the shell's terminal is gone: {error}")),
                Err(_would_block) => {}
            }
        }
        Ok(())
    }

    /// Sends `signal` to the terminal's foreground process group (what ^C reaches), or to the
    /// shell's own group when there is none.
    pub fn signal(&self, signal: i32) {
        let group = rustix::termios::tcgetpgrp(self.master.get_ref())
            .map(|pid| pid.as_raw_nonzero().get())
            .unwrap_or(self.pid as i32);
        crate::exec::kill_group(group, signal);
    }

    /// Changes the terminal's size (the foreground process gets SIGWINCH).
    pub fn resize(&self, size: (u16, u16)) -> ShellResult<()> {
        set_size(self.master.get_ref(), size).map_err(|e| e.to_string())?;
        self.size.set(size);
        Ok(())
    }
}

/// The shell program: bash when the cell has it, interactive.
fn shell_argv() -> Vec<String> {
    if std::path::Path::new("/bin/bash").exists() {
        vec!["/bin/bash".to_owned(), "-i".to_owned()]
    } else {
        vec!["/bin/sh".to_owned(), "-i".to_owned()]
    }
}

/// A pseudo-terminal pair of the given size: (master, slave).
fn open_pty(size: (u16, u16)) -> std::io::Result<(OwnedFd, OwnedFd)> {
    let master =
        rustix::pty::openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
    rustix::pty::grantpt(&master)?;
    rustix::pty::unlockpt(&master)?;
    let name = rustix::pty::ptsname(&master, Vec::new())?;
    let slave = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    set_size(&master, size)?;
    Ok((master, slave))
}

fn set_size(master: &OwnedFd, (cols, rows): (u16, u16)) -> std::io::Result<()> {
    let size = rustix::termios::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    Ok(rustix::termios::tcsetwinsize(master, size)?)
}

/// Copies the terminal's output into the ring until the terminal closes (EIO once every
/// process has closed its side).
async fn pump(master: Rc<AsyncFd<OwnedFd>>, output: Rc<OutputRing>) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let Ok(mut guard) = master.readable().await else {
            break;
        };
        match guard.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut buffer)?)) {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => output.push(&buffer[..n]),
            Err(_would_block) => {}
        }
    }
    output.close();
}
