//! The exact text `render_diff` prints, and `diff_stat`/`is_binary`.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

use std::process::Command;

use burrow_patch::{DiffStat, diff_stat, is_binary, render_diff};

#[test]
fn modification_without_final_newline() {
    assert_eq!(
        render_diff("f", "f", Some(b"a\nb"), Some(b"a\nc")),
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
    );
}

#[test]
fn added_and_deleted_files() {
    assert_eq!(
        render_diff("n.txt", "n.txt", None, Some(b"x\ny\n")),
        "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    );
    assert_eq!(
        render_diff("d", "d", Some(b"x\n"), None),
        "diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    );
    assert_eq!(
        render_diff("e", "e", Some(b""), None),
        "diff --git a/e b/e\ndeleted file mode 100644\n"
    );
}

#[test]
fn unchanged_content_renders_nothing() {
    assert_eq!(render_diff("f", "f", Some(b"same\n"), Some(b"same\n")), "");
    assert_eq!(render_diff("f", "f", None, None), "");
}

#[test]
fn rename_and_awkward_names() {
    assert_eq!(
        render_diff("old.txt", "new.txt", Some(b"x\n"), Some(b"x\n")),
        "diff --git a/old.txt b/new.txt\nrename from old.txt\nrename to new.txt\n"
    );
    assert_eq!(
        render_diff("my file", "my file", Some(b"1\n"), Some(b"2\n")),
        "diff --git a/my file b/my file\n--- a/my file\t\n+++ b/my file\t\n@@ -1 +1 @@\n-1\n+2\n"
    );
    assert!(
        render_diff("tab\there", "tab\there", Some(b"1\n"), Some(b"2\n"))
            .starts_with("diff --git \"a/tab\\there\" \"b/tab\\there\"\n--- \"a/tab\\there\"\n")
    );
}

#[test]
fn binary_content_is_not_shown() {
    assert_eq!(
        render_diff("b.bin", "b.bin", Some(b"\0\x01"), Some(b"\0\x02")),
        "diff --git a/b.bin b/b.bin\nBinary files a/b.bin and b/b.bin differ\n"
    );
    assert_eq!(
        render_diff("b.bin", "b.bin", None, Some(b"text\0")),
        "diff --git a/b.bin b/b.bin\nnew file mode 100644\nBinary files /dev/null and b/b.bin differ\n"
    );
    assert_eq!(
        render_diff("b.bin", "b.bin", Some(b"text\0"), None),
        "diff --git a/b.bin b/b.bin\ndeleted file mode 100644\nBinary files a/b.bin and /dev/null differ\n"
    );
    // Text that is not UTF-8 cannot be carried byte-exact in a String.
    assert!(
        render_diff("l1", "l1", Some(b"caf\xe9\n"), Some(b"cafe\n"))
            .ends_with("Binary files a/l1 and b/l1 differ\n")
    );
}

#[test]
fn binary_detection_looks_at_the_first_8000_bytes() {
    let mut content = vec![b'a'; 9000];
    assert!(!is_binary(&content));
    content[7999] = 0;
    assert!(is_binary(&content));
    content[7999] = b'a';
    content[8000] = 0;
    assert!(!is_binary(&content));
    assert!(!is_binary(b""));
}

#[test]
fn diff_stat_counts_lines() {
    assert_eq!(
        diff_stat(Some(b"a\nb\nc\n"), Some(b"a\nB\nc\nd\n")),
        DiffStat {
            added: 2,
            removed: 1
        }
    );
    assert_eq!(
        diff_stat(None, Some(b"1\n2\n3")),
        DiffStat {
            added: 3,
            removed: 0
        }
    );
    assert_eq!(
        diff_stat(Some(b"1\n2\n"), None),
        DiffStat {
            added: 0,
            removed: 2
        }
    );
    // The last line gaining its newline is a changed line, as in git.
    assert_eq!(
        diff_stat(Some(b"x"), Some(b"x\n")),
        DiffStat {
            added: 1,
            removed: 1
        }
    );
    assert_eq!(diff_stat(Some(b"\0a"), Some(b"\0b")), DiffStat::default());
}

/// For edits with only one sensible diff, the hunks are git's own, byte for
/// byte (headers aside: git adds `index` lines and a function-name heading
/// after `@@`, which `render_diff` leaves out).
#[test]
fn hunks_match_git() {
    let old: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let new = old
        .replace("line 5\n", "line five\n")
        .replace("line 12\n", "")
        .replace("line 40\n", "line 40\nextra\n")
        + "tail";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old"), &old).unwrap();
    std::fs::write(dir.path().join("new"), &new).unwrap();
    let output = Command::new("git")
        .args(["diff", "--no-index", "--no-color", "old", "new"])
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let git = String::from_utf8(output.stdout).unwrap();
    let ours = render_diff("f", "f", Some(old.as_bytes()), Some(new.as_bytes()));
    let hunks = |diff: &str| {
        diff[diff.find("\n@@ ").unwrap()..]
            .lines()
            .map(|line| {
                match line
                    .strip_prefix("@@ ")
                    .and_then(|rest| rest.split_once(" @@"))
                {
                    Some((ranges, _heading)) => format!("@@ {ranges} @@\n"),
                    None => format!("{line}\n"),
                }
            })
            .collect::<String>()
    };
    assert_eq!(hunks(&ours), hunks(&git), "ours:\n{ours}\ngit:\n{git}");
    assert_eq!(hunks(&ours).matches("\n@@ ").count(), 3);
}
