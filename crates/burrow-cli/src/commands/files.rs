//! `burrow file ...`: reading and changing files in a workspace through its agent.

use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, bail};
use burrow_proto::{Entry, EntryKind};
use burrow_workspace::{journal, pages};

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
    let page = pages::read_file(&handle, &mut client, path, offset, max_bytes, redact)?;
    let mut out = std::io::stdout().lock();
    out.write_all(&page.bytes)?;
    out.flush()?;
    if page.next_offset < page.size {
        eprintln!(
            "burrow: showed bytes {offset}..{} of {}; continue with --offset {}",
            page.next_offset, page.size, page.next_offset
        );
    }
    Ok(())
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
