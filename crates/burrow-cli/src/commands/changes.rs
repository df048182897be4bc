//! Commands about a workspace's contents as a whole: patch, diff, export, import, reset,
//! snapshots and the audit log.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use burrow_workspace::archive::ImportLimits;
use burrow_workspace::journal;

use crate::cli::SnapshotCommand;
use crate::commands::exec::reach;
use crate::commands::workspaces::{finish, open, time_text};
use crate::report::print_json;

/// Largest patch read.
const MAX_PATCH: u64 = 64 << 20;

pub fn patch(workspace: &str, file: Option<&Path>, json: bool) -> ExitCode {
    finish((|| {
        let mut text = Vec::new();
        match file {
            Some(path) => std::fs::File::open(path)
                .with_context(|| path.display().to_string())?
                .take(MAX_PATCH + 1)
                .read_to_end(&mut text)?,
            None => std::io::stdin()
                .lock()
                .take(MAX_PATCH + 1)
                .read_to_end(&mut text)?,
        };
        if text.len() as u64 > MAX_PATCH {
            anyhow::bail!("the patch is larger than {MAX_PATCH} bytes");
        }
        let (handle, mut client) = reach(workspace)?;
        let files = handle.apply_patch(&mut client, &text)?;
        if json {
            print_json(&serde_json::json!({ "files": files }));
        } else {
            for file in &files {
                println!("{} {}", file.action, file.path);
            }
        }
        Ok(())
    })())
}

pub fn diff(
    workspace: &str,
    stat: bool,
    json: bool,
    redact: &[burrow_redact::RuleSpec],
) -> ExitCode {
    finish((|| {
        let rendered = open()?.diff(workspace, redact)?;
        if json {
            print_json(&rendered);
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        if stat {
            for file in &rendered {
                writeln!(out, "{}", burrow_workspace::diff::stat_line(file))?;
            }
            let insertions: usize = rendered.iter().map(|f| f.insertions).sum();
            let deletions: usize = rendered.iter().map(|f| f.deletions).sum();
            if !rendered.is_empty() {
                writeln!(
                    out,
                    " {} file{} changed, {insertions} insertion{}(+), {deletions} deletion{}(-)",
                    rendered.len(),
                    plural(rendered.len()),
                    plural(insertions),
                    plural(deletions)
                )?;
            }
        } else {
            for file in &rendered {
                out.write_all(file.patch.as_bytes())?;
            }
        }
        Ok(())
    })())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

pub fn export(
    workspace: &str,
    path: Option<&str>,
    output: &Path,
    json: bool,
    redact: &[burrow_redact::RuleSpec],
) -> ExitCode {
    finish((|| {
        let summary = open()?.export(workspace, path.unwrap_or("."), output, redact)?;
        if json {
            print_json(&summary);
        } else if !summary.skipped.is_empty() {
            eprintln!(
                "burrow: skipped {} special file(s): {}",
                summary.skipped.len(),
                summary.skipped.join(", ")
            );
        }
        Ok(())
    })())
}

pub fn import(workspace: &str, source: &Path, dest: &str, json: bool) -> ExitCode {
    finish((|| {
        let (handle, mut client) = reach(workspace)?;
        let max_file = handle.policy()?.workspace.max_file_write.bytes();
        let limits = ImportLimits {
            max_file,
            max_total: 4 << 30,
            max_entries: 1_000_000,
        };
        let summary = burrow_workspace::edit::import(&mut client, source, dest, &limits)?;
        handle.audit(&journal::record(
            "import",
            format!("{} -> {dest}", source.display()),
        ))?;
        if json {
            print_json(&summary);
        }
        Ok(())
    })())
}

pub fn reset(workspace: &str, to: Option<&str>) -> ExitCode {
    finish(open().and_then(|mut w| Ok(w.reset(workspace, to)?)))
}

pub fn snapshot(command: &SnapshotCommand) -> ExitCode {
    finish((|| {
        let mut workspaces = open()?;
        match command {
            SnapshotCommand::Create { workspace, name } => {
                workspaces.snapshot(workspace, name)?;
            }
            SnapshotCommand::Delete { workspace, name } => {
                workspaces.delete_snapshot(workspace, name)?;
            }
            SnapshotCommand::List { workspace, json } => {
                let snapshots = workspaces.snapshots(workspace)?;
                if *json {
                    print_json(&snapshots);
                } else {
                    println!("{:<20}  {:<12}  {:<19}  PARENT", "NAME", "ID", "CREATED");
                    for s in &snapshots {
                        println!(
                            "{:<20}  {:<12}  {:<19}  {}{}",
                            s.name,
                            s.id,
                            time_text(s.created_at),
                            s.parent.as_deref().unwrap_or("-"),
                            if s.current { "  (current)" } else { "" }
                        );
                    }
                }
            }
        }
        Ok(())
    })())
}

pub fn audit(workspace: &str, json: bool) -> ExitCode {
    finish((|| {
        let records = open()?.audit(workspace)?;
        if json {
            print_json(&records);
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        for record in &records {
            let mut line = format!(
                "{}.{:03}  {:<10}  {}",
                time_text(record.at_ms.div_euclid(1000)),
                record.at_ms.rem_euclid(1000),
                record.kind,
                record.subject
            );
            if let Some(cwd) = &record.cwd {
                line.push_str(&format!("  (in {cwd})"));
            }
            if let Some(code) = record.exit_code {
                line.push_str(&format!("  exit {code}"));
            }
            if let Some(ms) = record.duration_ms {
                line.push_str(&format!("  {ms} ms"));
            }
            writeln!(out, "{line}")?;
        }
        Ok(())
    })())
}
