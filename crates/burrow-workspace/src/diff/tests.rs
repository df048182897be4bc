//! Tests of change detection and rendering on layers built by hand (run as
//! root: whiteouts are device nodes).

use std::collections::BTreeMap;
use std::path::Path;

use burrow_patch::Change;

use super::{ChangeKind, FileChange, Rendered, Scope, changes, render, stat_line};
use crate::layers::testutil::{Layers, Outside, leaks, listings, never_blocks};
use crate::layers::{LayerStack, NodeKind};

fn summary(changes: &[FileChange]) -> Vec<(String, ChangeKind)> {
    changes
        .iter()
        .map(|change| (change.path.to_string_lossy().into_owned(), change.kind))
        .collect()
}

fn expect(list: &[(&str, ChangeKind)]) -> Vec<(String, ChangeKind)> {
    list.iter()
        .map(|(path, kind)| ((*path).to_string(), *kind))
        .collect()
}

/// The upper layer's changes over the seed.
fn upper_changes(layers: &Layers) -> (LayerStack, LayerStack, Vec<FileChange>) {
    let current = layers.stack(&["upper", "seed"]);
    let baseline = layers.stack(&["seed"]);
    let found = changes(&current, &baseline, Scope::TopLayers(1)).unwrap();
    (current, baseline, found)
}

/// Every regular file of a merged view, by path.
fn contents(stack: &LayerStack) -> BTreeMap<String, Vec<u8>> {
    stack
        .walk(Path::new(""))
        .unwrap()
        .into_iter()
        .filter(|(_, node)| node.kind == NodeKind::File)
        .map(|(path, node)| {
            let content = stack.read_file(&path, &node, 1 << 20).unwrap();
            (path.to_string_lossy().into_owned(), content)
        })
        .collect()
}

fn patch_of(rendered: &[Rendered]) -> String {
    rendered.iter().map(|r| r.patch.as_str()).collect()
}

#[test]
fn added_modified_deleted_and_mode_changes_but_not_identical_rewrites() {
    let layers = Layers::new();
    for name in ["keep", "mod", "del", "same", "script.sh"] {
        layers.file("seed", name, format!("{name}\n").as_bytes());
    }
    layers.file("upper", "mod", b"modified\n");
    layers.whiteout("upper", "del");
    // Copied up and rewritten with the same bytes: not a change.
    layers.file("upper", "same", b"same\n");
    layers.file("upper", "new", b"new\n");
    layers.file("upper", "script.sh", b"script.sh\n");
    layers.mode("upper", "script.sh", 0o755);
    let (_, _, found) = upper_changes(&layers);
    assert_eq!(
        summary(&found),
        expect(&[
            ("del", ChangeKind::Deleted),
            ("mod", ChangeKind::Modified),
            ("new", ChangeKind::Added),
            ("script.sh", ChangeKind::Modified),
        ])
    );
    let script = found
        .iter()
        .find(|c| c.path == Path::new("script.sh"))
        .unwrap();
    assert_eq!(script.old.as_ref().unwrap().mode, 0o644);
    assert_eq!(script.new.as_ref().unwrap().mode, 0o755);
}

#[test]
fn a_deleted_directory_deletes_every_file_beneath_it() {
    let layers = Layers::new();
    layers.file("seed", "d/a", b"a");
    layers.file("seed", "d/e/b", b"b");
    layers.file("seed", "other", b"o");
    layers.whiteout("upper", "d");
    let (_, _, found) = upper_changes(&layers);
    assert_eq!(
        summary(&found),
        expect(&[("d/a", ChangeKind::Deleted), ("d/e/b", ChangeKind::Deleted)])
    );
}

