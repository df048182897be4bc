//! Patches made by real git and GNU diff parse and apply to give the new
//! tree exactly; git accepts the diffs `render_diff` makes.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use burrow_patch::{Change, parse, plan, render_diff};
use common::{Tree, apply_changes};

/// A file's content and whether it is executable.
type Files = BTreeMap<String, (Vec<u8>, bool)>;

fn file(content: &str) -> (Vec<u8>, bool) {
    (content.as_bytes().to_vec(), false)
}

fn numbered(lines: std::ops::Range<usize>, changed: Option<usize>) -> String {
    lines
        .map(|n| {
            if Some(n) == changed {
                format!("line {n} changed\n")
            } else {
                format!("line {n}\n")
            }
        })
        .collect()
}

/// Tree `a`: the workspace before.
fn tree_a() -> Files {
    Files::from([
        ("modified.rs".into(), file(&numbered(1..40, None))),
        ("deleted.txt".into(), file("bye\nfor now\n")),
        ("renamed.txt".into(), file(&numbered(100..120, None))),
        (
            "moved and edited.txt".into(),
            file(&numbered(200..230, None)),
        ),
        ("dir/with space.md".into(), file("# Title\n\nbody\n")),
        ("script.sh".into(), file("#!/bin/sh\necho hi\n")),
        ("crlf.txt".into(), file("one\r\ntwo\r\nthree\r\n")),
        ("no newline.txt".into(), file("first\nlast")),
        ("empty-gone".into(), file("")),
        ("tab\there".into(), file("tab\n")),
        ("unchanged.txt".into(), file("same\n")),
    ])
}

/// Tree `b`: the workspace after.
fn tree_b() -> Files {
    Files::from([
        (
            "modified.rs".into(),
            file(&(numbered(1..40, Some(5)) + "appended\n")),
        ),
        ("added/new.rs".into(), file("fn new() {}\n")),
        ("renamed-to.txt".into(), file(&numbered(100..120, None))),
        ("sub/moved.txt".into(), file(&numbered(200..230, Some(210)))),
        ("dir/with space.md".into(), file("# Title\n\nmore body\n")),
        (
            "script.sh".into(),
            ("#!/bin/sh\necho hi\n".as_bytes().to_vec(), true),
        ),
        ("crlf.txt".into(), file("one\r\n2\r\nthree\r\n")),
        (
            "no newline.txt".into(),
            file("first\nlast\nnow with newline"),
        ),
        ("empty-new".into(), file("")),
        ("tab\there".into(), file("tab\ttab\n")),
        ("unchanged.txt".into(), file("same\n")),
    ])
}

fn write_tree(root: &Path, files: &Files) {
    for (path, (content, executable)) in files {
        let full = root.join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(&full, content).unwrap();
        let mode = if *executable { 0o755 } else { 0o644 };
        fs::set_permissions(&full, fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn contents(files: &Files) -> Tree {
    files
        .iter()
        .map(|(path, (content, _))| (path.clone(), content.clone()))
        .collect()
}

/// Runs a command isolated from the user's git configuration. Returns its
/// stdout; `ok_codes` lists the exit statuses that are not failures.
fn run(dir: &Path, program: &str, args: &[&str], ok_codes: &[i32]) -> Vec<u8> {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .output()
        .unwrap_or_else(|error| panic!("{program} must be installed: {error}"));
    let code = output.status.code().unwrap_or(-1);
    assert!(
        ok_codes.contains(&code),
        "{program} {args:?} exited {code}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let mut all = vec![
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@example.com",
        "-c",
        "core.quotePath=true",
    ];
    all.extend_from_slice(args);
    run(dir, "git", &all, &[0])
}

/// Plans `patch` against tree `a` and checks the result is tree `b`,
/// executable bits included when `check_modes`.
fn assert_turns_a_into_b(patch: &[u8], check_modes: bool) -> Vec<Change> {
    let text = String::from_utf8_lossy(patch);
    let parsed = parse(patch).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let mut source = contents(&tree_a());
    let changes = plan(&parsed, &mut source).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let mut result = contents(&tree_a());
    apply_changes(&mut result, &changes);
    assert_eq!(result, contents(&tree_b()), "patch:\n{text}");
    if check_modes {
        let script_mode = changes.iter().find_map(|change| match change {
            Change::Write { path, mode, .. } if path == "script.sh" => Some(*mode),
            _ => None,
        });
        assert_eq!(script_mode, Some(Some(0o100755)), "patch:\n{text}");
    }
    changes
}

/// A repository whose HEAD is tree `a` and whose index is tree `b`.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    write_tree(root, &tree_a());
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "a"]);
    for path in tree_a().keys() {
        fs::remove_file(root.join(path)).unwrap();
    }
    write_tree(root, &tree_b());
    git(root, &["add", "-A"]);
    dir
}

#[test]
fn git_diff_with_renames_applies() {
    let repo = repository();
    let patch = git(repo.path(), &["diff", "--cached", "--no-color", "-M"]);
    let text = String::from_utf8_lossy(&patch);
    // Make sure the interesting headers are really exercised.
    for header in [
        "rename from renamed.txt",
        "rename from moved and edited.txt",
        "new file mode 100644",
        "deleted file mode 100644",
        "old mode 100644",
        "\"a/tab\\there\"",
        "\\ No newline at end of file",
    ] {
        assert!(text.contains(header), "missing {header:?} in:\n{text}");
    }
    let changes = assert_turns_a_into_b(&patch, true);
    assert!(changes.contains(&Change::Delete {
        path: "renamed.txt".into()
    }));
}

