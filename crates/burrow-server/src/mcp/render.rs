//! What a tool's answer looks like to a model: short text that puts first what it needs (the
//! exit code, then the output), with long output cut in the middle and a note saying so. The
//! full answer goes alongside as structured content.

use serde_json::Value;

/// Most bytes of one stream or document shown in a tool's text; head and tail are kept.
pub(super) const TEXT_CAP: usize = 20 * 1024;

/// How a tool's answer is turned into text.
#[derive(Debug, Clone, Copy)]
pub(super) enum Render {
    /// A command's end and output (`run_command`, `workspace_exec`, `session_exec`).
    Command,
    /// A file page: its content.
    File,
    /// A diff: the patches, one after the other.
    Diff,
    /// A shell's output page.
    Shell,
    /// Anything else: the JSON, indented.
    Json,
    /// An operation with no answer: this sentence.
    Done(&'static str),
}

impl Render {
    /// The text for `answer`.
    pub(super) fn text(self, answer: &Value) -> String {
        match self {
            Render::Command => command(answer),
            Render::File => file(answer),
            Render::Diff => diff(answer),
            Render::Shell => shell(answer),
            Render::Json => {
                serde_json::to_string_pretty(answer).unwrap_or_else(|_| answer.to_string())
            }
            Render::Done(sentence) => sentence.to_owned(),
        }
    }
}

fn command(answer: &Value) -> String {
    let mut text = String::new();
    if let Some(error) = answer["error"].as_str() {
        text.push_str(&format!("error: {error}\n"));
    }
    let duration = answer["duration_ms"].as_u64().unwrap_or(0);
    match answer["exit_code"].as_i64() {
        Some(code) if answer["timed_out"] == Value::Bool(true) => text.push_str(&format!(
            "exit code {code}: timed out and killed after {duration} ms\n"
        )),
        Some(code) => match answer["signal"].as_i64() {
            Some(signal) => text.push_str(&format!(
                "exit code {code}: killed by signal {signal} ({duration} ms)\n"
            )),
            None => text.push_str(&format!("exit code {code} ({duration} ms)\n")),
        },
        None => text.push_str("no exit code: the command did not finish\n"),
    }
    if answer["oom_killed"] == Value::Bool(true) {
        text.push_str("the memory limit killed it\n");
    }
    for stream in ["stdout", "stderr"] {
        let output = answer[stream].as_str().unwrap_or("");
        if output.is_empty() {
            continue;
        }
        text.push_str(&format!("--- {stream} ---\n"));
        text.push_str(&cap_middle(output, TEXT_CAP));
        if !output.ends_with('\n') {
            text.push('\n');
        }
        if let Some(omitted) = answer["truncated"][stream].as_object() {
            let bytes = omitted.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            text.push_str(&format!(
                "[{bytes} bytes of {stream} were left out in the middle: it was too long]\n"
            ));
        }
    }
    if answer["stdout"].as_str().unwrap_or("").is_empty()
        && answer["stderr"].as_str().unwrap_or("").is_empty()
    {
        text.push_str("(no output)\n");
    }
    if let Some(hints) = answer["hints"].as_array() {
        for hint in hints.iter().filter_map(Value::as_str) {
            text.push_str(&format!("hint: {hint}\n"));
        }
    }
    text
}

fn file(answer: &Value) -> String {
    let content = answer["content"].as_str().unwrap_or("");
    let mut text = if answer["encoding"] == "base64" {
        format!("(binary file, base64)\n{}", cap_middle(content, TEXT_CAP))
    } else {
        cap_middle(content, TEXT_CAP)
    };
    let (size, next) = (
        answer["size"].as_u64().unwrap_or(0),
        answer["next_offset"].as_u64().unwrap_or(0),
    );
    if next < size {
        text.push_str(&format!(
            "\n[the file has {size} bytes; read on with offset {next}]"
        ));
    }
    text
}

fn diff(answer: &Value) -> String {
    let files = answer["files"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if files.is_empty() {
        return "no changes since the baseline".to_owned();
    }
    let patches: String = files
        .iter()
        .map(|file| match file["patch"].as_str() {
            Some(patch) => patch.to_owned(),
            None => format!(
                "{} {} (binary)\n",
                file["status"].as_str().unwrap_or("changed"),
                file["path"].as_str().unwrap_or("?")
            ),
        })
        .collect();
    cap_middle(&patches, TEXT_CAP)
}

fn shell(answer: &Value) -> String {
    let mut text = cap_middle(answer["output"].as_str().unwrap_or(""), TEXT_CAP);
    if let Some(lost) = answer["lost"].as_u64().filter(|&lost| lost > 0) {
        text.insert_str(0, &format!("[{lost} earlier characters are gone]\n"));
    }
    text.push_str(&format!(
        "\n[next_cursor: {}]",
        answer["next_cursor"].as_u64().unwrap_or(0)
    ));
    if !answer["exited"].is_null() {
        text.push_str(&format!(" [the shell exited: {}]", answer["exited"]));
    }
    text
}

/// `text` with at most `cap` bytes: when longer, its head and tail (cut at character
/// boundaries) around a line saying how much was left out.
pub(super) fn cap_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut head = cap / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - cap / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[... {} bytes left out here ...]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_command_shows_its_exit_code_then_its_streams() {
        let text = Render::Command.text(&json!({
            "exit_code": 3, "signal": null, "timed_out": false, "duration_ms": 5,
            "stdout": "out\n", "stderr": "err", "truncated": {"stdout": null, "stderr": null},
        }));
        assert_eq!(
            text,
            "exit code 3 (5 ms)\n--- stdout ---\nout\n--- stderr ---\nerr\n"
        );
    }

    #[test]
    fn long_text_keeps_its_head_and_tail() {
        let long = format!("{}{}", "é".repeat(30_000), "end");
        let capped = cap_middle(&long, 1000);
        assert!(capped.len() < 1100);
        assert!(capped.starts_with('é') && capped.ends_with("end"));
        assert!(capped.contains("bytes left out here"));
        assert_eq!(cap_middle("short", 1000), "short");
    }

    #[test]
    fn a_timeout_is_said() {
        let text = Render::Command.text(&json!({
            "exit_code": 124, "timed_out": true, "duration_ms": 1000, "stdout": "", "stderr": "",
        }));
        assert!(text.contains("timed out"), "{text}");
        assert!(text.contains("(no output)"), "{text}");
    }
}
