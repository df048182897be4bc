//! What `parse` reads, and what it refuses.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use burrow_patch::{FilePatch, Hunk, HunkLine, PatchError, parse, plan, render_diff};
use common::{Rng, Tree, tree};

fn parse_error(patch: &[u8]) -> String {
    parse(patch).unwrap_err().to_string()
}

fn plain(old: &str, new: &str) -> String {
    format!("--- {old}\n+++ {new}\n@@ -1 +1 @@\n-a\n+b\n")
}

#[test]
fn reads_a_git_section() {
    let patch = "\
From 1234 Mon Sep 17 00:00:00 2001
Subject: [PATCH] change

---
 src/lib.rs | 3 ++-

diff --git a/src/lib.rs b/src/lib.rs
old mode 100644
new mode 100755
index 3b18e51..a42b0d1
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@ fn main() {
 keep
-gone
\\ No newline at end of file
+new
+last
\\ No newline at end of file
-- 
2.47.3
";
    let parsed = parse(patch.as_bytes()).unwrap();
    assert_eq!(
        parsed.files,
        vec![FilePatch {
            old_path: Some("src/lib.rs".into()),
            new_path: Some("src/lib.rs".into()),
            old_mode: Some(0o100644),
            new_mode: Some(0o100755),
            is_copy: false,
            hunks: vec![Hunk {
                old_start: 1,
                old_lines: 2,
                new_start: 1,
                new_lines: 3,
                lines: vec![
                    HunkLine::Context(b"keep".to_vec()),
                    HunkLine::Removed(b"gone".to_vec()),
                    HunkLine::Added(b"new".to_vec()),
                    HunkLine::Added(b"last".to_vec()),
                ],
                old_missing_newline: true,
                new_missing_newline: true,
            }],
        }]
    );
}

#[test]
fn reads_git_quoted_and_spaced_names() {
    let patch = "\
diff --git \"a/tab\\there\" \"b/tab\\there\"
--- \"a/tab\\there\"
+++ \"b/tab\\there\"
@@ -1 +1 @@
-a
+b
diff --git a/with space b/with space
new file mode 100644
index 0000000..e69de29
diff --git \"a/caf\\303\\251 \\\"q\\\" \\\\\" \"b/caf\\303\\251 \\\"q\\\" \\\\\"
deleted file mode 100755
index e69de29..0000000
";
    let parsed = parse(patch.as_bytes()).unwrap();
    let names: Vec<_> = parsed
        .files
        .iter()
        .map(|f| (f.old_path.clone(), f.new_path.clone()))
        .collect();
    assert_eq!(
        names,
        vec![
            (Some("tab\there".into()), Some("tab\there".into())),
            (None, Some("with space".into())),
            (Some("café \"q\" \\".into()), None),
        ]
    );
    assert_eq!(parsed.files[2].old_mode, Some(0o100755));
}

#[test]
fn rendered_quoted_names_parse_back() {
    for name in [
        "tab\there",
        "new\nline",
        "quote\"d",
        "back\\slash",
        "bell\u{7}",
        "spa ce/é.txt",
    ] {
        let diff = render_diff(name, name, Some(b"a\n"), Some(b"b\n"));
        let parsed = parse(diff.as_bytes()).unwrap_or_else(|e| panic!("{e}\n{diff}"));
        assert_eq!(parsed.files[0].new_path.as_deref(), Some(name), "{diff}");
    }
}

#[test]
fn escaping_paths_are_refused() {
    for (old, new, shown) in [
        ("a/../x", "b/../x", "a/../x"),
        ("../x", "../x", "../x"),
        ("a/../../x", "b/../../x", "a/../../x"),
        ("/etc/passwd", "/etc/passwd", "/etc/passwd"),
        ("a//etc/passwd", "b//etc/passwd", "a//etc/passwd"),
        ("a/x", "b/sub/../../../x", "b/sub/../../../x"),
    ] {
        let error = parse(plain(old, new).as_bytes()).unwrap_err();
        assert_eq!(
            error,
            PatchError::PathEscapes { path: shown.into() },
            "{old} {new}"
        );
        assert_eq!(
            error.to_string(),
            format!("patch path escapes the workspace: {shown}")
        );
    }
    let git = "diff --git a/../../etc/passwd b/../../etc/passwd\nindex 1..2 100644\n--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n";
    assert_eq!(
        parse_error(git.as_bytes()),
        "patch path escapes the workspace: a/../../etc/passwd"
    );
    let rename = "diff --git a/x b/y\nrename from x\nrename to ../../y\n";
    assert_eq!(
        parse_error(rename.as_bytes()),
        "patch path escapes the workspace: ../../y"
    );
}

#[test]
fn invalid_paths_are_refused() {
    assert_eq!(
        parse_error(plain("a/./x", "b/./x").as_bytes()),
        "patch path is invalid (has a `.` component): a/./x"
    );
    assert_eq!(
        parse_error(plain("a/", "b/").as_bytes()),
        "patch path is invalid (empty): a/"
    );
    assert_eq!(
        parse_error(plain("\"a/nul\\000\"", "\"b/nul\\000\"").as_bytes()),
        "patch path is invalid (contains a NUL byte): a/nul\\0"
    );
    assert_eq!(
        parse_error(plain("a/x/", "b/x/").as_bytes()),
        "patch path is invalid (has an empty component): a/x/"
    );
    assert_eq!(
        parse_error(&[b"--- a/\xff\n+++ b/\xff\n@@ -1 +1 @@\n-a\n+b\n".as_slice()].concat()),
        "patch path is invalid (is not UTF-8): a/\u{fffd}"
    );
}

#[test]
fn binary_patches_are_refused() {
    let git_binary = "\
diff --git a/img.png b/img.png
index 1..2 100644
GIT binary patch
literal 3
KcmZ?wWB>pF0RR91
";
    assert_eq!(
        parse_error(git_binary.as_bytes()),
        "binary patches are not supported (file img.png)"
    );
    let git_differ = "diff --git a/img.png b/img.png\nindex 1..2 100644\nBinary files a/img.png and b/img.png differ\n";
    assert_eq!(
        parse_error(git_differ.as_bytes()),
        "binary patches are not supported (file img.png)"
    );
    let diff_r = "diff -ruN a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nBinary files a/data.bin and b/data.bin differ\n";
    assert_eq!(
        parse_error(diff_r.as_bytes()),
        "binary patches are not supported (file data.bin)"
    );
    let added = "Binary files /dev/null and b/new.bin differ\n";
    assert_eq!(
        parse_error(added.as_bytes()),
        "binary patches are not supported (file new.bin)"
    );
}

#[test]
fn malformed_patches_are_refused_with_their_line() {
    let cases: &[(&str, &str)] = &[
        ("", "the patch is empty"),
        ("just some words\nand more\n", "the patch is empty"),
        (
            "@@ -1 +1 @@\n-a\n+b\n",
            "patch line 1: hunk without a file header",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1 +1\n-a\n",
            "patch line 3: hunk header is malformed: @@ -1 +1",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -x,1 +1 @@\n-a\n+b\n",
            "patch line 3: hunk header is malformed: @@ -x,1 +1 @@",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -0,2 +1 @@\n-a\n",
            "patch line 3: hunk header is malformed: @@ -0,2 +1 @@",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n",
            "patch line 6: the hunk at line 3 ends early: its header promises 2 old and 2 new lines",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\ndiff --git a/g b/g\n",
            "patch line 6: the hunk at line 3 ends early: its header promises 2 old and 2 new lines",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n-b\n+c\n",
            "patch line 5: the hunk at line 3 has more lines than its header says",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n+c\n",
            "patch line 6: the hunk at line 3 has more lines than its header says",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n\\ No newline at end of file\n-b\n+c\n+d\n",
            "patch line 6: a line follows `\\ No newline at end of file`",
        ),
        (
            "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n\\ No newline at end of file\n+a\n",
            "patch line 4: `\\ No newline` marker before any line",
        ),
        (
            "diff --git a/f b/f\nold mode 10x644\n",
            "patch line 2: file mode is malformed: 10x644",
        ),
        (
            "diff --git a/f b/g h\nindex 1..2\n",
            "patch line 1: cannot tell which file the section is for",
        ),
        (
            "diff --git a/f b/f\n--- a/f\nnot a plus line\n",
            "patch line 3: expected a `+++` line, found: not a plus line",
        ),
        (
            "--- a/f\t1970-01-01 00:00:00 +0000\n+++ b/f\t1970-01-01 00:00:00 +0000\n",
            "patch line 1: both sides of the section are absent",
        ),
    ];
    for (patch, message) in cases {
        assert_eq!(parse_error(patch.as_bytes()), *message, "patch:\n{patch}");
    }
}

/// Valid patches to mutate.
fn sample_patches() -> Vec<Vec<u8>> {
    vec![
        render_diff("f.txt", "f.txt", Some(b"1\n2\n3\n4\n5\n6\n7\n8\n"), Some(b"1\n2\nthree\n4\n5\n6\n7\n8\nnine")).into_bytes(),
        render_diff("a b", "c/d", Some(b"x\r\ny\r\n"), Some(b"x\r\nz\r\n")).into_bytes(),
        render_diff("new", "new", None, Some(b"n\n")).into_bytes(),
        b"diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n--- a/x\n+++ b/y\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n".to_vec(),
        b"--- a/p\t1970-01-01 00:00:00 +0000\n+++ b/p\t2020-01-01 00:00:00 +0000\n@@ -0,0 +1,2 @@\n+1\n+2\n".to_vec(),
    ]
}

fn workspace() -> Tree {
    tree(&[
        ("f.txt", "1\n2\n3\n4\n5\n6\n7\n8\n"),
        ("a b", "x\r\ny\r\n"),
        ("x", "a\nb\n"),
    ])
}

/// Whatever `parse` and `plan` are given, they answer; they never panic.
fn parse_and_plan(bytes: &[u8]) -> bool {
    match parse(bytes) {
        Ok(patch) => match plan(&patch, &mut workspace()) {
            Ok(_) => true,
            Err(error) => {
                assert!(
                    !error.to_string().contains('\n'),
                    "multi-line message: {error}"
                );
                false
            }
        },
        Err(error) => {
            assert!(
                !error.to_string().contains('\n'),
                "multi-line message: {error}"
            );
            false
        }
    }
}

#[test]
fn samples_are_valid() {
    for patch in sample_patches() {
        assert!(
            parse_and_plan(&patch),
            "{}",
            String::from_utf8_lossy(&patch)
        );
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(1);
    let alphabet = b"@@ -+,0123\\\n\t\"/abdfgin";
    for _ in 0..400 {
        let len = rng.below(200);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.chance(70) {
                    alphabet[rng.below(alphabet.len())]
                } else {
                    rng.next_u64() as u8
                }
            })
            .collect();
        parse_and_plan(&bytes);
    }
}

#[test]
fn mutated_patches_never_panic() {
    let mut rng = Rng::new(2);
    let samples = sample_patches();
    let mut still_applied = 0;
    for _ in 0..600 {
        let mut bytes = samples[rng.below(samples.len())].clone();
        for _ in 0..rng.below(4) + 1 {
            let at = rng.below(bytes.len() + 1);
            match rng.below(4) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 if at < bytes.len() => {
                    let replacements = b"0123456789 +-@\\\n,";
                    bytes[at] = replacements[rng.below(replacements.len())];
                }
                2 => bytes.truncate(at),
                _ => bytes.insert(at, rng.next_u64() as u8),
            }
        }
        still_applied += usize::from(parse_and_plan(&bytes));
    }
    // Some mutations (in a hunk's added text, say) leave a valid patch.
    assert!(still_applied > 0);
}
