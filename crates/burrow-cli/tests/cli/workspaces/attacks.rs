//! Attacks on every file entry point: `..`, absolute paths, symlinks planted by code in the cell
//! (as the final component and as a parent), a symlink swapped in mid-operation, tar-slip and
//! link tricks on import, patches whose paths escape. Each names a target the operation could
//! reach without the protection, so the test fails if the protection goes.

use std::io::Write as _;
use std::path::Path;

use crate::cell_test;

/// A host file whose content must never come out of a workspace operation.
const SECRET: &str = "TOPSECRET-7f3a";

cell_test!(dot_dot_and_absolute_paths_stay_inside, |t| {
    t.create_ws("w", &[]);
    // Readable in the cell (the host's files are visible read-only): only the confinement of
    // file operations to /workspace stops these.
    assert!(t.sh("w", "mkdir a && cat /etc/passwd").contains("root:"));
    for path in [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../etc/passwd",
        "/workspace/../etc/passwd",
    ] {
        t.fails(&["file", "read", "w", path], "outside the workspace");
    }
    t.fails(&["file", "ls", "w", ".."], "outside the workspace");
    t.fails(
        &["file", "write", "w", "../escape", "--text", "x"],
        "outside the workspace",
    );
    t.fails(
        &["file", "write", "w", "/tmp/escape", "--text", "x"],
        "outside the workspace",
    );
    t.fails(
        &["file", "mkdir", "w", "../newdir"],
        "outside the workspace",
    );
    t.fails(&["file", "rm", "w", "../workspace"], "");
    assert!(!t.sh("w", "ls -A /tmp / /workspace").contains("escape"));
});

cell_test!(symlinks_planted_in_the_cell_are_not_followed_out, |t| {
    t.create_ws("w", &[]);
    // Code in the cell plants links to readable and writable places outside /workspace.
    t.sh(
        "w",
        "ln -s /etc/passwd pw && ln -s /etc etc && ln -s /tmp tmp && ln -s /tmp/target final",
    );
    // Final component.
    t.fails(&["file", "read", "w", "pw"], "outside the workspace");
    // Parent component.
    t.fails(
        &["file", "read", "w", "etc/passwd"],
        "outside the workspace",
    );
    t.fails(&["file", "ls", "w", "etc"], "outside the workspace");
    t.fails(
        &["file", "write", "w", "tmp/owned", "--text", "x"],
        "outside the workspace",
    );
    t.fails(
        &["file", "mkdir", "w", "tmp/owned-dir"],
        "outside the workspace",
    );
    t.fails(
        &["file", "rm", "w", "tmp/anything"],
        "outside the workspace",
    );
    // Writing to a link replaces the link; the place it pointed to is untouched.
    t.ok(&["file", "write", "w", "final", "--text", "replaced"]);
    assert_eq!(
        t.sh("w", "ls -A /tmp; test -L final || echo not-a-link"),
        "not-a-link\n"
    );
    assert_eq!(t.ok(&["file", "read", "w", "final"]), "replaced");
    // Links inside the workspace keep working.
    t.sh(
        "w",
        "mkdir real && echo inside > real/f && ln -s real alias",
    );
    assert_eq!(t.ok(&["file", "read", "w", "alias/f"]), "inside\n");
});

