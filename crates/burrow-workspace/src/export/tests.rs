//! Tests of exports to directories and tar archives, on layers built by
//! hand (run as root: whiteouts are device nodes).

use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use rustix::fs::Mode;

use super::{ExportSummary, export};
use crate::error::WorkspaceError;
use crate::layers::LayerStack;
use crate::layers::testutil::{Layers, Outside, leaks, never_blocks, tempdir};

/// A workspace with a bit of everything: a seed, and an upper layer that
/// deletes, replaces, adds, links and makes a FIFO.
fn workspace() -> (Layers, LayerStack) {
    let layers = Layers::new();
    layers.file("seed", "README", b"seed readme\n");
    layers.file("seed", "gone", b"deleted\n");
    layers.file("seed", "old/x", b"hidden by the opaque dir\n");
    layers.file("seed", "src/lib.rs", b"// lib\n");
    layers.whiteout("upper", "gone");
    layers.opaque_dir("upper", "old");
    layers.file("upper", "old/y", b"new y\n");
    layers.file("upper", "src/main.rs", b"fn main() {}\n");
    layers.file("upper", "run.sh", b"#!/bin/sh\n");
    layers.mode("upper", "run.sh", 0o4755);
    layers.symlink("upper", "src/link", "lib.rs");
    layers.fifo("upper", "src/pipe");
    let stack = layers.stack(&["upper", "seed"]);
    (layers, stack)
}

