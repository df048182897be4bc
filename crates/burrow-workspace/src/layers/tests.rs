//! Tests of the merged view and the single-layer walker, on layers built by
//! hand (run as root: whiteouts are device nodes).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::testutil::{Layers, Outside, leaks, listings, never_blocks};
use super::{LayerEntryKind, LayerStack, Node, NodeKind};
use crate::error::WorkspaceError;

fn names(listing: &std::collections::BTreeMap<std::ffi::OsString, Node>) -> Vec<String> {
    listing
        .keys()
        .map(|name| name.to_string_lossy().into_owned())
        .collect()
}

fn kind(stack: &LayerStack, path: &str) -> Option<NodeKind> {
    stack.lookup(Path::new(path)).unwrap().map(|node| node.kind)
}

#[test]
fn whiteouts_delete_and_non_directories_cover_lower_directories() {
    let layers = Layers::new();
    layers.file("seed", "a/x", b"x");
    layers.file("seed", "a/y", b"y");
    layers.file("seed", "b/z", b"z");
    layers.whiteout("upper", "a/x");
    layers.file("upper", "b", b"now a file");
    let stack = layers.stack(&["upper", "seed"]);

    assert_eq!(kind(&stack, "a/x"), None);
    let y = stack.lookup(Path::new("a/y")).unwrap().unwrap();
    assert_eq!(
        (y.kind, y.layer, y.size, y.mode),
        (NodeKind::File, 1, 1, 0o644)
    );
    assert_eq!(kind(&stack, "b"), Some(NodeKind::File));
    assert_eq!(kind(&stack, "b/z"), None);
    assert_eq!(kind(&stack, "a"), Some(NodeKind::Dir));
    assert_eq!(kind(&stack, ""), Some(NodeKind::Dir));
    assert_eq!(kind(&stack, "missing"), None);
    assert_eq!(names(&stack.read_dir(Path::new("a")).unwrap()), ["y"]);
    assert_eq!(names(&stack.read_dir(Path::new("")).unwrap()), ["a", "b"]);
}

#[test]
fn a_whiteout_of_an_ancestor_hides_the_whole_subtree() {
    let layers = Layers::new();
    layers.file("seed", "d/e/f", b"f");
    layers.whiteout("upper", "d");
    let stack = layers.stack(&["upper", "seed"]);
    assert_eq!(kind(&stack, "d"), None);
    assert_eq!(kind(&stack, "d/e/f"), None);
    assert!(stack.read_dir(Path::new("d")).is_err());
    assert!(stack.walk(Path::new("")).unwrap().is_empty());
}

#[test]
fn an_opaque_directory_hides_what_lower_layers_have_beneath_it() {
    let layers = Layers::new();
    layers.file("seed", "d/old", b"old");
    layers.file("seed", "d/sub/deep", b"deep");
    layers.opaque_dir("upper", "d");
    layers.file("upper", "d/new", b"new");
    let stack = layers.stack(&["upper", "seed"]);

    assert_eq!(kind(&stack, "d/old"), None);
    assert_eq!(kind(&stack, "d/sub/deep"), None);
    assert_eq!(kind(&stack, "d/new"), Some(NodeKind::File));
    assert_eq!(names(&stack.read_dir(Path::new("d")).unwrap()), ["new"]);
}

