//! How `plan` applies hunks and when it refuses.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use burrow_patch::{ApplyError, Change, PatchSource, parse, plan, render_diff};
use common::{Tree, patched, tree};

fn numbered(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}

fn plan_error(before: &Tree, patch: &str) -> ApplyError {
    let parsed = parse(patch.as_bytes()).unwrap();
    plan(&parsed, &mut before.clone()).unwrap_err()
}

#[test]
fn hunk_applies_where_lines_were_inserted_above() {
    let old = numbered(30);
    let new = old.replace("line 20\n", "line twenty\n");
    let diff = render_diff("f.txt", "f.txt", Some(old.as_bytes()), Some(new.as_bytes()));
    assert!(diff.contains("@@ -17,7 +17,7 @@"), "{diff}");

    let shifted = format!("inserted 1\ninserted 2\ninserted 3\n{old}");
    let result = patched(&tree(&[("f.txt", &shifted)]), diff.as_bytes()).unwrap();
    let expected = format!("inserted 1\ninserted 2\ninserted 3\n{new}");
    assert_eq!(result["f.txt"], expected.as_bytes());
}

#[test]
fn later_hunks_follow_the_offset_of_earlier_ones() {
    // The second hunk's block also appears 8 lines above it. Once 9 lines
    // are inserted at the top, that copy is nearer to the second header
    // than the real block; only carrying the first hunk's offset over finds
    // the right one.
    let block = "x\ny\nz\nTARGET\nz\ny\nx\n";
    let old = format!(
        "p\nq\nr\nFIRST\nr\nq\np\n{}{block}gap\n{block}{}",
        numbered(10),
        numbered(5)
    );
    let new = old
        .replacen("FIRST", "first", 1)
        .replacen("TARGET", "SECOND", 2)
        .replacen("SECOND", "TARGET", 1);
    let diff = render_diff("f", "f", Some(old.as_bytes()), Some(new.as_bytes()));
    assert_eq!(diff.matches("\n@@ ").count(), 2, "{diff}");
    assert!(diff.contains("@@ -26,7 +26,7 @@"), "{diff}");

    let top = numbered(9);
    let result = patched(&tree(&[("f", &format!("{top}{old}"))]), diff.as_bytes()).unwrap();
    assert_eq!(result["f"], format!("{top}{new}").as_bytes());
}

#[test]
fn nearest_match_wins() {
    // The header says line 20; the context is at lines 12-14 and 24-26.
    let mut lines: Vec<String> = (1..=40).map(|n| format!("{n}\n")).collect();
    for at in [11, 23] {
        lines[at] = "before\n".into();
        lines[at + 1] = "old\n".into();
        lines[at + 2] = "after\n".into();
    }
    let file: String = lines.concat();
    let patch = "--- a/f\n+++ b/f\n@@ -20,3 +20,3 @@\n before\n-old\n+new\n after\n";
    let result = patched(&tree(&[("f", &file)]), patch.as_bytes()).unwrap();
    let expected = {
        let mut lines = lines.clone();
        lines[24] = "new\n".into();
        lines.concat()
    };
    assert_eq!(result["f"], expected.as_bytes());
}

#[test]
fn hunk_whose_context_is_gone_names_file_and_line() {
    let old = numbered(60);
    let new = old
        .replace("line 5\n", "line five\n")
        .replace("line 43\n", "line forty-three\n");
    let diff = render_diff(
        "src/lib.rs",
        "src/lib.rs",
        Some(old.as_bytes()),
        Some(new.as_bytes()),
    );
    assert!(diff.contains("@@ -40,7 +40,7 @@"), "{diff}");

    let edited = old.replace("line 42\n", "someone else's line\n");
    let error = plan_error(&tree(&[("src/lib.rs", &edited)]), &diff);
    assert_eq!(
        error.to_string(),
        "src/lib.rs: hunk 2 at line 40 does not apply"
    );
    assert_eq!(error.path(), "src/lib.rs");
    assert_eq!(error.line(), Some(40));
}

#[test]
fn one_bad_file_fails_the_whole_patch() {
    let patch = "\
--- a/good.txt
+++ b/good.txt
@@ -1 +1 @@
-old
+new
--- a/bad.txt
+++ b/bad.txt
@@ -1 +1 @@
-expected
+new
";
    let before = tree(&[("good.txt", "old\n"), ("bad.txt", "something else\n")]);
    let error = plan_error(&before, patch);
    assert_eq!(
        error.to_string(),
        "bad.txt: hunk 1 at line 1 does not apply"
    );
    // The same patch with the bad file fixed goes through, so it was the bad
    // file alone that stopped it.
    let fixed = tree(&[("good.txt", "old\n"), ("bad.txt", "expected\n")]);
    let result = patched(&fixed, patch.as_bytes()).unwrap();
    assert_eq!(result, tree(&[("good.txt", "new\n"), ("bad.txt", "new\n")]));
}