#[test]
fn a_directory_recreated_opaque_with_one_file() {
    let layers = Layers::new();
    layers.file("seed", "d/a", b"a\n");
    layers.file("seed", "d/b", b"b\n");
    layers.file("seed", "d/sub/c", b"c\n");
    layers.opaque_dir("upper", "d");
    layers.file("upper", "d/a", b"a\n");
    layers.file("upper", "d/new", b"new\n");
    let (_, _, found) = upper_changes(&layers);
    assert_eq!(
        summary(&found),
        expect(&[
            ("d/b", ChangeKind::Deleted),
            ("d/new", ChangeKind::Added),
            ("d/sub/c", ChangeKind::Deleted),
        ])
    );
}

#[test]
fn a_directory_replaced_by_a_file_and_a_file_by_a_directory() {
    let layers = Layers::new();
    layers.file("seed", "x/1", b"1");
    layers.file("seed", "x/2", b"2");
    layers.file("seed", "y", b"y");
    layers.file("upper", "x", b"x is a file now");
    layers.opaque_dir("upper", "y");
    layers.file("upper", "y/z", b"z");
    let (_, _, found) = upper_changes(&layers);
    assert_eq!(
        summary(&found),
        expect(&[
            ("x", ChangeKind::Added),
            ("x/1", ChangeKind::Deleted),
            ("x/2", ChangeKind::Deleted),
            ("y", ChangeKind::Deleted),
            ("y/z", ChangeKind::Added),
        ])
    );
}

#[test]
fn changes_since_the_seed_span_snapshot_layers() {
    let layers = Layers::new();
    layers.file("seed", "a", b"seed");
    layers.file("seed", "b", b"seed");
    layers.file("seed", "c", b"seed");
    layers.file("snap", "a", b"snap");
    layers.whiteout("snap", "b");
    layers.file("snap", "c", b"changed then");
    layers.file("upper", "c", b"seed");
    layers.file("upper", "b", b"back");
    let current = layers.stack(&["upper", "snap", "seed"]);
    let seed = layers.stack(&["seed"]);
    let since_seed = changes(&current, &seed, Scope::TopLayers(2)).unwrap();
    assert_eq!(
        summary(&since_seed),
        expect(&[("a", ChangeKind::Modified), ("b", ChangeKind::Modified)])
    );
    let snapshot = layers.stack(&["snap", "seed"]);
    let since_snapshot = changes(&current, &snapshot, Scope::TopLayers(1)).unwrap();
    assert_eq!(
        summary(&since_snapshot),
        expect(&[("b", ChangeKind::Added), ("c", ChangeKind::Modified)])
    );
    assert!(changes(&current, &seed, Scope::TopLayers(4)).is_err());
}

#[test]
fn copy_mode_compares_whole_trees() {
    let layers = Layers::new();
    layers.file("seed", "same", b"same");
    layers.file("seed", "mod", b"old");
    layers.file("seed", "gone/deep", b"x");
    layers.symlink("seed", "link", "same");
    layers.file("tree", "same", b"same");
    layers.file("tree", "mod", b"new");
    layers.file("tree", "added/deep", b"y");
    layers.symlink("tree", "link", "mod");
    let current = layers.stack(&["tree"]);
    let baseline = layers.stack(&["seed"]);
    let found = changes(&current, &baseline, Scope::Everything).unwrap();
    assert_eq!(
        summary(&found),
        expect(&[
            ("added/deep", ChangeKind::Added),
            ("gone/deep", ChangeKind::Deleted),
            ("link", ChangeKind::Modified),
            ("mod", ChangeKind::Modified),
        ])
    );
}

#[test]
fn large_files_are_compared_in_chunks() {
    let layers = Layers::new();
    let big = vec![b'x'; 200_000];
    let mut changed = big.clone();
    if let Some(last) = changed.last_mut() {
        *last = b'y';
    }
    layers.file("seed", "same", &big);
    layers.file("seed", "tail", &big);
    layers.file("upper", "same", &big);
    layers.file("upper", "tail", &changed);
    let (_, _, found) = upper_changes(&layers);
    assert_eq!(summary(&found), expect(&[("tail", ChangeKind::Modified)]));
}