#[test]
fn directories_merge_across_layers_and_the_highest_entry_wins() {
    let layers = Layers::new();
    for name in ["1", "2", "3"] {
        layers.file("seed", &format!("a/{name}"), b"seed");
    }
    layers.file("seed", "a/sub/s", b"s");
    layers.whiteout("snap", "a/2");
    layers.file("snap", "a/4", b"snap");
    layers.file("upper", "a/1", b"changed");
    layers.file("upper", "a/5", b"upper");
    layers.file("upper", "a/sub/u", b"u");
    // A layer without the directory at all does not interrupt the merge.
    layers.file("empty", "elsewhere", b"");
    let stack = layers.stack(&["upper", "empty", "snap", "seed"]);

    let listing = stack.read_dir(Path::new("a")).unwrap();
    assert_eq!(names(&listing), ["1", "3", "4", "5", "sub"]);
    let layer_of = |name: &str| listing.get(OsStr::new(name)).unwrap().layer;
    assert_eq!(["1", "3", "4", "5", "sub"].map(layer_of), [0, 3, 2, 0, 0]);
    assert_eq!(
        names(&stack.read_dir(Path::new("a/sub")).unwrap()),
        ["s", "u"]
    );
    let node = stack.lookup(Path::new("a/1")).unwrap().unwrap();
    assert_eq!(
        stack.read_file(Path::new("a/1"), &node, 100).unwrap(),
        b"changed"
    );

    let walked: Vec<PathBuf> = stack
        .walk(Path::new(""))
        .unwrap()
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let expected = [
        "a",
        "a/1",
        "a/3",
        "a/4",
        "a/5",
        "a/sub",
        "a/sub/s",
        "a/sub/u",
        "elsewhere",
    ];
    assert_eq!(walked, expected.map(PathBuf::from));
}

#[test]
fn a_lower_non_directory_stops_the_merge_of_a_directory_above_it() {
    let layers = Layers::new();
    layers.file("seed", "d/below", b"");
    layers.file("mid", "d", b"a file in between");
    layers.file("upper", "d/above", b"");
    let stack = layers.stack(&["upper", "mid", "seed"]);
    assert_eq!(names(&stack.read_dir(Path::new("d")).unwrap()), ["above"]);
    assert_eq!(kind(&stack, "d/below"), None);
}

#[test]
fn read_file_refuses_more_than_the_limit() {
    let layers = Layers::new();
    layers.file("seed", "big", &[b'x'; 100]);
    let stack = layers.stack(&["seed"]);
    let node = stack.lookup(Path::new("big")).unwrap().unwrap();
    assert_eq!(
        stack.read_file(Path::new("big"), &node, 100).unwrap().len(),
        100
    );
    let error = stack.read_file(Path::new("big"), &node, 99).unwrap_err();
    assert!(matches!(error, WorkspaceError::Invalid(_)), "{error}");
    assert!(error.to_string().contains("big is 100 bytes"), "{error}");
}

#[test]
fn paths_leaving_the_workspace_are_refused() {
    let layers = Layers::new();
    let stack = layers.stack(&["seed"]);
    for path in ["../x", "/etc/passwd", "a/../../x"] {
        assert!(
            matches!(
                stack.lookup(Path::new(path)),
                Err(WorkspaceError::Invalid(_))
            ),
            "{path}"
        );
    }
}

#[test]
fn names_that_are_not_utf8_are_kept_byte_for_byte() {
    let layers = Layers::new();
    let name = OsStr::from_bytes(b"caf\xe9");
    std::fs::write(layers.layer("seed").join(name), b"latin-1").unwrap();
    let stack = layers.stack(&["seed"]);
    let listing = stack.read_dir(Path::new("")).unwrap();
    assert!(listing.contains_key(name));
    assert_eq!(kind(&stack, "caf\u{fffd}"), None);
    assert!(stack.lookup(Path::new(name)).unwrap().is_some());
}

