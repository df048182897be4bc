//! `render_diff` then `parse` then `plan` must give back exactly the new
//! content, for many generated (old, new) pairs.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns unwrap too

mod common;

use burrow_patch::{Change, diff_stat, parse, plan, render_diff};
use common::{Rng, Tree, patched};

/// Few distinct lines, so hunks' context repeats across the file and the
/// position search has wrong candidates to skip.
const WORDS: &[&str] = &[
    "fn main() {",
    "}",
    "",
    "    let x = 1;",
    "// note",
    "return;",
    "a",
    "b",
];

struct Style {
    crlf: bool,
    final_newline: bool,
}

fn random_lines(rng: &mut Rng, max: usize) -> Vec<String> {
    (0..rng.below(max + 1))
        .map(|_| WORDS[rng.below(WORDS.len())].to_string())
        .collect()
}

fn render_file(lines: &[String], style: &Style) -> Vec<u8> {
    let ending = if style.crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(ending);
    if style.final_newline && !lines.is_empty() {
        text.push_str(ending);
    }
    text.into_bytes()
}

fn random_style(rng: &mut Rng) -> Style {
    Style {
        crlf: rng.chance(20),
        final_newline: !rng.chance(25),
    }
}

fn edit(rng: &mut Rng, lines: &[String]) -> Vec<String> {
    let mut edited = lines.to_vec();
    if rng.chance(5) {
        return Vec::new();
    }
    for _ in 0..rng.below(6) {
        let at = rng.below(edited.len() + 1);
        match rng.below(3) {
            0 => edited.insert(at, WORDS[rng.below(WORDS.len())].to_string()),
            1 if at < edited.len() => {
                edited.remove(at);
            }
            _ if at < edited.len() => edited[at] = format!("changed {}", rng.below(1000)),
            _ => {}
        }
    }
    edited
}

/// Checks one pair and returns the diff it rendered.
fn assert_round_trip(old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let diff = render_diff("dir/file.txt", "dir/file.txt", old, new);
    if old == new {
        assert_eq!(diff, "");
        return diff;
    }
    let before: Tree = old
        .map(|content| ("dir/file.txt".to_string(), content.to_vec()))
        .into_iter()
        .collect();
    let after: Tree = new
        .map(|content| ("dir/file.txt".to_string(), content.to_vec()))
        .into_iter()
        .collect();
    let result = patched(&before, diff.as_bytes())
        .unwrap_or_else(|error| panic!("{error}\nold: {old:?}\nnew: {new:?}\ndiff:\n{diff}"));
    assert_eq!(result, after, "diff:\n{diff}");

    assert_headers_consistent(&diff);

    let stat = diff_stat(old, new);
    let added = diff
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++ "))
        .count();
    let removed = diff
        .lines()
        .filter(|l| l.starts_with('-') && !l.starts_with("--- "))
        .count();
    assert_eq!(
        (stat.added, stat.removed),
        (added, removed),
        "diff:\n{diff}"
    );
    diff
}

/// Each hunk's new start must be its old start moved by the lines the hunks
/// before it added or removed; `plan` does not read new starts, so a wrong
/// one would go unnoticed otherwise.
fn assert_headers_consistent(diff: &str) {
    let patch = parse(diff.as_bytes()).unwrap();
    for file in &patch.files {
        let mut delta = 0isize;
        for hunk in &file.hunks {
            let old_position = hunk.old_start - usize::from(hunk.old_lines > 0);
            let new_position = hunk.new_start - usize::from(hunk.new_lines > 0);
            assert_eq!(
                new_position as isize,
                old_position as isize + delta,
                "diff:\n{diff}"
            );
            delta += hunk.new_lines as isize - hunk.old_lines as isize;
        }
    }
}

#[test]
fn random_edits_round_trip() {
    let mut rng = Rng::new(7);
    let mut saw_offset_hunks = false;
    for _ in 0..600 {
        let old_lines = random_lines(&mut rng, 40);
        let old_style = random_style(&mut rng);
        // Mostly keep the line-ending style; sometimes flip the final newline.
        let new_style = Style {
            crlf: old_style.crlf,
            final_newline: if rng.chance(15) {
                !old_style.final_newline
            } else {
                old_style.final_newline
            },
        };
        let new_lines = edit(&mut rng, &old_lines);
        let old = render_file(&old_lines, &old_style);
        let new = render_file(&new_lines, &new_style);
        let diff = assert_round_trip(Some(&old), Some(&new));
        saw_offset_hunks |= diff.matches("\n@@ ").count() > 1;
    }
    assert!(
        saw_offset_hunks,
        "the generator should produce multi-hunk diffs"
    );
}

#[test]
fn edge_cases_round_trip() {
    let cases: &[(&[u8], &[u8])] = &[
        (b"", b"one\n"),
        (b"one\n", b""),
        (b"", b"no newline"),
        (b"no newline", b""),
        (b"same", b"same\n"),
        (b"same\n", b"same"),
        (b"a\nb\nc", b"a\nb\nc\nd"),
        (b"a\nb\nc", b"a\nB\nc"),
        (b"a\r\nb\r\n", b"a\r\nc\r\n"),
        (b"a\r\nb", b"a\r\nb\r\n"),
        (b"\n\n\n", b"\n\n"),
        (b"x\n", b"\n"),
    ];
    for (old, new) in cases {
        assert_round_trip(Some(old), Some(new));
    }
}

#[test]
fn added_and_deleted_files_round_trip() {
    for content in [&b""[..], b"x\n", b"no newline", b"a\r\nb\r\n"] {
        assert_round_trip(None, Some(content));
        assert_round_trip(Some(content), None);
    }
    // git shows an empty new file with headers only.
    assert_eq!(
        render_diff("e", "e", None, Some(b"")),
        "diff --git a/e b/e\nnew file mode 100644\n"
    );
}

#[test]
fn rename_round_trips() {
    let old = b"1\n2\n3\n4\n5\n".to_vec();
    let new = b"1\n2\nthree\n4\n5\n".to_vec();
    for content in [&old, &new] {
        let diff = render_diff("old name.txt", "sub/new.txt", Some(&old), Some(content));
        let patch = parse(diff.as_bytes()).unwrap();
        let mut source = Tree::from([("old name.txt".to_string(), old.clone())]);
        let changes = plan(&patch, &mut source).unwrap();
        assert_eq!(
            changes,
            vec![
                Change::Delete {
                    path: "old name.txt".into()
                },
                Change::Write {
                    path: "sub/new.txt".into(),
                    content: content.clone(),
                    mode: None
                },
            ],
            "diff:\n{diff}"
        );
    }
}

#[test]
fn many_files_in_one_patch_round_trip() {
    let mut rng = Rng::new(99);
    for _ in 0..40 {
        let mut before = Tree::new();
        let mut after = Tree::new();
        let mut patch = String::new();
        for index in 0..rng.below(6) + 1 {
            let path = format!("src/file {index}.rs");
            let style = random_style(&mut rng);
            let old_lines = random_lines(&mut rng, 20);
            let old = (!rng.chance(15)).then(|| render_file(&old_lines, &style));
            let new = (!rng.chance(15)).then(|| render_file(&edit(&mut rng, &old_lines), &style));
            patch.push_str(&render_diff(&path, &path, old.as_deref(), new.as_deref()));
            before.extend(old.map(|content| (path.clone(), content)));
            after.extend(new.map(|content| (path.clone(), content)));
        }
        if patch.is_empty() {
            continue;
        }
        assert_eq!(
            patched(&before, patch.as_bytes()).unwrap(),
            after,
            "patch:\n{patch}"
        );
    }
}