cell_test!(a_symlink_swapped_in_mid_operation_does_not_escape, |t| {
    t.create_ws("race", &[]);
    t.sh("race", "mkdir d && echo inside > d/passwd && ln -s /etc s");
    // Swap `d` between the real directory and a link to /etc as fast as the cell can, while
    // the host reads d/passwd again and again.
    let swapper = t
        .burrow([
            "exec",
            "race",
            "--timeout",
            "120",
            "--",
            "sh",
            "-c",
            "while [ ! -e stop ]; do mv d real && mv s d && mv d s && mv real d; done",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut inside = 0;
    for _ in 0..300 {
        let read = t.call(&["file", "read", "race", "d/passwd"]);
        assert!(
            !read.text().contains("root:"),
            "read /etc/passwd through a swapped link: {read:#?}"
        );
        if read.status == 0 {
            assert_eq!(read.text(), "inside\n");
            inside += 1;
        }
    }
    t.ok(&["file", "write", "race", "stop", "--text", ""]);
    assert!(swapper.wait_with_output().unwrap().status.success());
    assert!(inside > 0, "the directory was never there to read");
});

cell_test!(host_side_views_never_follow_planted_links, |t| {
    let secret = t.write("secret/key.txt", SECRET);
    let secret_dir = secret.parent().unwrap().display().to_string();
    t.create_ws("w", &[]);
    t.sh(
        "w",
        &format!(
            "ln -s {} key && ln -s {secret_dir} dir && mkfifo pipe && echo ok > plain",
            secret.display()
        ),
    );
    // diff walks the layers on the host: it shows the links, not what they point to.
    let diff = t.ok(&["diff", "w"]);
    assert!(!diff.contains(SECRET), "{diff}");
    assert!(
        diff.contains("b/key") && diff.contains("new file mode 120000"),
        "{diff}"
    );
    let json = t.ok(&["diff", "w", "--json"]);
    assert!(!json.contains(SECRET));
    // export copies the links as links.
    let out = t.root.join("out");
    t.ok(&["export", "w", "--output", out.to_str().unwrap()]);
    assert!(
        std::fs::symlink_metadata(out.join("key"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(out.join("dir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(out.join("plain")).unwrap(), "ok\n");
    assert!(!out.join("pipe").exists(), "a FIFO was exported");
    t.fails(
        &[
            "export",
            "w",
            "dir/key.txt",
            "--output",
            t.root.join("x").to_str().unwrap(),
        ],
        "",
    );
    assert!(!t.root.join("x").exists());
    let tar = t.root.join("out.tar");
    t.ok(&["export", "w", "--output", tar.to_str().unwrap()]);
    let bytes = std::fs::read(&tar).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(SECRET));
});

/// One raw tar entry: name, type, link target, data.
type RawEntry<'a> = (&'a str, tar::EntryType, &'a str, &'a [u8]);

/// Builds a tarball whose entries are given raw (names the tar crate would refuse to write).
fn raw_tar(path: &Path, entries: &[RawEntry<'_>]) {
    let mut builder = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, kind, link, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(*kind);
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        old.linkname[..link.len()].copy_from_slice(link.as_bytes());
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap().flush().unwrap();
}

cell_test!(imports_with_slips_and_link_tricks_are_refused_whole, |t| {
    t.create_ws("imp", &[]);
    use tar::EntryType::{Block, Char, Directory, Fifo, Link, Regular, Symlink};
    let cases: Vec<(&str, Vec<RawEntry<'_>>)> = vec![
        (
            "dot-dot",
            vec![("good", Regular, "", b"g"), ("../evil", Regular, "", b"x")],
        ),
        ("nested-dot-dot", vec![("a/../../evil", Regular, "", b"x")]),
        ("absolute", vec![("/tmp/evil", Regular, "", b"x")]),
        ("link-out", vec![("l", Symlink, "/etc", b"")]),
        (
            "link-up",
            vec![("a", Directory, "", b""), ("a/l", Symlink, "../../x", b"")],
        ),
        (
            "through-link",
            vec![("l", Symlink, "sub", b""), ("l/f", Regular, "", b"x")],
        ),
        ("hardlink-out", vec![("h", Link, "/etc/passwd", b"")]),
        ("hardlink-up", vec![("h", Link, "../x", b"")]),
        ("device", vec![("dev", Char, "", b"")]),
        ("block", vec![("blk", Block, "", b"")]),
        ("fifo", vec![("p", Fifo, "", b"")]),
    ];
    for (label, entries) in &cases {
        let tarball = t.root.join(format!("{label}.tar"));
        raw_tar(&tarball, entries);
        let done = t.call(&["import", "imp", tarball.to_str().unwrap()]);
        assert_ne!(done.status, 0, "{label}: accepted: {done:#?}");
        assert_eq!(done.stderr.lines().count(), 1, "{label}: {done:#?}");
    }
    // Nothing of any of them landed, inside or outside.
    assert_eq!(t.sh("imp", "ls -A; ls -A /tmp"), "");
    assert!(!t.root.join("evil").exists() && !t.work.join("evil").exists());

    // A directory source with a link out is refused too.
    let source = t.root.join("src");
    std::fs::create_dir_all(source.join("sub")).unwrap();
    std::fs::write(source.join("sub/ok.txt"), "ok").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", source.join("sub/pw")).unwrap();
    t.give_to_user(&source);
    t.fails(&["import", "imp", source.to_str().unwrap()], "pw");
    assert_eq!(t.sh("imp", "ls -A"), "");
});

cell_test!(patches_that_escape_are_refused, |t| {
    t.create_ws("p", &[]);
    t.sh("p", "echo a > f && ln -s /tmp tmp");
    for target in ["../escape", "/tmp/escape", "a/../../escape"] {
        let patch = format!("--- /dev/null\n+++ b/{target}\n@@ -0,0 +1 @@\n+x\n");
        let done = t.call_with_input(&["patch", "p"], patch.as_bytes());
        assert_ne!(done.status, 0, "{target}: {done:#?}");
    }
    // Through a link the cell planted: refused by the agent, and nothing else of the patch
    // was applied.
    let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/tmp/escape\n@@ -0,0 +1 @@\n+x\n";
    let done = t.call_with_input(&["patch", "p"], patch.as_bytes());
    assert_ne!(done.status, 0, "{done:#?}");
    assert!(done.stderr.contains("outside the workspace"), "{done:#?}");
    assert_eq!(t.sh("p", "cat f; ls -A /tmp"), "a\n");
});