#[test]
fn symlinks_are_reported_and_never_followed() {
    let outside = Outside::new();
    let layers = Layers::new();
    layers.file("seed", "d/secret", b"the workspace's own file\n");
    layers.symlink("upper", "link", outside.secret());
    layers.symlink("upper", "d", outside.dir.path());
    let stack = layers.stack(&["upper", "seed"]);

    let link = stack.lookup(Path::new("link")).unwrap().unwrap();
    assert_eq!(
        link.kind,
        NodeKind::Symlink(outside.secret().into_os_string())
    );
    assert!(stack.read_file(Path::new("link"), &link, 1 << 20).is_err());
    // Even told it is a file, the reader refuses the link.
    let forged = Node {
        kind: NodeKind::File,
        ..link
    };
    assert!(
        stack
            .read_file(Path::new("link"), &forged, 1 << 20)
            .is_err()
    );
    assert!(stack.open_file(Path::new("d/secret"), &forged).is_err());

    // The symlinked directory covers the seed's directory and is not entered.
    assert!(matches!(kind(&stack, "d"), Some(NodeKind::Symlink(_))));
    assert_eq!(kind(&stack, "d/secret"), None);
    assert!(stack.read_dir(Path::new("d")).is_err());
    let walked = stack.walk(Path::new("")).unwrap();
    assert_eq!(walked.len(), 2, "{walked:?}");
    let entries = stack.walk_layer(0).unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(!leaks(format!("{walked:?}{entries:?}").as_bytes()));
}

#[test]
fn a_fifo_is_special_and_never_opened() {
    let layers = Layers::new();
    layers.fifo("upper", "pipe");
    let stack = layers.stack(&["upper"]);
    let node = stack.lookup(Path::new("pipe")).unwrap().unwrap();
    assert_eq!(node.kind, NodeKind::Special);
    let forged = Node {
        kind: NodeKind::File,
        ..node
    };
    let read = never_blocks(move || stack.read_file(Path::new("pipe"), &forged, 100).is_err());
    assert!(read, "a FIFO was read as a file");
}

#[test]
fn walk_layer_lists_one_layer_with_its_whiteouts_and_opaque_directories() {
    let layers = Layers::new();
    layers.file("seed", "kept", b"");
    layers.whiteout("upper", "gone");
    layers.opaque_dir("upper", "fresh");
    layers.file("upper", "fresh/f", b"12345");
    layers.dir("upper", "merged");
    layers.symlink("upper", "merged/l", "../kept");
    let stack = layers.stack(&["upper", "seed"]);

    let entries: Vec<(String, LayerEntryKind)> = stack
        .walk_layer(0)
        .unwrap()
        .into_iter()
        .map(|(path, entry)| (path.to_string_lossy().into_owned(), entry.kind))
        .collect();
    assert_eq!(
        entries,
        [
            ("fresh".to_string(), LayerEntryKind::Dir { opaque: true }),
            ("fresh/f".to_string(), LayerEntryKind::File),
            ("gone".to_string(), LayerEntryKind::Whiteout),
            ("merged".to_string(), LayerEntryKind::Dir { opaque: false }),
            (
                "merged/l".to_string(),
                LayerEntryKind::Symlink("../kept".into())
            ),
        ]
    );
    assert!(stack.walk_layer(2).is_err());
}

#[test]
fn lookups_do_not_walk_a_large_seed() {
    let layers = Layers::new();
    for dir in 0..100 {
        for file in 0..100 {
            layers.file("seed", &format!("d{dir}/f{file}"), b"seed");
        }
    }
    for n in 0..10 {
        layers.file("upper", &format!("d{n}/f{n}"), b"changed");
    }
    let stack = layers.stack(&["upper", "seed"]);
    let ((), listed) = listings(|| {
        for n in 0..10 {
            let path = format!("d{n}/f{n}");
            assert_eq!(stack.lookup(Path::new(&path)).unwrap().unwrap().layer, 0);
        }
    });
    // A lookup follows its path name by name: no directory is listed (the time it takes is
    // the benchmarks' business).
    assert_eq!(listed, 0);
    assert!(stack.lookup(Path::new("d99/f99")).unwrap().is_some());
    assert!(stack.lookup(Path::new("d99/f100")).unwrap().is_none());
}

#[test]
fn a_missing_layer_directory_is_an_error() {
    let layers = Layers::new();
    let missing = layers.dir.path().join("nope");
    assert!(LayerStack::open(&[missing]).is_err());
    assert!(LayerStack::open(&[]).unwrap().is_empty());
}