#[test]
fn existence_is_checked() {
    let add = "diff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+x\n";
    let error = plan_error(&tree(&[("src/new.rs", "")]), add);
    assert_eq!(error.to_string(), "src/new.rs: already exists");

    let modify = "--- a/docs/x.md\n+++ b/docs/x.md\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(
        plan_error(&Tree::new(), modify).to_string(),
        "docs/x.md: does not exist"
    );

    let delete = "diff --git a/docs/x.md b/docs/x.md\ndeleted file mode 100644\n";
    assert_eq!(
        plan_error(&Tree::new(), delete).to_string(),
        "docs/x.md: does not exist"
    );

    let rename = "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n";
    assert_eq!(
        plan_error(&Tree::new(), rename).to_string(),
        "x: does not exist"
    );
    let onto_existing = tree(&[("x", "1\n"), ("y", "2\n")]);
    assert_eq!(
        plan_error(&onto_existing, rename).to_string(),
        "y: already exists"
    );
    assert_eq!(
        patched(&tree(&[("x", "1\n")]), rename.as_bytes()).unwrap(),
        tree(&[("y", "1\n")])
    );
}

#[test]
fn delete_checks_the_content() {
    let patch = "diff --git a/a.txt b/a.txt\ndeleted file mode 100644\n--- a/a.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n";
    let error = plan_error(&tree(&[("a.txt", "one\ntwo\nthree\n")]), patch);
    assert_eq!(
        error.to_string(),
        "a.txt: the patch deletes it but its content differs"
    );
    assert_eq!(error.line(), None);
    assert_eq!(
        patched(&tree(&[("a.txt", "one\ntwo\n")]), patch.as_bytes()).unwrap(),
        Tree::new()
    );

    // git shows the deletion of an empty file without hunks.
    let empty = "diff --git a/e b/e\ndeleted file mode 100644\nindex e69de29..0000000\n";
    assert_eq!(
        patched(&tree(&[("e", "")]), empty.as_bytes()).unwrap(),
        Tree::new()
    );
    let error = plan_error(&tree(&[("e", "not empty\n")]), empty);
    assert_eq!(
        error.to_string(),
        "e: the patch deletes it but its content differs"
    );
}

#[test]
fn empty_new_file_and_mode_change() {
    let patch = "\
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
";
    let parsed = parse(patch.as_bytes()).unwrap();
    let changes = plan(&parsed, &mut tree(&[("run.sh", "echo\n")])).unwrap();
    assert_eq!(
        changes,
        vec![
            Change::Write {
                path: "empty".into(),
                content: Vec::new(),
                mode: Some(0o100644)
            },
            Change::Write {
                path: "run.sh".into(),
                content: b"echo\n".to_vec(),
                mode: Some(0o100755)
            },
        ]
    );
}

#[test]
fn a_path_changed_twice_is_refused() {
    let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-1\n+2\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-2\n+3\n";
    let error = plan_error(&tree(&[("f", "1\n")]), patch);
    assert_eq!(error.to_string(), "f: the patch changes it more than once");

    let rename_onto_modified = "\
diff --git a/x b/y
rename from x
rename to y
--- a/y
+++ b/y
@@ -1 +1 @@
-1
+2
";
    let error = plan_error(&tree(&[("x", "1\n"), ("y", "1\n")]), rename_onto_modified);
    assert_eq!(error.path(), "y");
}

#[test]
fn final_newline_state_is_kept_unless_the_patch_changes_it() {
    let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n";
    let result = patched(&tree(&[("f", "1\n2\n3\n4")]), patch.as_bytes()).unwrap();
    assert_eq!(result["f"], b"1\ntwo\n3\n4");

    let adds_newline =
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n 1\n-2\n\\ No newline at end of file\n+2\n";
    let result = patched(&tree(&[("f", "1\n2")]), adds_newline.as_bytes()).unwrap();
    assert_eq!(result["f"], b"1\n2\n");
    // The marker is part of what must match: the file already has one.
    let error = patched(&tree(&[("f", "1\n2\n")]), adds_newline.as_bytes()).unwrap_err();
    assert_eq!(error, "f: hunk 1 at line 1 does not apply");
}

