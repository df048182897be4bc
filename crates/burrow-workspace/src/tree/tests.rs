//! Tests on trees with locked directories, links to outside, FIFOs and mounts in them.

use super::*;
use crate::archive::{ImportLimits, Source};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::CWD;

use super::remove::KEEP_OPEN;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

fn fifo(path: &Path) {
    rustix::fs::mkfifoat(CWD, path, Mode::from_raw_mode(0o600)).unwrap();
}

/// An outside directory with a file, to check nothing reaches it through links.
fn outside(tmp: &tempfile::TempDir) -> PathBuf {
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("keep")).unwrap();
    std::fs::write(outside.join("keep/precious"), b"mine").unwrap();
    outside
}

fn assert_outside_intact(outside: &Path) {
    assert_eq!(
        std::fs::read(outside.join("keep/precious")).unwrap(),
        b"mine"
    );
    assert_eq!(mode_of(&outside.join("keep")), 0o755);
}

#[test]
fn remove_tree_removes_what_a_cell_leaves_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = outside(&tmp);
    let root = tmp.path().join("upper");
    std::fs::create_dir_all(root.join("locked/inner")).unwrap();
    std::fs::write(root.join("locked/a"), b"a").unwrap();
    std::fs::write(root.join("locked/inner/b"), b"b").unwrap();
    std::fs::create_dir_all(root.join("readonly")).unwrap();
    std::fs::write(root.join("readonly/c"), b"c").unwrap();
    std::fs::create_dir_all(root.join("work/work")).unwrap();
    std::fs::create_dir_all(root.join("noexec")).unwrap();
    std::fs::write(root.join("noexec/d"), b"d").unwrap();
    symlink(outside.join("keep"), root.join("to-outside")).unwrap();
    symlink("../../outside/keep", root.join("readonly/relative")).unwrap();
    symlink(outside.join("keep/precious"), root.join("locked/to-file")).unwrap();
    fifo(&root.join("pipe"));
    fifo(&root.join("locked/inner/pipe"));
    chmod(&root.join("locked/inner"), 0o000);
    chmod(&root.join("locked"), 0o000);
    chmod(&root.join("readonly"), 0o555);
    chmod(&root.join("work/work"), 0o000);
    chmod(&root.join("noexec"), 0o600);

    remove_tree(&root).unwrap();
    assert!(std::fs::symlink_metadata(&root).is_err());
    assert_outside_intact(&outside);
    // Missing is fine, and so is removing twice.
    remove_tree(&root).unwrap();
}

#[test]
fn remove_tree_on_a_link_removes_only_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = outside(&tmp);
    let link = tmp.path().join("link");
    symlink(outside.join("keep"), &link).unwrap();
    remove_tree(&link).unwrap();
    assert!(std::fs::symlink_metadata(&link).is_err());
    assert_outside_intact(&outside);
    let root = tmp.path().join("locked-root");
    std::fs::create_dir_all(root.join("x")).unwrap();
    chmod(&root, 0o000);
    remove_tree(&root).unwrap();
    assert!(std::fs::symlink_metadata(&root).is_err());
}

#[test]
fn remove_tree_handles_trees_deeper_than_its_open_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("deep");
    std::fs::create_dir(&root).unwrap();
    let mut dir = rustix::fs::open(&root, DIR_FLAGS | OFlags::CLOEXEC, Mode::empty()).unwrap();
    for depth in 0..(KEEP_OPEN * 4) {
        rustix::fs::mkdirat(&dir, "d", Mode::from_raw_mode(0o755)).unwrap();
        rustix::fs::openat(
            &dir,
            "f",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let next =
            rustix::fs::openat(&dir, "d", DIR_FLAGS | OFlags::CLOEXEC, Mode::empty()).unwrap();
        if depth % 7 == 0 {
            rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o500)).unwrap();
        }
        dir = next;
    }
    remove_tree(&root).unwrap();
    assert!(std::fs::symlink_metadata(&root).is_err());
}

#[test]
fn remove_tree_removes_ten_thousand_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("many");
    for d in 0..20 {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..500 {
            std::fs::write(dir.join(format!("f{f}")), b"").unwrap();
        }
    }
    let started = Instant::now();
    remove_tree(&root).unwrap();
    // Printed, not asserted: timing belongs to benchmarks, not to tests.
    println!("removed 10,000 files in {:?}", started.elapsed());
    assert!(std::fs::symlink_metadata(&root).is_err());
}

#[test]
fn remove_tree_leaves_another_filesystem_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    let mount_point = root.join("sub/mnt");
    std::fs::create_dir_all(&mount_point).unwrap();
    std::fs::write(root.join("sub/file"), b"x").unwrap();
    let mounted = rustix::mount::mount(
        "none",
        &mount_point,
        "tmpfs",
        rustix::mount::MountFlags::empty(),
        None,
    );
    if mounted.is_err() {
        eprintln!("skipped: cannot mount a tmpfs here ({mounted:?})");
        return;
    }
    std::fs::write(mount_point.join("on-tmpfs"), b"keep").unwrap();
    let result = remove_tree(&root);
    let on_tmpfs = std::fs::read(mount_point.join("on-tmpfs"));
    let unmounted = rustix::mount::unmount(&mount_point, rustix::mount::UnmountFlags::DETACH);
    let message = result.unwrap_err().to_string();
    assert!(
        message.contains("is another filesystem mounted inside it"),
        "{message}"
    );
    assert!(message.contains("sub/mnt"), "{message}");
    assert_eq!(on_tmpfs.unwrap(), b"keep");
    assert!(
        std::fs::symlink_metadata(root.join("sub/file")).is_err(),
        "the rest went"
    );
    unmounted.unwrap();
    remove_tree(&root).unwrap();
}

