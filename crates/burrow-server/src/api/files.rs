//! Files in a workspace, through its agent: confined to /workspace, reads redacted, writes
//! atomic and bounded by the workspace's policy.

use base64::Engine;
use burrow_proto::Entry;
use burrow_workspace::{journal, pages};
use serde::Serialize;

use super::error::{ApiError, ApiResult};
use super::inputs::{Encoding, FileDeleteInput, FileListInput, FileReadInput, MkdirInput};
use super::{Api, Caller};

/// Entries one listing returns at most.
const MAX_LISTING: u64 = 10_000;

/// The most one read returns.
const MAX_READ: u64 = 1 << 20;

/// A directory's entries.
#[derive(Debug, Serialize)]
pub struct Listing {
    /// The entries, paths relative to /workspace.
    pub entries: Vec<Entry>,
    /// Whether the listing stops before the end.
    pub truncated: bool,
}

/// Part of a file.
#[derive(Debug, Serialize)]
pub struct FileContent {
    /// The file, as asked for.
    pub path: String,
    /// Its whole size in bytes.
    pub size: u64,
    /// Where this part starts.
    pub offset: u64,
    /// Where the next part starts; equal to `size` when this part reaches the end.
    pub next_offset: u64,
    /// The content: text, or base64 when the bytes are not UTF-8.
    pub content: String,
    /// `utf-8` or `base64`.
    pub encoding: &'static str,
}

impl Api {
    /// Lists a directory of a workspace.
    pub fn file_list(&self, caller: &Caller, input: &FileListInput) -> ApiResult<Listing> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        let (entries, truncated) = client.list(&input.path, input.recursive, MAX_LISTING)?;
        Ok(Listing { entries, truncated })
    }

    /// Reads part of a file, redacted.
    pub fn file_read(&self, caller: &Caller, input: &FileReadInput) -> ApiResult<FileContent> {
        if input.max_bytes == 0 || input.max_bytes > MAX_READ {
            return Err(ApiError::invalid(format!(
                "max_bytes {}: give 1 to {MAX_READ}",
                input.max_bytes
            )));
        }
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let page = pages::read_file(
            &handle,
            &mut client,
            &input.path,
            input.offset,
            input.max_bytes,
            &[],
        )?;
        let (content, encoding) = match String::from_utf8(page.bytes) {
            Ok(text) => (text, "utf-8"),
            Err(error) => (
                base64::engine::general_purpose::STANDARD.encode(error.into_bytes()),
                "base64",
            ),
        };
        Ok(FileContent {
            path: input.path.clone(),
            size: page.size,
            offset: page.offset,
            next_offset: page.next_offset,
            content,
            encoding,
        })
    }

    /// Writes a whole file (atomically: readers see the old content or the new).
    pub fn file_write(
        &self,
        caller: &Caller,
        workspace: &str,
        path: &str,
        content: &[u8],
        mode: Option<&str>,
    ) -> ApiResult<()> {
        let mode = mode.map(parse_mode).transpose()?;
        let (handle, mut client) = self.running(caller, workspace)?;
        let limit = handle.policy()?.workspace.max_file_write.bytes();
        if content.len() as u64 > limit {
            return Err(ApiError::new(
                super::ErrorCode::TooLarge,
                format!(
                    "{path}: {} bytes is more than the {limit} a write may carry",
                    content.len()
                ),
            ));
        }
        client.write_file(path, content, mode, false)?;
        handle.audit(&journal::record(
            "file.write",
            format!("{path} ({} bytes)", content.len()),
        ))?;
        Ok(())
    }

    /// Removes a file, or a directory with `recursive`.
    pub fn file_delete(&self, caller: &Caller, input: &FileDeleteInput) -> ApiResult<()> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        client.remove(&input.path, input.recursive)?;
        handle.audit(&journal::record("file.rm", &input.path))?;
        Ok(())
    }

    /// Makes a directory.
    pub fn mkdir(&self, caller: &Caller, input: &MkdirInput) -> ApiResult<()> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        client.mkdir(&input.path, input.parents)?;
        handle.audit(&journal::record("file.mkdir", &input.path))?;
        Ok(())
    }
}

/// A file's content as a request carries it.
pub fn decode_content(content: &str, encoding: Encoding) -> ApiResult<Vec<u8>> {
    match encoding {
        Encoding::Utf8 => Ok(content.as_bytes().to_vec()),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|error| ApiError::invalid(format!("content is not valid base64: {error}"))),
    }
}

/// Permission bits in octal, such as `644` or `0755`.
fn parse_mode(text: &str) -> ApiResult<u32> {
    u32::from_str_radix(text, 8)
        .ok()
        .filter(|mode| *mode <= 0o7777)
        .ok_or_else(|| {
            ApiError::invalid(format!("mode {text}: give octal permission bits, e.g. 644"))
        })
}
