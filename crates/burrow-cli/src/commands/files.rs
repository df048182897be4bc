//! `burrow file ...`: reading and changing files in a workspace through its agent.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use burrow_proto::{Entry, EntryKind};
use burrow_workspace::journal;

use crate::cli::FileCommand;
use crate::commands::exec::reach;
use crate::commands::workspaces::finish;
use crate::report::print_json;

/// Entries one listing returns at most.
const MAX_LISTING: u64 = 100_000;

pub fn file(command: &FileCommand) -> ExitCode {
    finish(match command {
        FileCommand::Ls {
            workspace,
            path,
            recursive,
            json,
        } => ls(workspace, path, *recursive, *json),
        FileCommand::Read {
            workspace,
            path,
            offset,
            max_bytes,
            redact,
        } => read(workspace, path, *offset, *max_bytes, &redact.redact),
        FileCommand::Write {
            workspace,
            path,
            text,
            from,
            mode,
        } => write(workspace, path, text.as_deref(), from.as_deref(), *mode),
        FileCommand::Rm {
            workspace,
            path,
            recursive,
        } => change(workspace, "file.rm", path, |client| {
            client.remove(path, *recursive)
        }),
        FileCommand::Mkdir {
            workspace,
            path,
            parents,
        } => change(workspace, "file.mkdir", path, |client| {
            client.mkdir(path, *parents)
        }),
    })
}

fn ls(workspace: &str, path: &str, recursive: bool, json: bool) -> anyhow::Result<()> {
    let (_, mut client) = reach(workspace)?;
    let (entries, truncated) = client.list(path, recursive, MAX_LISTING)?;
    if json {
        print_json(&serde_json::json!({ "entries": entries, "truncated": truncated }));
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for entry in &entries {
        writeln!(out, "{}", listing_line(entry))?;
    }
    if truncated {
        eprintln!("burrow: the listing stops at {MAX_LISTING} entries");
    }
    Ok(())
}

/// `ls -l`-like: kind, permission bits, size, path (and a link's target).
fn listing_line(entry: &Entry) -> String {
    let kind = match entry.kind {
        EntryKind::File => '-',
        EntryKind::Directory => 'd',
        EntryKind::Symlink => 'l',
        EntryKind::Other => '?',
    };
    let mut line = format!(
        "{kind} {:04o} {:>10} {}",
        entry.mode & 0o7777,
        entry.size,
        entry.path
    );
    if let Some(target) = &entry.target {
        line.push_str(" -> ");
        line.push_str(target);
    }
    line
}

fn read(
    workspace: &str,
    path: &str,
    offset: u64,
    max_bytes: u64,
    redact: &[burrow_redact::RuleSpec],
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    let redactor = handle.redactor(redact)?;
    // Redaction looks behind the offset, so that a secret the page starts inside of is still
    // recognised (and shown as its replacement, not as its second half).
    let look_behind = if redactor.is_empty() {
        0
    } else {
        redactor.hold_back() as u64
    };
    let window_start = offset.saturating_sub(look_behind);
    let end = offset.saturating_add(max_bytes);
    let (raw, size) = read_range(&mut client, path, window_start, end)?;
    let complete = end >= size;
    let (shown, next) = if redactor.is_empty() {
        let from = (offset - window_start) as usize;
        (
            raw.get(from..).unwrap_or_default().to_vec(),
            window_start + raw.len() as u64,
        )
    } else {
        redactor.redact_window(&raw, window_start, offset, complete)
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&shown)?;
    out.flush()?;
    if next < size {
        eprintln!("burrow: showed bytes {offset}..{next} of {size}; continue with --offset {next}");
    }
    Ok(())
}

/// The bytes of `path` in `[start, end)` (fewer at its end), and the file's size.
fn read_range(
    client: &mut burrow_workspace::client::AgentClient,
    path: &str,
    start: u64,
    end: u64,
) -> anyhow::Result<(Vec<u8>, u64)> {
    let mut bytes = Vec::new();
    let mut position = start;
    let mut size = client.read_file(path, start, 0)?.size;
    while position < end.min(size) {
        let chunk = client.read_file(path, position, end - position)?;
        size = chunk.size;
        if chunk.bytes.is_empty() {
            break;
        }
        position += chunk.bytes.len() as u64;
        bytes.extend(chunk.bytes);
    }
    Ok((bytes, size))
}

fn write(
    workspace: &str,
    path: &str,
    text: Option<&str>,
    from: Option<&std::path::Path>,
    mode: Option<u32>,
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    let limit = handle.policy()?.workspace.max_file_write.bytes();
    let content = match (text, from) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(file)) => {
            let size = std::fs::metadata(file)
                .with_context(|| file.display().to_string())?
                .len();
            if size > limit {
                bail!(
                    "{}: {size} bytes is more than the {limit} a write may carry",
                    file.display()
                );
            }
            read_bounded(
                std::fs::File::open(file).with_context(|| file.display().to_string())?,
                limit,
            )?
        }
        (None, None) => read_bounded(std::io::stdin().lock(), limit)?,
    };
    client.write_file(path, &content, mode, false)?;
    handle.audit(&journal::record(
        "file.write",
        format!("{path} ({} bytes)", content.len()),
    ))?;
    Ok(())
}

/// Reads everything, refusing more than `limit` bytes.
fn read_bounded(reader: impl Read, limit: u64) -> anyhow::Result<Vec<u8>> {
    let mut content = Vec::new();
    reader.take(limit + 1).read_to_end(&mut content)?;
    if content.len() as u64 > limit {
        bail!("the content is more than the {limit} bytes a write may carry");
    }
    Ok(content)
}

fn change(
    workspace: &str,
    kind: &str,
    path: &str,
    operation: impl FnOnce(&mut burrow_workspace::client::AgentClient) -> burrow_workspace::Result<()>,
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    operation(&mut client)?;
    handle.audit(&journal::record(kind, path))?;
    Ok(())
}