#[test]
fn copy_tree_keeps_modes_times_and_links_without_following_them() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = outside(&tmp);
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("bin")).unwrap();
    std::fs::create_dir_all(src.join("ro")).unwrap();
    std::fs::write(src.join("bin/tool"), b"#!/bin/sh\n").unwrap();
    chmod(&src.join("bin/tool"), 0o4751);
    std::fs::write(src.join("ro/data"), vec![5u8; 100_000]).unwrap();
    chmod(&src.join("ro/data"), 0o440);
    symlink(outside.join("keep"), src.join("linked-dir")).unwrap();
    symlink("../bin/tool", src.join("ro/rel")).unwrap();
    symlink("dangling", src.join("dangling")).unwrap();
    fifo(&src.join("pipe"));
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(src.join("bin/tool"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    chmod(&src.join("ro"), 0o555);
    chmod(&src, 0o750);

    let dst = tmp.path().join("dst");
    let stats = copy_tree(&src, &dst).unwrap();
    assert_eq!(
        stats,
        CopyStats {
            files: 2,
            bytes: 100_010
        }
    );
    assert_eq!(mode_of(&dst), 0o750);
    assert_eq!(mode_of(&dst.join("ro")), 0o555);
    assert_eq!(mode_of(&dst.join("bin/tool")), 0o751, "setuid dropped");
    assert_eq!(mode_of(&dst.join("ro/data")), 0o440);
    assert_eq!(
        std::fs::read(dst.join("ro/data")).unwrap(),
        vec![5u8; 100_000]
    );
    assert_eq!(
        std::fs::metadata(dst.join("bin/tool"))
            .unwrap()
            .modified()
            .unwrap(),
        old
    );
    assert_eq!(
        std::fs::metadata(dst.join("ro"))
            .unwrap()
            .modified()
            .unwrap(),
        std::fs::metadata(src.join("ro"))
            .unwrap()
            .modified()
            .unwrap()
    );
    assert_eq!(
        std::fs::read_link(dst.join("linked-dir")).unwrap(),
        outside.join("keep")
    );
    assert!(
        std::fs::symlink_metadata(dst.join("linked-dir"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_link(dst.join("ro/rel")).unwrap(),
        Path::new("../bin/tool")
    );
    assert_eq!(
        std::fs::read_link(dst.join("dangling")).unwrap(),
        Path::new("dangling")
    );
    assert!(
        std::fs::symlink_metadata(dst.join("pipe")).is_err(),
        "special files are skipped"
    );
    assert_outside_intact(&outside);

    // An existing destination is refused and left as it was.
    let message = copy_tree(&src, &dst).unwrap_err().to_string();
    assert!(message.contains("exists"), "{message}");
    assert_eq!(mode_of(&dst.join("ro")), 0o555);
    // A symlinked source root is refused, not followed.
    let link = tmp.path().join("src-link");
    symlink(&src, &link).unwrap();
    assert!(copy_tree(&link, &tmp.path().join("dst2")).is_err());
    assert!(std::fs::symlink_metadata(tmp.path().join("dst2")).is_err());

    chmod(&src.join("ro"), 0o755);
    chmod(&dst.join("ro"), 0o755);
}

fn seed_archive(tmp: &tempfile::TempDir) -> PathBuf {
    let mut builder = tar::Builder::new(Vec::new());
    let mut add = |kind: tar::EntryType, path: &str, mode: u32, data: &[u8], link: Option<&str>| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        match link {
            Some(target) => builder.append_link(&mut header, path, target).unwrap(),
            None => builder.append_data(&mut header, path, data).unwrap(),
        }
    };
    add(
        tar::EntryType::Regular,
        "src/main.rs",
        0o644,
        b"fn main() {}\n",
        None,
    );
    add(
        tar::EntryType::Regular,
        "bin/run",
        0o6755,
        b"#!/bin/sh\n",
        None,
    );
    add(tar::EntryType::Directory, "locked/", 0o000, b"", None);
    add(
        tar::EntryType::Regular,
        "locked/inside",
        0o600,
        b"secret",
        None,
    );
    add(tar::EntryType::Directory, "ro/", 0o555, b"", None);
    add(
        tar::EntryType::Link,
        "ro/same",
        0o644,
        b"",
        Some("src/main.rs"),
    );
    add(
        tar::EntryType::Symlink,
        "ro/up",
        0o777,
        b"",
        Some("../bin/run"),
    );
    let path = tmp.path().join("seed.tar");
    std::fs::write(&path, builder.into_inner().unwrap()).unwrap();
    path
}

const LIMITS: ImportLimits = ImportLimits {
    max_file: 1 << 20,
    max_total: 1 << 20,
    max_entries: 100,
};

#[test]
fn materialize_writes_a_checked_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let source = Source::open(&seed_archive(&tmp)).unwrap();
    let entries = source.scan(&LIMITS).unwrap();
    let dst = tmp.path().join("ws");
    let stats = materialize(&source, &entries, &dst).unwrap();
    assert_eq!(
        stats,
        CopyStats {
            files: 4,
            bytes: 13 + 10 + 6 + 13
        }
    );
    assert_eq!(mode_of(&dst), 0o755);
    assert_eq!(
        std::fs::read(dst.join("src/main.rs")).unwrap(),
        b"fn main() {}\n"
    );
    assert_eq!(mode_of(&dst.join("src")), 0o755, "an implicit parent");
    assert_eq!(
        mode_of(&dst.join("bin/run")),
        0o755,
        "setuid and setgid dropped"
    );
    assert_eq!(mode_of(&dst.join("locked")), 0o000);
    assert_eq!(mode_of(&dst.join("ro")), 0o555);
    assert_eq!(
        std::fs::read_link(dst.join("ro/up")).unwrap(),
        Path::new("../bin/run")
    );
    assert_eq!(
        std::fs::read(dst.join("ro/same")).unwrap(),
        b"fn main() {}\n"
    );
    let copy = std::fs::metadata(dst.join("ro/same")).unwrap();
    assert_eq!(copy.nlink(), 1, "a hard link becomes a copy");
    chmod(&dst.join("locked"), 0o700);
    assert_eq!(std::fs::read(dst.join("locked/inside")).unwrap(), b"secret");
    remove_tree(&dst).unwrap();

    // The same from a directory source, and an existing destination is refused.
    std::fs::create_dir(&dst).unwrap();
    let message = materialize(&source, &entries, &dst)
        .unwrap_err()
        .to_string();
    assert!(message.contains("exists"), "{message}");
    assert!(dst.is_dir(), "an existing destination is not removed");
}

#[test]
fn materialize_removes_its_partial_result_when_the_source_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("a/one"), b"1").unwrap();
    std::fs::write(src.join("z"), b"small").unwrap();
    let source = Source::open(&src).unwrap();
    let entries = source.scan(&LIMITS).unwrap();
    std::fs::write(src.join("z"), b"larger than it was").unwrap();
    let dst = tmp.path().join("ws");
    let message = materialize(&source, &entries, &dst)
        .unwrap_err()
        .to_string();
    assert!(message.contains("entry `z` changed"), "{message}");
    assert!(std::fs::symlink_metadata(&dst).is_err());
    std::fs::write(src.join("z"), b"small").unwrap();
    let stats = materialize(&source, &entries, &dst).unwrap();
    assert_eq!(stats, CopyStats { files: 2, bytes: 6 });
}

