//! `burrow ws ...`: creating, listing, starting, stopping and deleting workspaces.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow};
use burrow_workspace::manager::{CreateOptions, WorkspaceStatus, Workspaces};

use crate::cli::{CreateArgs, WsCommand};
use crate::context::{path_context, state_dir};
use crate::exit;
use crate::report::print_json;

/// burrow's state directory: `$BURROW_HOME`, else `$XDG_DATA_HOME/burrow`, else
/// `~/.local/share/burrow`.
pub fn state_root() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    state_dir(home.as_deref())
        .ok_or_else(|| anyhow!("cannot tell where to keep workspaces: set BURROW_HOME"))
}

/// Opens the state (recovering from interrupted operations, reaping expired workspaces).
pub fn open() -> anyhow::Result<Workspaces> {
    Ok(Workspaces::open(&state_root()?)?)
}

pub fn ws(command: &WsCommand) -> ExitCode {
    let result = match command {
        WsCommand::Create(args) => create(args),
        WsCommand::List { json, all } => list(*json, *all),
        WsCommand::Status { workspace, json } => status(workspace, *json),
        WsCommand::Start { workspace } => {
            open().and_then(|mut w| Ok(w.start(workspace).map(drop)?))
        }
        WsCommand::Stop { workspace } => open().and_then(|mut w| Ok(w.stop(workspace)?)),
        WsCommand::Delete { workspace } => open().and_then(|mut w| Ok(w.delete(workspace)?)),
        WsCommand::Reap => reap(),
    };
    finish(result)
}

/// Success, or burrow's one-line failure.
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => exit::fail(&format!("{error:#}")),
    }
}

fn create(args: &CreateArgs) -> anyhow::Result<()> {
    let mut policy = args.policy.to_policy()?;
    if let Some(idle) = args.idle_timeout {
        policy.workspace.idle_timeout = (idle > 0).then(|| Duration::from_secs(idle));
    }
    if let Some(size) = args.max_file_write {
        policy.workspace.max_file_write = size;
    }
    let context = path_context(None)?;
    let mut secrets = burrow_workspace::secrets::SecretMap::new();
    for (name, value) in &args.secrets {
        secrets.insert(name.clone(), value.clone().into_bytes());
    }
    for (name, path) in &args.secret_files {
        let value = std::fs::read(path).with_context(|| format!("--secret-file {name}={path}"))?;
        secrets.insert(name.clone(), value);
    }
    let options = CreateOptions {
        name: args.name.clone(),
        seed: args.seed.clone(),
        policy,
        context,
        ttl: args.ttl.map(Duration::from_secs),
        labels: args.labels.iter().cloned().collect(),
        secrets,
        redact: args.redact.clone(),
        tenant: None,
    };
    let mut workspaces = open()?;
    let record = workspaces.create(&options)?;
    if args.json {
        print_json(&workspaces.status(&record.id)?);
    } else {
        println!("{}", record.id);
    }
    Ok(())
}

fn list(json: bool, with_tenants: bool) -> anyhow::Result<()> {
    let workspaces = open()?;
    let all = if with_tenants {
        workspaces.list()?
    } else {
        workspaces.list_for(None)?
    };
    if json {
        print_json(&all);
        return Ok(());
    }
    println!(
        "{:<12}  {:<20}  {:<7}  {:<7}  {:<20}  LABELS",
        "ID", "NAME", "STATE", "STORAGE", "EXPIRES"
    );
    for status in &all {
        println!(
            "{:<12}  {:<20}  {:<7}  {:<7}  {:<20}  {}",
            status.id,
            status.name.as_deref().unwrap_or("-"),
            status.state,
            storage_word(status),
            status.expires_at.map_or_else(|| "-".to_owned(), time_text),
            labels_text(status),
        );
    }
    Ok(())
}

fn status(workspace: &str, json: bool) -> anyhow::Result<()> {
    let status = open()?.status(workspace)?;
    if json {
        print_json(&status);
        return Ok(());
    }
    println!("id:        {}", status.id);
    println!("name:      {}", status.name.as_deref().unwrap_or("-"));
    match status.pid {
        Some(pid) => println!("state:     running (pid {pid})"),
        None => println!("state:     stopped"),
    }
    println!("storage:   {}", storage_word(&status));
    println!("created:   {}", time_text(status.created_at));
    println!(
        "expires:   {}",
        status
            .expires_at
            .map_or_else(|| "never".to_owned(), time_text)
    );
    println!("labels:    {}", labels_text(&status));
    println!(
        "snapshots: {}",
        if status.snapshots.is_empty() {
            "-".to_owned()
        } else {
            status.snapshots.join(", ")
        }
    );
    if let Some(base) = &status.based_on {
        println!("based on:  {base}");
    }
    Ok(())
}

fn reap() -> anyhow::Result<()> {
    let mut workspaces = open().context("cannot open the state")?;
    // Opening the state reaps already; whatever expired since is reaped now.
    let mut reaped = workspaces.reaped_at_open().to_vec();
    reaped.extend(workspaces.reap()?);
    for name in reaped {
        println!("{name}");
    }
    Ok(())
}

fn storage_word(status: &WorkspaceStatus) -> &'static str {
    match status.storage {
        burrow_workspace::store::StorageMode::Overlay => "overlay",
        burrow_workspace::store::StorageMode::Copy => "copy",
    }
}

fn labels_text(status: &WorkspaceStatus) -> String {
    if status.labels.is_empty() {
        return "-".to_owned();
    }
    status
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Unix seconds as UTC `YYYY-MM-DD HH:MM:SS`.
pub fn time_text(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil algorithm: no time crate needed for one format.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::time_text;

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(time_text(0), "1970-01-01 00:00:00");
        assert_eq!(time_text(1_795_000_000), "2026-11-18 11:06:40");
        assert_eq!(time_text(951_782_400), "2000-02-29 00:00:00");
    }
}