#[test]
fn git_diff_without_renames_applies() {
    let repo = repository();
    let patch = git(
        repo.path(),
        &["diff", "--cached", "--no-color", "--no-renames"],
    );
    assert_turns_a_into_b(&patch, true);
}

#[test]
fn git_diff_with_copies_applies() {
    let repo = repository();
    // A copy of an unmodified file, which only --find-copies-harder reports.
    let copy = numbered(1..40, None).replace("line 30\n", "line 30 in the copy\n");
    fs::write(repo.path().join("copied.rs"), copy.as_bytes()).unwrap();
    fs::write(repo.path().join("modified.rs"), numbered(1..40, None)).unwrap();
    git(repo.path(), &["add", "-A"]);
    let patch = git(
        repo.path(),
        &[
            "diff",
            "--cached",
            "--no-color",
            "-M",
            "-C",
            "--find-copies-harder",
        ],
    );
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("copy from modified.rs"), "{text}");

    let parsed = parse(&patch).unwrap();
    assert!(parsed.files.iter().any(|file| file.is_copy));
    let mut result = contents(&tree_a());
    let changes = plan(&parsed, &mut result.clone()).unwrap();
    apply_changes(&mut result, &changes);
    assert_eq!(result["copied.rs"], copy.as_bytes());
    assert_eq!(result["modified.rs"], numbered(1..40, None).as_bytes());
}

#[test]
fn git_format_patch_applies() {
    let repo = repository();
    git(
        repo.path(),
        &[
            "commit",
            "-q",
            "-m",
            "b\n\nA body line.\n- a bullet\n--- not a header",
        ],
    );
    let patch = git(
        repo.path(),
        &["format-patch", "-1", "-M", "--stdout", "HEAD"],
    );
    assert!(String::from_utf8_lossy(&patch).contains("\n-- \n"));
    assert_turns_a_into_b(&patch, true);
}

#[test]
fn git_diff_no_index_applies() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(&dir.path().join("a"), &tree_a());
    write_tree(&dir.path().join("b"), &tree_b());
    // Exit status 1 means "there are differences". Without a repository,
    // rename headers would carry the tree directories, so none are asked for;
    // --no-prefix makes the tree directories themselves the a/ and b/.
    let patch = run(
        dir.path(),
        "git",
        &[
            "diff",
            "--no-index",
            "--no-color",
            "--no-renames",
            "--no-prefix",
            "a",
            "b",
        ],
        &[1],
    );
    assert_turns_a_into_b(&patch, true);
}

#[test]
fn gnu_diff_recursive_unified_applies() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(&dir.path().join("a"), &tree_a());
    write_tree(&dir.path().join("b"), &tree_b());
    let patch = run(dir.path(), "diff", &["-ruN", "a", "b"], &[1]);
    // diff -N writes an absent side as an empty file dated the epoch.
    assert!(String::from_utf8_lossy(&patch).contains("1970-01-01"));
    let parsed = parse(&patch).unwrap();
    let mut source = contents(&tree_a());
    let changes = plan(&parsed, &mut source).unwrap();
    let mut result = contents(&tree_a());
    apply_changes(&mut result, &changes);
    // diff -N cannot tell an empty file from an absent one, so the empty
    // file added and the empty file deleted are not in the patch at all.
    let mut expected = contents(&tree_b());
    expected.remove("empty-new");
    expected.insert("empty-gone".into(), Vec::new());
    assert_eq!(
        result,
        expected,
        "patch:\n{}",
        String::from_utf8_lossy(&patch)
    );
}

#[test]
fn git_apply_accepts_rendered_diffs() {
    let (a, b) = (tree_a(), tree_b());
    let mut patch = String::new();
    for path in a
        .keys()
        .chain(b.keys().filter(|path| !a.contains_key(*path)))
    {
        let old = a.get(path).map(|(content, _)| content.as_slice());
        let new = b.get(path).map(|(content, _)| content.as_slice());
        patch.push_str(&render_diff(path, path, old, new));
    }
    let dir = tempfile::tempdir().unwrap();
    let without_modes: Files = a
        .iter()
        .map(|(path, (content, _))| (path.clone(), (content.clone(), false)))
        .collect();
    write_tree(dir.path(), &without_modes);
    let patch_file = tempfile::NamedTempFile::new().unwrap();
    fs::write(patch_file.path(), &patch).unwrap();
    run(
        dir.path(),
        "git",
        &[
            "apply",
            "--whitespace=nowarn",
            patch_file.path().to_str().unwrap(),
        ],
        &[0],
    );

    let mut result = Tree::new();
    collect(dir.path(), dir.path(), &mut result);
    assert_eq!(result, contents(&b), "patch:\n{patch}");
}

fn collect(root: &Path, dir: &Path, into: &mut Tree) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, into);
        } else {
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            into.insert(relative, fs::read(&path).unwrap());
        }
    }
}
