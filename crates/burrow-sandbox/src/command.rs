//! The command to execute, prepared as C strings before the cell is cloned, and looked up in the
//! cell's `PATH` from inside the cell (a program in the host's /tmp is not in the cell's).

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::error::SandboxError;

/// argv and envp as the kernel wants them.
#[derive(Debug)]
pub(crate) struct PreparedCommand {
    argv: Vec<CString>,
    envp: Vec<CString>,
    search_path: Option<OsString>,
}

impl PreparedCommand {
    pub(crate) fn new(
        argv: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<PreparedCommand, SandboxError> {
        if argv.is_empty() || argv[0].is_empty() {
            return Err(SandboxError::InvalidCommand(
                "no command given: pass it after --".to_owned(),
            ));
        }
        let argv = argv
            .iter()
            .map(|arg| c_string(arg.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let envp = env
            .iter()
            .map(|(name, value)| {
                let mut pair = name.clone();
                pair.push("=");
                pair.push(value);
                c_string(pair)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let search_path = env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone());
        Ok(PreparedCommand {
            argv,
            envp,
            search_path,
        })
    }

    /// The program name as given.
    pub(crate) fn name(&self) -> &OsStr {
        OsStr::from_bytes(self.argv[0].as_bytes())
    }

    /// Finds the program the way execvp(3) would, in the calling process's view of the
    /// filesystem: a name with a slash is taken as is, anything else is searched in `PATH`.
    /// The error is the errno execvp would report: ENOENT, or EACCES when only
    /// non-executable candidates exist.
    pub(crate) fn resolve(&self) -> Result<CString, i32> {
        let path = burrow_policy::find_program(self.name(), self.search_path.as_deref())?;
        CString::new(path.into_os_string().into_vec()).map_err(|_| libc::ENOENT)
    }

    /// The arguments after the program name.
    pub(crate) fn args(&self) -> impl Iterator<Item = &OsStr> {
        self.argv[1..]
            .iter()
            .map(|arg| OsStr::from_bytes(arg.as_bytes()))
    }

    /// The environment as (name, value) pairs.
    pub(crate) fn env(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.envp.iter().map(|pair| {
            let bytes = pair.as_bytes();
            let split = bytes.iter().position(|&b| b == b'=').unwrap_or(bytes.len());
            let value = bytes.get(split + 1..).unwrap_or_default();
            (OsStr::from_bytes(&bytes[..split]), OsStr::from_bytes(value))
        })
    }

    /// NULL-terminated pointer arrays for execve; valid while `self` lives.
    pub(crate) fn pointers(&self) -> (Vec<*const libc::c_char>, Vec<*const libc::c_char>) {
        let terminate = |strings: &[CString]| {
            strings
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        (terminate(&self.argv), terminate(&self.envp))
    }

    /// argv for running `path` as a shell script, as execvp does on ENOEXEC.
    pub(crate) fn as_shell_script(&self, path: &CString) -> Vec<*const libc::c_char> {
        [c"/bin/sh".as_ptr(), path.as_ptr()]
            .into_iter()
            .chain(self.argv[1..].iter().map(|s| s.as_ptr()))
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    }
}

fn c_string(value: OsString) -> Result<CString, SandboxError> {
    CString::new(value.into_vec()).map_err(|error| {
        SandboxError::InvalidCommand(format!(
            "{:?} contains a NUL byte, which no program can receive",
            String::from_utf8_lossy(&error.into_vec())
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(argv: &[&str], path: &str) -> PreparedCommand {
        PreparedCommand::new(
            &argv.iter().map(OsString::from).collect::<Vec<_>>(),
            &[(OsString::from("PATH"), OsString::from(path))],
        )
        .unwrap()
    }

    #[test]
    fn searches_path_like_execvp() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tool");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        // Not executable yet: EACCES, as execvp reports.
        assert_eq!(command(&["tool"], &path).resolve(), Err(libc::EACCES));
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert_eq!(
            command(&["tool"], &path).resolve().unwrap().as_bytes(),
            script.as_os_str().as_bytes()
        );
        assert_eq!(command(&["nosuchtool"], &path).resolve(), Err(libc::ENOENT));
    }

    #[test]
    fn names_with_a_slash_are_not_searched() {
        let resolved = command(&["./x"], "/bin").resolve().unwrap();
        assert_eq!(resolved.as_bytes(), b"./x");
    }

    #[test]
    fn refuses_empty_commands_and_nul_bytes() {
        assert!(PreparedCommand::new(&[], &[]).is_err());
        assert!(PreparedCommand::new(&[OsString::from("a\0b")], &[]).is_err());
    }
}