/// Every file name in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn exports_the_merged_view_to_a_directory() {
    let (layers, stack) = workspace();
    // Read-only in the layer: still filled, then given its mode.
    layers.mode("upper", "old", 0o555);
    let out = tempdir();
    let target = out.path().join("export");
    let summary = never_blocks({
        let target = target.clone();
        move || export(&stack, Path::new(""), &target, None).unwrap()
    });
    assert_eq!(
        summary,
        ExportSummary {
            files: 5,
            directories: 2,
            symlinks: 1,
            bytes: 12 + 6 + 7 + 13 + 10,
            skipped: vec!["src/pipe".to_string()],
        }
    );
    assert_eq!(listing(&target), ["README", "old", "run.sh", "src"]);
    assert_eq!(listing(&target.join("old")), ["y"]);
    assert_eq!(listing(&target.join("src")), ["lib.rs", "link", "main.rs"]);
    assert_eq!(fs::read(target.join("old/y")).unwrap(), b"new y\n");
    assert_eq!(
        fs::read_link(target.join("src/link")).unwrap(),
        Path::new("lib.rs")
    );
    // No setuid bit comes out of a workspace.
    let mode = fs::metadata(target.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o755);
    let mode = fs::metadata(target.join("old"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o555);
    let seed_time = fs::metadata(layers.layer("seed").join("README"))
        .unwrap()
        .mtime();
    assert_eq!(
        fs::metadata(target.join("README")).unwrap().mtime(),
        seed_time
    );
    assert_eq!(listing(out.path()), ["export"]);
    // So that the temporary directories can be removed by a user other
    // than root.
    layers.mode("upper", "old", 0o755);
    fs::set_permissions(target.join("old"), fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn exports_one_file_or_one_symlink_as_itself() {
    let (_layers, stack) = workspace();
    let out = tempdir();
    let file = out.path().join("main.rs");
    let summary = export(&stack, Path::new("src/main.rs"), &file, None).unwrap();
    assert_eq!((summary.files, summary.bytes), (1, 13));
    assert_eq!(fs::read(&file).unwrap(), b"fn main() {}\n");
    let link = out.path().join("link");
    export(&stack, Path::new("src/link"), &link, None).unwrap();
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("lib.rs"));
    let dir = out.path().join("src-only");
    export(&stack, Path::new("src"), &dir, None).unwrap();
    assert_eq!(listing(&dir), ["lib.rs", "link", "main.rs"]);

    for missing in ["gone", "old/x", "src/link/x", "nothing"] {
        let error = export(&stack, Path::new(missing), &out.path().join("x"), None).unwrap_err();
        assert!(
            error.to_string().contains("does not exist"),
            "{missing}: {error}"
        );
    }
    assert!(export(&stack, Path::new("src/pipe"), &out.path().join("p"), None).is_err());
    assert!(export(&stack, Path::new("../x"), &out.path().join("p"), None).is_err());
}

#[test]
fn exports_a_tar_archive_that_reads_back() {
    let (layers, _) = workspace();
    let long = format!("{}/{}", "d".repeat(120), "f".repeat(120));
    layers.file("upper", &long, b"long name\n");
    let stack = layers.stack(&["upper", "seed"]);
    let out = tempdir();
    let target = out.path().join("ws.tar");
    let summary = export(&stack, Path::new(""), &target, None).unwrap();
    assert_eq!(summary.skipped, ["src/pipe"]);
    assert_eq!(summary.files, 6);

    let mut archive = tar::Archive::new(fs::File::open(&target).unwrap());
    let mut seen = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let header = entry.header();
        assert_eq!((header.uid().unwrap(), header.gid().unwrap()), (0, 0));
        let mode = header.mode().unwrap();
        let kind = header.entry_type();
        let link = entry
            .link_name()
            .unwrap()
            .map(|link| link.to_string_lossy().into_owned());
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        if path == "run.sh" {
            assert_eq!(mode, 0o755);
        }
        if path == "src/link" {
            assert!(kind.is_symlink());
            assert_eq!(link.as_deref(), Some("lib.rs"));
        }
        if path == long {
            assert_eq!(content, b"long name\n");
        }
        if path == "old/y" {
            assert_eq!(content, b"new y\n");
        }
        seen.push(path);
    }
    let dirs = "d".repeat(120);
    let expected = [
        "README",
        dirs.as_str(),
        long.as_str(),
        "old",
        "old/y",
        "run.sh",
        "src",
        "src/lib.rs",
        "src/link",
        "src/main.rs",
    ];
    assert_eq!(seen, expected);

    let single = out.path().join("one.tar");
    export(&stack, Path::new("src/main.rs"), &single, None).unwrap();
    let mut archive = tar::Archive::new(fs::File::open(&single).unwrap());
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|entry| {
            entry
                .unwrap()
                .path()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(names, ["main.rs"]);
}

#[test]
fn refuses_an_existing_output_and_a_missing_parent() {
    let (_layers, stack) = workspace();
    let out = tempdir();
    let existing = out.path().join("there");
    fs::write(&existing, b"keep me").unwrap();
    for target in [existing.clone(), out.path().join("there.tar")] {
        if target.extension().is_some() {
            fs::write(&target, b"keep me too").unwrap();
        }
        let error = export(&stack, Path::new(""), &target, None).unwrap_err();
        assert!(matches!(error, WorkspaceError::Invalid(_)), "{error}");
        assert_eq!(
            error.to_string(),
            format!("{} already exists; choose a new path", target.display())
        );
    }
    assert_eq!(fs::read(&existing).unwrap(), b"keep me");
    let error = export(&stack, Path::new(""), &out.path().join("no/such/dir"), None).unwrap_err();
    assert!(
        error.to_string().contains("create the directory first"),
        "{error}"
    );
    assert_eq!(listing(out.path()), ["there", "there.tar"]);

    // A leftover temporary of the same name is not this export's to remove.
    let leftover = out
        .path()
        .join(format!(".fresh.burrow-export-{}", std::process::id()));
    fs::write(&leftover, b"not ours").unwrap();
    let error = export(&stack, Path::new(""), &out.path().join("fresh"), None).unwrap_err();
    assert!(error.to_string().contains("remove it and retry"), "{error}");
    assert_eq!(fs::read(&leftover).unwrap(), b"not ours");
}

#[test]
fn a_failed_export_leaves_nothing_behind() {
    // A tree deeper than PATH_MAX, made one directory at a time: the export
    // reads it, but cannot open the deepest output directory by its path,
    // and fails half-way.
    let layers = Layers::new();
    layers.file("seed", "first", b"1\n");
    let mut dir = fs::File::open(layers.layer("seed")).unwrap();
    let name = "n".repeat(200);
    for _ in 0..25 {
        rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        let next = rustix::fs::openat(
            &dir,
            name.as_str(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        dir = fs::File::from(next);
    }
    let stack = layers.stack(&["seed"]);
    let out = tempdir();
    let error = export(&stack, Path::new(""), &out.path().join("export"), None).unwrap_err();
    assert!(error.to_string().contains("File name too long"), "{error}");
    assert!(listing(out.path()).is_empty(), "{:?}", listing(out.path()));
}

#[test]
fn planted_symlinks_are_exported_as_symlinks_and_never_followed() {
    let outside = Outside::new();
    let layers = Layers::new();
    layers.file("seed", "d/secret", b"the workspace's own\n");
    layers.symlink("upper", "link", outside.secret());
    layers.symlink("upper", "d", outside.dir.path());
    let stack = layers.stack(&["upper", "seed"]);
    let out = tempdir();

    let target = out.path().join("export");
    let summary = export(&stack, Path::new(""), &target, None).unwrap();
    assert_eq!((summary.files, summary.symlinks), (0, 2));
    assert_eq!(
        fs::read_link(target.join("link")).unwrap(),
        outside.secret()
    );
    assert_eq!(fs::read_link(target.join("d")).unwrap(), outside.dir.path());

    let archive = out.path().join("export.tar");
    export(&stack, Path::new(""), &archive, None).unwrap();
    assert!(!leaks(&fs::read(&archive).unwrap()));

    let single = out.path().join("one");
    export(&stack, Path::new("link"), &single, None).unwrap();
    assert!(
        fs::symlink_metadata(&single)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let error = export(&stack, Path::new("d/secret"), &out.path().join("two"), None).unwrap_err();
    assert!(error.to_string().contains("does not exist"), "{error}");
    // The secret is still only where it was.
    assert_eq!(
        fs::read(outside.secret()).unwrap(),
        crate::layers::testutil::SECRET
    );
    assert_eq!(listing(out.path()), ["export", "export.tar", "one"]);
}