#[test]
fn rendered_patch_parses_and_applies_back_to_the_current_view() {
    let layers = Layers::new();
    layers.file(
        "seed",
        "src/main.rs",
        b"fn main() {\n    println!(\"hi\");\n}\n",
    );
    layers.file("seed", "deleted.txt", b"bye\n");
    layers.file("seed", "run.sh", b"#!/bin/sh\necho run\n");
    layers.file("seed", "docs/a b.md", b"# title\n");
    layers.file(
        "upper",
        "src/main.rs",
        b"fn main() {\n    println!(\"hello\");\n}\n",
    );
    layers.whiteout("upper", "deleted.txt");
    layers.file("upper", "run.sh", b"#!/bin/sh\necho run\n");
    layers.mode("upper", "run.sh", 0o755);
    layers.file("upper", "new/file.txt", b"one\ntwo");
    layers.file("upper", "docs/a b.md", b"# title\n\nmore\n");
    layers.file("upper", "empty", b"");
    let (current, baseline, found) = upper_changes(&layers);
    let rendered = render(&current, &baseline, &found).unwrap();
    let patch = patch_of(&rendered);

    assert!(patch.contains("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"));
    assert!(patch.contains("diff --git a/empty b/empty\nnew file mode 100644\n"));
    let parsed = burrow_patch::parse(patch.as_bytes()).unwrap();
    assert_eq!(parsed.files.len(), 6);
    let mut workspace = contents(&baseline);
    let planned = burrow_patch::plan(&parsed, &mut workspace.clone()).unwrap();
    for change in planned {
        match change {
            Change::Write {
                path,
                content,
                mode,
            } => {
                if path == "run.sh" {
                    assert_eq!(mode, Some(0o100_755));
                }
                workspace.insert(path, content);
            }
            Change::Delete { path } => {
                workspace.remove(&path);
            }
        }
    }
    assert_eq!(workspace, contents(&current));

    let main = rendered.iter().find(|r| r.path == "src/main.rs").unwrap();
    assert_eq!(
        (main.insertions, main.deletions, main.binary),
        (1, 1, false)
    );
    assert_eq!(stat_line(main), " src/main.rs | 2 +-");
    let run = rendered.iter().find(|r| r.path == "run.sh").unwrap();
    assert_eq!(stat_line(run), " run.sh | 0");
}

#[test]
fn symlinks_binary_and_oversized_files_render_as_git_does() {
    let layers = Layers::new();
    layers.symlink("seed", "link", "old-target");
    layers.file("seed", "bin", b"\0\x01\x02");
    layers.file("seed", "private", b"key\n");
    layers.symlink("upper", "link", "new-target");
    layers.symlink("upper", "added-link", "somewhere");
    layers.file("upper", "bin", b"\0\x01\x03");
    layers.file("upper", "huge", &vec![b'a'; (8 << 20) + 1]);
    layers.file("upper", "private", b"key\n");
    layers.mode("upper", "private", 0o600);
    let (current, baseline, found) = upper_changes(&layers);
    let rendered = render(&current, &baseline, &found).unwrap();
    let by_path = |path: &str| rendered.iter().find(|r| r.path == path).unwrap();

    assert_eq!(
        by_path("link").patch,
        "diff --git a/link b/link\n--- a/link\n+++ b/link\n@@ -1 +1 @@\n-old-target\n\
         \\ No newline at end of file\n+new-target\n\\ No newline at end of file\n"
    );
    assert!(
        by_path("added-link")
            .patch
            .starts_with("diff --git a/added-link b/added-link\nnew file mode 120000\n")
    );
    let bin = by_path("bin");
    assert!(bin.binary);
    assert!(
        bin.patch.ends_with("Binary files a/bin and b/bin differ\n"),
        "{}",
        bin.patch
    );
    assert_eq!(stat_line(bin), " bin | Bin");
    let huge = by_path("huge");
    assert!(huge.binary);
    assert_eq!(
        huge.patch,
        "diff --git a/huge b/huge\nnew file mode 100644\nBinary files /dev/null and b/huge \
         (too large to show: 8388609 bytes) differ\n"
    );
    // Permissions git's modes cannot tell apart get a note.
    assert_eq!(
        by_path("private").patch,
        "Permissions of private changed from 0644 to 0600 (git records only the executable bit)\n"
    );
}

