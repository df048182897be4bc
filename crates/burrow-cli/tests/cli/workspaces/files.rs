//! File operations: listing, reading with paging, atomic bounded writes, removal, directories.

use crate::cell_test;

cell_test!(files_are_written_read_listed_and_removed, |t| {
    t.create_ws("f", &[]);
    t.ok(&["file", "mkdir", "f", "src/deep", "--parents"]);
    t.ok(&["file", "write", "f", "src/deep/a.txt", "--text", "alpha\n"]);
    let stdin = t.call_with_input(
        &["file", "write", "f", "src/b.sh", "--mode", "755"],
        b"#!/bin/sh\necho b\n",
    );
    assert_eq!(stdin.status, 0, "{stdin:#?}");
    assert_eq!(t.ok(&["file", "read", "f", "src/deep/a.txt"]), "alpha\n");
    // Written files are what commands see, with their mode.
    assert_eq!(t.sh("f", "./src/b.sh && cat src/deep/a.txt"), "b\nalpha\n");

    let listing = t.ok(&["file", "ls", "f", "src"]);
    assert!(
        listing.contains("- 0755") && listing.contains("src/b.sh"),
        "{listing}"
    );
    assert!(
        listing.contains("d ") && listing.contains("src/deep"),
        "{listing}"
    );
    let recursive = t.call(&["file", "ls", "f", "--json", "-r"]).json();
    let paths: Vec<&str> = recursive["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"src/deep/a.txt"), "{paths:?}");

    t.ok(&["file", "rm", "f", "src/deep/a.txt"]);
    t.fails(&["file", "read", "f", "src/deep/a.txt"], "no such file");
    t.fails(&["file", "rm", "f", "src"], "");
    t.ok(&["file", "rm", "f", "src", "-r"]);
    assert_eq!(t.sh("f", "ls -A"), "");
    t.fails(&["file", "mkdir", "f", "a/b"], "no such file");
});

cell_test!(writes_and_reads_are_binary_safe, |t| {
    t.create_ws("bin", &[]);
    let bytes: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
    let host = t.write("blob.bin", &bytes);
    t.ok(&[
        "file",
        "write",
        "bin",
        "blob.bin",
        "--from",
        host.to_str().unwrap(),
    ]);
    let read = t.call(&["file", "read", "bin", "blob.bin", "--max-bytes", "1000000"]);
    assert_eq!(read.status, 0);
    assert_eq!(read.stdout, bytes);
    assert_eq!(t.sh("bin", "wc -c < blob.bin").trim(), "300000");
});

cell_test!(large_files_are_read_a_page_at_a_time, |t| {
    t.create_ws("pages", &[]);
    t.sh("pages", "seq 1 100000 > numbers");
    let first = t.call(&["file", "read", "pages", "numbers"]);
    assert_eq!(first.stdout.len(), 65536);
    assert!(
        first.stderr.contains("continue with --offset 65536"),
        "{first:#?}"
    );
    let next = t.call(&[
        "file",
        "read",
        "pages",
        "numbers",
        "--offset",
        "65536",
        "--max-bytes",
        "10",
    ]);
    let all: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(next.stdout, all.as_bytes()[65536..65546]);
    assert!(
        next.stderr.contains("continue with --offset 65546"),
        "{next:#?}"
    );
});

cell_test!(writes_are_bounded_and_leave_nothing_half_written, |t| {
    t.create_ws("small", &["--max-file-write", "1K"]);
    t.ok(&["file", "write", "small", "f", "--text", "original"]);
    let big = "x".repeat(2048);
    t.fails(
        &["file", "write", "small", "f", "--text", &big],
        "more than",
    );
    let from_stdin = t.call_with_input(&["file", "write", "small", "g"], big.as_bytes());
    assert_ne!(from_stdin.status, 0);
    assert_eq!(t.ok(&["file", "read", "small", "f"]), "original");
    assert_eq!(t.sh("small", "ls -A"), "f\n");
});

cell_test!(file_operations_on_unknown_paths_fail_clearly, |t| {
    t.create_ws("err", &[]);
    t.fails(
        &["file", "read", "err", "missing"],
        "missing: no such file or directory",
    );
    t.fails(&["file", "ls", "err", "missing"], "no such file");
    t.ok(&["file", "mkdir", "err", "dir"]);
    t.fails(
        &["file", "write", "err", "dir", "--text", "x"],
        "is a directory",
    );
    t.fails(&["file", "read", "err", "dir"], "");
});