#[test]
fn nothing_is_appended_to_a_line_without_newline() {
    // A zero-context insertion after the last line, which has no newline:
    // applying it would glue the lines together.
    let patch = "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+3\n";
    let error = patched(&tree(&[("f", "1\n2")]), patch.as_bytes()).unwrap_err();
    assert_eq!(error, "f: hunk 1 at line 2 does not apply");
    let result = patched(&tree(&[("f", "1\n2\n")]), patch.as_bytes()).unwrap();
    assert_eq!(result["f"], b"1\n2\n3\n");
}

#[test]
fn crlf_lines_match_byte_for_byte() {
    let patch = "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n";
    let result = patched(&tree(&[("w.txt", "a\r\nb\r\n")]), patch.as_bytes()).unwrap();
    assert_eq!(result["w.txt"], b"a\r\nc\r\n");
    // The same text with LF endings is different content.
    assert!(patched(&tree(&[("w.txt", "a\nb\n")]), patch.as_bytes()).is_err());
}

#[test]
fn hunks_may_not_overlap() {
    let patch = "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n 2\n-3\n+x\n@@ -3,1 +3,1 @@\n-3\n+y\n";
    let error = patched(&tree(&[("f", "1\n2\n3\n4\n")]), patch.as_bytes()).unwrap_err();
    assert_eq!(error, "f: hunk 2 at line 3 does not apply");
}

#[test]
fn plain_diff_names_without_prefix_are_used_as_they_are() {
    let patch = "--- src/old.c\t2024-01-01 10:00:00.000000000 +0100\n+++ src/main.c\t2024-01-02 10:00:00.000000000 +0100\n@@ -1 +1 @@\n-a\n+b\n";
    let parsed = parse(patch.as_bytes()).unwrap();
    assert_eq!(parsed.files[0].old_path.as_deref(), Some("src/main.c"));
    assert_eq!(parsed.files[0].new_path.as_deref(), Some("src/main.c"));
    assert_eq!(
        patched(&tree(&[("src/main.c", "a\n")]), patch.as_bytes()).unwrap()["src/main.c"],
        b"b\n"
    );
}

#[test]
fn epoch_timestamps_in_other_zones_mean_absent() {
    let patch = "--- a/n\t1969-12-31 19:00:00.000000000 -0500\n+++ b/n\t2024-01-02 10:00:00 -0500\n@@ -0,0 +1 @@\n+new\n";
    assert_eq!(
        patched(&Tree::new(), patch.as_bytes()).unwrap(),
        tree(&[("n", "new\n")])
    );
    // Absurd clocks are not the epoch (and do not overflow anything).
    let absurd = patch.replace("19:00:00", "99999999999999999999:00:00");
    assert_eq!(
        patched(&Tree::new(), absurd.as_bytes()).unwrap_err(),
        "n: does not exist"
    );
    let not_epoch = patch.replace("19:00:00.000000000", "19:00:01.000000000");
    assert_eq!(
        patched(&Tree::new(), not_epoch.as_bytes()).unwrap_err(),
        "n: does not exist"
    );
}

#[test]
fn read_errors_are_reported_with_the_file() {
    struct Unreadable;
    impl PatchSource for Unreadable {
        fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, String> {
            Err(format!("permission denied\nfor {path}"))
        }
    }
    let parsed = parse(b"--- a/secret\n+++ b/secret\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    let error = plan(&parsed, &mut Unreadable).unwrap_err();
    assert_eq!(error.path(), "secret");
    assert_eq!(
        error.to_string(),
        "secret: cannot be read: permission denied\\nfor secret"
    );
}

#[test]
fn deletes_come_before_writes() {
    // A file replaced by a directory of the same name.
    let patch = "\
diff --git a/x b/x
deleted file mode 100644
--- a/x
+++ /dev/null
@@ -1 +0,0 @@
-file
diff --git a/x/inner b/x/inner
new file mode 100644
--- /dev/null
+++ b/x/inner
@@ -0,0 +1 @@
+inner
";
    let parsed = parse(patch.as_bytes()).unwrap();
    let changes = plan(&parsed, &mut tree(&[("x", "file\n")])).unwrap();
    assert_eq!(
        changes,
        vec![
            Change::Delete { path: "x".into() },
            Change::Write {
                path: "x/inner".into(),
                content: b"inner\n".to_vec(),
                mode: Some(0o100644)
            },
        ]
    );
}
