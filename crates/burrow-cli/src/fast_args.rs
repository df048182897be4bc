//! A parser for the one command line that is on a hot path: `burrow exec WS -- CMD`.
//!
//! Building clap's model of every subcommand and flag costs more than the rest of an exec on a
//! running cell put together (most of it in page faults on code run once). The common forms of
//! `burrow exec` are parsed here directly; anything else — help, an unknown or `=`-joined flag,
//! a missing `--`, non-UTF-8 — returns `None`, and clap parses the line as usual, with its own
//! messages. A unit test holds this parser to clap's answers.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cli::{AgentArgs, ExecArgs};

/// `burrow exec` arguments, if the line is a plain exec.
pub fn exec_args(args: &[OsString]) -> Option<ExecArgs> {
    let mut words = args.iter().map(|word| word.to_str());
    if words.next()? != Some("exec") {
        return None;
    }
    let mut parsed = ExecArgs {
        workspace: String::new(),
        cwd: None,
        env: Vec::new(),
        timeout: None,
        json: false,
        secrets: crate::cli::SecretArgs::default(),
        redact: crate::cli::RedactArgs::default(),
        command: Vec::new(),
    };
    let mut workspace = None;
    loop {
        match words.next()?? {
            "--" => break,
            "--json" => parsed.json = true,
            "--cwd" => parsed.cwd = Some(value(words.next()??)?.to_owned()),
            "--env" => {
                let (name, text) = words.next()??.split_once('=')?;
                if name.is_empty() {
                    return None;
                }
                parsed.env.push((name.to_owned(), text.to_owned()));
            }
            "--timeout" => parsed.timeout = Some(words.next()??.parse().ok()?),
            "--secret-env" => parsed
                .secrets
                .secret_env
                .push(value(words.next()??)?.to_owned()),
            "--redact" => parsed
                .redact
                .redact
                .push(value(words.next()??)?.parse().ok()?),
            word if word.starts_with('-') => return None,
            word if workspace.is_none() => workspace = Some(word.to_owned()),
            _ => return None,
        }
    }
    parsed.workspace = workspace?;
    for word in words {
        parsed.command.push(word?.to_owned());
    }
    if parsed.command.is_empty() {
        return None;
    }
    Some(parsed)
}

/// `burrow agent` arguments, parsed without clap: the agent is the resident process of every
/// running workspace, and clap's code pages would stay in its memory for nothing.
pub fn agent_args(args: &[OsString]) -> Option<AgentArgs> {
    let mut words = args.iter().map(|word| word.to_str());
    if words.next()? != Some("agent") {
        return None;
    }
    let mut parsed = AgentArgs {
        listen_fd: -1,
        root: PathBuf::new(),
        idle_timeout: None,
        max_write: 0,
        expires_at: None,
    };
    let (mut listen_fd, mut root, mut max_write) = (None, None, None);
    while let Some(flag) = words.next() {
        let value = words.next()??;
        match flag? {
            "--listen-fd" => listen_fd = Some(value.parse().ok()?),
            "--root" => root = Some(PathBuf::from(value)),
            "--idle-timeout" => parsed.idle_timeout = Some(value.parse().ok()?),
            "--max-write" => max_write = Some(value.parse().ok()?),
            "--expires-at" => parsed.expires_at = Some(value.parse().ok()?),
            _ => return None,
        }
    }
    parsed.listen_fd = listen_fd?;
    parsed.root = root?;
    parsed.max_write = max_write?;
    Some(parsed)
}

/// A flag's value, unless it looks like a flag itself (clap would complain; let it).
fn value(word: &str) -> Option<&str> {
    (!word.starts_with('-')).then_some(word)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    /// Whatever the fast parser accepts, clap reads the same way.
    #[test]
    fn agrees_with_clap() {
        for line in [
            "exec ws -- true",
            "exec ws -- sh -c echo --json",
            "exec --json ws -- /bin/true",
            "exec ws --cwd src --env A=1 --env B=x=y --timeout 5 --json -- make -j2",
            "exec --timeout 0 ws -- cmd --cwd x",
            "exec ws --env EMPTY= -- env",
            "exec ws --secret-env TOKEN --secret-env KEY=API_KEY --redact email:mask -- env",
        ] {
            let fast = exec_args(&words(line)).unwrap_or_else(|| panic!("not parsed: {line}"));
            let mut full = vec![OsString::from("burrow")];
            full.extend(words(line));
            let Command::Exec(clap) = Cli::try_parse_from(full).unwrap().command else {
                panic!("clap did not see an exec: {line}");
            };
            assert_eq!(format!("{fast:?}"), format!("{clap:?}"), "{line}");
        }
    }

    #[test]
    fn agent_arguments_agree_with_clap() {
        let line = "agent --listen-fd 3 --root /workspace --max-write 8388608 --idle-timeout 60 --expires-at 99";
        let fast = agent_args(&words(line)).unwrap();
        let mut full = vec![OsString::from("burrow")];
        full.extend(words(line));
        let Command::Agent(clap) = Cli::try_parse_from(full).unwrap().command else {
            panic!("clap did not see the agent");
        };
        assert_eq!(format!("{fast:?}"), format!("{clap:?}"));
        assert!(agent_args(&words("agent --root /workspace --max-write 1")).is_none());
        assert!(agent_args(&words("agent --listen-fd x --root / --max-write 1")).is_none());
    }

    /// Anything unusual goes to clap.
    #[test]
    fn leaves_the_rest_to_clap() {
        for line in [
            "exec --help",
            "exec ws -h -- true",
            "exec ws",
            "exec ws --",
            "exec ws true",
            "exec ws --cwd=src -- true",
            "exec ws --timeout soon -- true",
            "exec ws --env =x -- true",
            "exec ws --env novalue -- true",
            "exec ws other -- true",
            "exec ws --cwd --json -- true",
            "exec ws --unknown -- true",
            "run -- true",
        ] {
            assert!(exec_args(&words(line)).is_none(), "{line}");
        }
    }
}