#[test]
fn sweep_removes_prefixed_files_and_never_a_link_target() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = outside(&tmp);
    std::fs::write(outside.join(".burrow-tmp-target"), b"keep").unwrap();
    let root = tmp.path().join("upper");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::create_dir_all(root.join(".burrow-tmp-dir")).unwrap();
    std::fs::write(root.join(".burrow-tmp-1"), b"").unwrap();
    std::fs::write(root.join("a/b/.burrow-tmp-2"), b"").unwrap();
    std::fs::write(root.join("a/.burrow-tmp-dir-file"), b"").unwrap();
    std::fs::write(root.join("a/keep.burrow-tmp-"), b"").unwrap();
    std::fs::write(root.join(".burrow-tmp-dir/inner"), b"").unwrap();
    symlink(
        outside.join(".burrow-tmp-target"),
        root.join(".burrow-tmp-link"),
    )
    .unwrap();
    symlink(&outside, root.join("a/.burrow-tmp-outside")).unwrap();
    fifo(&root.join("a/.burrow-tmp-fifo"));

    assert_eq!(sweep_files_with_prefix(&root, ".burrow-tmp-").unwrap(), 3);
    assert!(!root.join(".burrow-tmp-1").exists());
    assert!(!root.join("a/b/.burrow-tmp-2").exists());
    assert!(!root.join("a/.burrow-tmp-dir-file").exists());
    assert!(root.join("a/keep.burrow-tmp-").exists());
    assert!(
        root.join(".burrow-tmp-dir/inner").exists(),
        "directories are walked, not removed"
    );
    assert!(
        std::fs::symlink_metadata(root.join(".burrow-tmp-link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::symlink_metadata(root.join("a/.burrow-tmp-fifo")).is_ok());
    assert_eq!(
        std::fs::read(outside.join(".burrow-tmp-target")).unwrap(),
        b"keep"
    );
    assert_outside_intact(&outside);

    assert_eq!(
        sweep_files_with_prefix(&tmp.path().join("missing"), ".burrow-tmp-").unwrap(),
        0
    );
    assert!(sweep_files_with_prefix(&root, "").is_err());
    assert!(sweep_files_with_prefix(&root, "a/b").is_err());
}
