//! Output: streaming, capped capture with head and tail, floods.

use crate::cell_test;

cell_test!(captured_output_keeps_head_and_tail, |t| {
    let run = t.run_json(
        &["--max-output-bytes", "1K"],
        "for i in $(seq 1 2000); do echo line-$i; done",
    );
    run.assert_success();
    let stdout = run.stdout();
    assert!(stdout.starts_with("line-1\nline-2\n"), "{stdout}");
    assert!(stdout.ends_with("line-1999\nline-2000\n"), "{stdout}");
    assert!(stdout.contains("[... burrow omitted"), "{stdout}");
    let omitted = run.json["truncated"]["stdout"]["bytes"].as_u64().unwrap();
    let total: u64 = (1..=2000u64)
        .map(|i| format!("line-{i}\n").len() as u64)
        .sum();
    assert!(
        omitted > total - 1100 && omitted < total,
        "{omitted} of {total}"
    );
    assert_eq!(run.json["truncated"]["stderr"], serde_json::Value::Null);
});

cell_test!(a_line_cap_keeps_first_and_last_lines, |t| {
    let run = t.run_json(&["--max-output-lines", "4"], "seq 1 100");
    let stdout = run.stdout();
    assert!(stdout.starts_with("1\n2\n"), "{stdout}");
    assert!(stdout.ends_with("99\n100\n"), "{stdout}");
    assert_eq!(run.json["truncated"]["stdout"]["lines"], 96);
});

cell_test!(stdout_and_stderr_are_captured_apart, |t| {
    let run = t.run_json(&[], "echo out; echo err >&2");
    assert_eq!(run.stdout(), "out\n");
    assert_eq!(run.stderr(), "err\n");
});

cell_test!(a_ten_gigabyte_flood_finishes_truncated, |t| {
    let run = t.run_json(
        &["--timeout", "120"],
        "head -c 10G /dev/zero; echo done >&2",
    );
    run.assert_success();
    let omitted = run.json["truncated"]["stdout"]["bytes"].as_u64().unwrap();
    assert_eq!(omitted, 10 * 1024 * 1024 * 1024 - 1024 * 1024);
    assert_eq!(run.stderr(), "done\n");
});

cell_test!(
    a_flood_streamed_to_a_closed_reader_does_not_block_the_command,
    |t| {
        // burrow's own stdout is closed early (as `| head` does): the command still runs to its end.
        let mut burrow = t
            .burrow([
                "run",
                "--",
                "sh",
                "-c",
                "head -c 200M /dev/zero; echo finished >&2",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(burrow.stdout.take());
        let output = burrow.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "finished\n");
    }
);
