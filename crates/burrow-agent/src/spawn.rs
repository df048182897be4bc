//! Starting a program in the cell on the host's behalf: the lookup in `PATH`, the C strings,
//! the working directory confined to the workspace, and the spawn itself (vfork-style, with the
//! commands' seccomp addition; see `burrow_sandbox::CommandSpawn`). Commands, shells, sessions,
//! services and readiness probes all start here.

use std::ffi::{CStr, CString};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use burrow_sandbox::{CommandSpawn, Grouping};

use crate::agent::Agent;

/// What to start.
#[derive(Debug)]
pub struct Program<'a> {
    /// Command and arguments; `argv[0]` is looked up in the environment's `PATH`.
    pub argv: &'a [String],
    /// The whole environment.
    pub env: &'a [(String, String)],
    /// Working directory, relative to the workspace (or absolute under it).
    pub cwd: &'a str,
}

/// Starts `program` with `stdio` as its 0, 1 and 2; returns its pid, or the errno of the
/// lookup, the working directory or the exec.
pub fn spawn(
    agent: &Agent,
    program: &Program<'_>,
    stdio: [BorrowedFd<'_>; 3],
    grouping: Grouping,
) -> Result<u32, i32> {
    let Some(name) = program.argv.first() else {
        return Err(libc::ENOENT);
    };
    let cwd = working_directory(agent, program.cwd)?;
    let search_path = program
        .env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| std::ffi::OsStr::new(value.as_str()));
    let path = burrow_policy::find_program(std::ffi::OsStr::new(name), search_path)?;
    let strings = SpawnStrings::new(&path, name, program.argv, program.env, &cwd)?;
    let spawn_with = |file: &CStr, argv: &[CString]| {
        CommandSpawn {
            program: file,
            argv,
            envp: &strings.envp,
            cwd: &strings.cwd,
            stdio,
            filter: &agent.command_filter,
            grouping,
        }
        .spawn()
    };
    let spawned = match spawn_with(&strings.program, &strings.argv) {
        // A script without a #! line runs with the shell, as execvp does.
        Err(error) if error.raw_os_error() == Some(libc::ENOEXEC) => {
            spawn_with(c"/bin/sh", &strings.shell_argv)
        }
        other => other,
    };
    spawned.map_err(|error| error.raw_os_error().unwrap_or(libc::EIO))
}

/// The working directory's path in the cell, checked to lie in the workspace.
fn working_directory(agent: &Agent, cwd: &str) -> Result<PathBuf, i32> {
    let relative = agent.workspace.relative(cwd).map_err(|_| libc::ENOENT)?;
    Ok(agent.workspace.root_path().join(relative))
}

/// The C strings of one spawn, made before the clone (the child may not allocate).
struct SpawnStrings {
    program: CString,
    argv: Vec<CString>,
    shell_argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: CString,
}

impl SpawnStrings {
    fn new(
        program: &Path,
        name: &str,
        argv: &[String],
        env: &[(String, String)],
        cwd: &Path,
    ) -> Result<SpawnStrings, i32> {
        let c = |bytes: &[u8]| CString::new(bytes).map_err(|_| libc::EINVAL);
        let program = c(program.as_os_str().as_bytes())?;
        let mut args = vec![c(name.as_bytes())?];
        for arg in &argv[1..] {
            args.push(c(arg.as_bytes())?);
        }
        let mut shell_argv = vec![c(b"sh")?, program.clone()];
        shell_argv.extend(args[1..].iter().cloned());
        let envp = env
            .iter()
            .map(|(key, value)| c(format!("{key}={value}").as_bytes()))
            .collect::<Result<_, _>>()?;
        Ok(SpawnStrings {
            program,
            argv: args,
            shell_argv,
            envp,
            cwd: c(cwd.as_os_str().as_bytes())?,
        })
    }
}

/// A pipe (read end, write end), both close-on-exec: a child gets copies at 0-2.
pub fn pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// Makes a descriptor non-blocking, for the runtime.
pub fn nonblocking(fd: std::os::fd::OwnedFd) -> std::io::Result<std::os::fd::OwnedFd> {
    rustix::io::ioctl_fionbio(&fd, true)?;
    Ok(fd)
}