#[test]
fn a_file_becoming_a_symlink_is_a_deletion_and_an_addition() {
    let layers = Layers::new();
    layers.file("seed", "f", b"text\n");
    layers.symlink("upper", "f", "elsewhere");
    let (current, baseline, found) = upper_changes(&layers);
    assert_eq!(summary(&found), expect(&[("f", ChangeKind::Modified)]));
    let rendered = render(&current, &baseline, &found).unwrap();
    let patch = &rendered[0].patch;
    assert!(
        patch.starts_with("diff --git a/f b/f\ndeleted file mode 100644\n"),
        "{patch}"
    );
    assert!(
        patch.contains("diff --git a/f b/f\nnew file mode 120000\n"),
        "{patch}"
    );
}

#[test]
fn planted_symlinks_are_never_followed() {
    let outside = Outside::new();
    let layers = Layers::new();
    layers.file("seed", "link", b"was a file\n");
    layers.file("seed", "d/secret", b"the workspace's own\n");
    layers.symlink("upper", "link", outside.secret());
    layers.symlink("upper", "d", outside.dir.path());
    layers.symlink("upper", "new-link", outside.secret());
    let (current, baseline, found) = upper_changes(&layers);
    assert_eq!(
        summary(&found),
        expect(&[
            ("d", ChangeKind::Added),
            ("d/secret", ChangeKind::Deleted),
            ("link", ChangeKind::Modified),
            ("new-link", ChangeKind::Added),
        ])
    );
    for change in &found {
        if let Some(new) = &change.new {
            assert!(matches!(new.kind, NodeKind::Symlink(_)), "{change:?}");
        }
    }
    let rendered = render(&current, &baseline, &found).unwrap();
    let patch = patch_of(&rendered);
    assert!(!leaks(patch.as_bytes()), "{patch}");
    assert!(patch.contains("+the workspace's own") || patch.contains("-the workspace's own"));
}

#[test]
fn a_fifo_does_not_block_the_diff() {
    let layers = Layers::new();
    layers.fifo("seed", "old-pipe");
    layers.fifo("upper", "pipe");
    layers.fifo("upper", "old-pipe");
    layers.mode("upper", "old-pipe", 0o600);
    let (found, rendered) = never_blocks(move || {
        let (current, baseline, found) = upper_changes(&layers);
        let rendered = render(&current, &baseline, &found).unwrap();
        (found, rendered)
    });
    assert_eq!(
        summary(&found),
        expect(&[
            ("old-pipe", ChangeKind::Modified),
            ("pipe", ChangeKind::Added)
        ])
    );
    assert_eq!(
        rendered[1].patch,
        "Special file pipe added (a FIFO, socket or device; not shown)\n"
    );
}

#[test]
fn few_changes_in_a_large_seed_are_found_without_walking_it() {
    let layers = Layers::new();
    for dir in 0..100 {
        for file in 0..100 {
            layers.file("seed", &format!("d{dir}/f{file}"), b"seed\n");
        }
    }
    for n in 0..10 {
        layers.file("upper", &format!("d{n}/f{n}"), b"changed\n");
    }
    let current = layers.stack(&["upper", "seed"]);
    let baseline = layers.stack(&["seed"]);
    let ((found, rendered), listed) = listings(|| {
        let found = changes(&current, &baseline, Scope::TopLayers(1)).unwrap();
        let rendered = render(&current, &baseline, &found).unwrap();
        (found, rendered)
    });
    assert_eq!(found.len(), 10);
    assert_eq!(rendered.len(), 10);
    // Only the upper layer is walked (its root and ten directories); the seed's 101
    // directories are not (the time it takes is the benchmarks' business).
    assert_eq!(listed, 11);
}
