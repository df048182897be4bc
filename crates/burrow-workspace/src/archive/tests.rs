//! Tests of both passes over hand-built archives and directories, and of the messages.

use super::*;
use std::io::{self, Write as _};
use std::os::unix::fs::{PermissionsExt, symlink};

use rustix::fs::Mode;
use tar::EntryType;

use super::checks::show;
use crate::error::WorkspaceError;

const LIMITS: ImportLimits = ImportLimits {
    max_file: 1 << 20,
    max_total: 4 << 20,
    max_entries: 1000,
};

/// A raw header: the name bytes go straight into the header, so the tar crate's own
/// refusal of `..` and absolute names when building does not get in the way.
fn header(name: &[u8], kind: EntryType, size: u64, link: &[u8], mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.as_old_mut().linkname[..link.len()].copy_from_slice(link);
    header.set_entry_type(kind);
    header.set_size(size);
    header.set_mode(mode);
    header.set_mtime(0);
    header.set_cksum();
    header
}

type Member = (tar::Header, Vec<u8>);

fn file(name: &[u8], data: &[u8]) -> Member {
    (
        header(name, EntryType::Regular, data.len() as u64, b"", 0o644),
        data.to_vec(),
    )
}

fn dir(name: &[u8]) -> Member {
    (
        header(name, EntryType::Directory, 0, b"", 0o755),
        Vec::new(),
    )
}

fn symlink_to(name: &[u8], target: &[u8]) -> Member {
    (
        header(name, EntryType::Symlink, 0, target, 0o777),
        Vec::new(),
    )
}

fn hard_link(name: &[u8], target: &[u8]) -> Member {
    (header(name, EntryType::Link, 0, target, 0o644), Vec::new())
}

fn special(name: &[u8], kind: EntryType) -> Member {
    (header(name, kind, 0, b"", 0o644), Vec::new())
}

fn tar_bytes(members: &[Member]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (header, data) in members {
        builder.append(header, data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Scans an archive of `members` that must be refused; returns the message.
fn refused(members: &[Member]) -> String {
    refused_with(members, &LIMITS)
}

/// Scans an archive of `members` that must be refused with a message containing `needle`.
fn assert_refused(members: &[Member], needle: &str) {
    let message = refused(members);
    assert!(message.contains(needle), "{message}");
}

fn refused_with(members: &[Member], limits: &ImportLimits) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(&tmp, "bad.tar", &tar_bytes(members));
    let error = Source::open(&path).unwrap().scan(limits).unwrap_err();
    let message = error.to_string();
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(matches!(error, WorkspaceError::Invalid(_)), "{message}");
    message
}

/// Runs pass 2 and returns every entry with its content.
fn contents(
    source: &Source,
    entries: &[ImportEntry],
) -> Result<Vec<(ImportEntry, Option<Vec<u8>>)>> {
    let mut seen = Vec::new();
    source.visit(entries, &mut |entry, content| {
        let data = content.map(|reader| {
            let mut data = Vec::new();
            reader.read_to_end(&mut data).map(|_| data)
        });
        let data = data.transpose().map_err(WorkspaceError::io("test"))?;
        seen.push((entry.clone(), data));
        Ok(())
    })?;
    Ok(seen)
}

fn entry(path: &str, kind: EntryKind, mode: u32) -> ImportEntry {
    ImportEntry {
        path: path.to_owned(),
        kind,
        mode,
    }
}

/// A well-formed archive as real tools write it: `./` first, implicit parents, a long
/// name, a global PAX header (as `git archive` writes), a hard link and a symlink.
fn good_archive() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut global = header(
        b"pax_global_header",
        EntryType::XGlobalHeader,
        0,
        b"",
        0o644,
    );
    let record = b"52 comment=0123456789012345678901234567890123456789\n";
    global.set_size(record.len() as u64);
    global.set_cksum();
    builder.append(&global, &record[..]).unwrap();
    let (root, _) = dir(b"./");
    builder.append(&root, io::empty()).unwrap();
    let mut exec = tar::Header::new_gnu();
    exec.set_size(5);
    exec.set_mode(0o4755);
    builder
        .append_data(&mut exec, "./bin/run", &b"#!sh\n"[..])
        .unwrap();
    let long = format!("deep/{}/file.txt", "x".repeat(120));
    let mut plain = tar::Header::new_gnu();
    plain.set_size(5);
    plain.set_mode(0o644);
    builder
        .append_data(&mut plain, &long, &b"hello"[..])
        .unwrap();
    let mut ro = tar::Header::new_gnu();
    ro.set_entry_type(EntryType::Directory);
    ro.set_mode(0o555);
    ro.set_size(0);
    builder.append_data(&mut ro, "ro/", io::empty()).unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(EntryType::Link);
    link.set_mode(0o644);
    link.set_size(0);
    builder.append_link(&mut link, "ro/copy", &long).unwrap();
    let (sym, _) = symlink_to(b"bin/up", b"../ro/copy");
    builder.append(&sym, io::empty()).unwrap();
    builder.into_inner().unwrap()
}

fn expect_good(source: &Source) {
    let long = format!("deep/{}", "x".repeat(120));
    let file_path = format!("{long}/file.txt");
    let entries = source.scan(&LIMITS).unwrap();
    assert_eq!(
        entries,
        vec![
            entry("bin", EntryKind::Dir, 0o755),
            entry("bin/run", EntryKind::File { size: 5 }, 0o755),
            entry("deep", EntryKind::Dir, 0o755),
            entry(&long, EntryKind::Dir, 0o755),
            entry(&file_path, EntryKind::File { size: 5 }, 0o644),
            entry("ro", EntryKind::Dir, 0o555),
            entry("ro/copy", EntryKind::File { size: 5 }, 0o644),
            entry(
                "bin/up",
                EntryKind::Symlink {
                    target: "../ro/copy".into()
                },
                0o777
            ),
        ]
    );
    let seen = contents(source, &entries).unwrap();
    let data: Vec<_> = seen
        .iter()
        .map(|(entry, data)| (entry.path.as_str(), data.as_deref()))
        .collect();
    assert_eq!(data[1], ("bin/run", Some(&b"#!sh\n"[..])));
    assert_eq!(data[4], (file_path.as_str(), Some(&b"hello"[..])));
    assert_eq!(
        data[6],
        ("ro/copy", Some(&b"hello"[..])),
        "a hard link is a copy of its target"
    );
    assert_eq!(data[7], ("bin/up", None));
    assert_eq!(data.len(), entries.len());
}

#[test]
fn accepts_a_tar_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(&tmp, "seed.tar", &good_archive());
    let source = Source::open(&path).unwrap();
    assert!(!source.is_dir());
    expect_good(&source);
}

#[test]
fn accepts_a_gzipped_archive_whatever_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = gzip(&good_archive());
    for name in ["seed.tar.gz", "seed.tgz", "misnamed.tar"] {
        let path = write(&tmp, name, &bytes);
        expect_good(&Source::open(&path).unwrap());
    }
}

#[test]
fn accepts_an_empty_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(&tmp, "empty.tar", &tar_bytes(&[]));
    assert_eq!(Source::open(&path).unwrap().scan(&LIMITS).unwrap(), vec![]);
}

#[test]
fn accepts_a_directory_given_through_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("src");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/f"), b"data").unwrap();
    std::fs::write(root.join("top"), b"t").unwrap();
    std::fs::set_permissions(root.join("top"), std::fs::Permissions::from_mode(0o6750)).unwrap();
    symlink("b/f", root.join("a/l")).unwrap();
    symlink("../top", root.join("a/up")).unwrap();
    std::fs::set_permissions(root.join("a"), std::fs::Permissions::from_mode(0o750)).unwrap();
    symlink(&root, tmp.path().join("via")).unwrap();

    let source = Source::open(&tmp.path().join("via")).unwrap();
    assert!(source.is_dir());
    let entries = source.scan(&LIMITS).unwrap();
    assert_eq!(
        entries,
        vec![
            entry("a", EntryKind::Dir, 0o750),
            entry("top", EntryKind::File { size: 1 }, 0o750),
            entry("a/b", EntryKind::Dir, 0o755),
            entry(
                "a/l",
                EntryKind::Symlink {
                    target: "b/f".into()
                },
                0o777
            ),
            entry(
                "a/up",
                EntryKind::Symlink {
                    target: "../top".into()
                },
                0o777
            ),
            entry("a/b/f", EntryKind::File { size: 4 }, 0o644),
        ]
    );
    let seen = contents(&source, &entries).unwrap();
    assert_eq!(seen[5].1.as_deref(), Some(&b"data"[..]));
    assert_eq!(seen[1].1.as_deref(), Some(&b"t"[..]));
}

#[test]
fn refuses_what_is_neither_a_directory_nor_a_tar() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty", &b""[..]),
        (
            "text.tar",
            &b"just some text that is long enough to not be anything"[..],
        ),
        ("zeros", &[1u8; 512][..]),
    ] {
        let path = write(&tmp, name, bytes);
        let message = Source::open(&path).unwrap_err().to_string();
        assert!(
            message.contains("neither a directory nor a tar archive"),
            "{message}"
        );
    }
    let path = write(&tmp, "text.gz", &gzip(b"not a tar"));
    let message = Source::open(&path).unwrap_err().to_string();
    assert!(
        message.contains("gzip data but not a tar archive"),
        "{message}"
    );
    let fifo = tmp.path().join("fifo");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
    let message = Source::open(&fifo).unwrap_err().to_string();
    assert!(
        message.contains("neither a directory nor a tar archive"),
        "{message}"
    );
    assert!(Source::open(&tmp.path().join("missing")).is_err());
}

#[test]
fn refuses_absolute_names() {
    assert_refused(
        &[file(b"/etc/cron.d/x", b"x")],
        "entry `/etc/cron.d/x` has an absolute name",
    );
}

#[test]
fn refuses_dot_dot() {
    assert_refused(&[file(b"../x", b"x")], "entry `../x` has a `..` component");
    assert_refused(
        &[dir(b"a/"), file(b"a/../../x", b"x")],
        "entry `a/../../x` has a `..` component",
    );
    // Even one that would stay inside: there is no legitimate need for it.
    assert_refused(&[file(b"a/../b", b"x")], "`a/../b`");
}

#[test]
fn refuses_bad_names() {
    assert_refused(
        &[file(b"caf\xe9", b"x")],
        "entry `caf\\xe9` has a name that is not valid UTF-8",
    );
    assert_refused(&[file(b"", b"x")], "has an empty name");
    // A NUL can only come through a GNU long name.
    let long_name = b"a\0b\0";
    let mut long = header(
        b"././@LongLink",
        EntryType::GNULongName,
        long_name.len() as u64,
        b"",
        0o644,
    );
    long.set_cksum();
    assert_refused(
        &[(long, long_name.to_vec()), file(b"placeholder", b"x")],
        "entry `a\\u{0}b` has a NUL byte in its name",
    );
    assert_refused(&[symlink_to(b"./", b"x")], "names the import root itself");
}

#[test]
fn refuses_absolute_symlinks() {
    assert_refused(
        &[symlink_to(b"l", b"/etc")],
        "entry `l` is a symlink to the absolute path `/etc`",
    );
}

#[test]
fn refuses_symlinks_that_climb_out() {
    assert_refused(
        &[dir(b"a/"), symlink_to(b"a/l", b"../../x")],
        "entry `a/l` is a symlink to `../../x`, which points outside",
    );
    assert_refused(&[symlink_to(b"l", b"..")], "points outside");
    // Climbing up and down again is fine.
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        &tmp,
        "ok.tar",
        &tar_bytes(&[symlink_to(b"a/b/l", b"../../a/./c/")]),
    );
    Source::open(&path).unwrap().scan(&LIMITS).unwrap();
}

#[test]
fn refuses_entries_under_a_symlink() {
    assert_refused(
        &[dir(b"sub/"), symlink_to(b"l", b"sub"), file(b"l/f", b"x")],
        "entry `l/f` lies under `l`, a symlink",
    );
    // The other order: the link would replace a directory already listed.
    assert_refused(
        &[file(b"l/f", b"x"), symlink_to(b"l", b"sub")],
        "entry `l` appears twice",
    );
    assert_refused(
        &[file(b"f", b"x"), file(b"f/g", b"x")],
        "lies under `f`, which is a file",
    );
}

#[test]
fn refuses_symlinks_that_resolve_through_another_symlink() {
    // Each link alone stays inside; followed by the kernel, `a/l` lands above the root.
    assert_refused(
        &[
            dir(b"a/"),
            symlink_to(b"a/l", b"b/../.."),
            symlink_to(b"a/b", b".."),
        ],
        "entry `a/l` is a symlink to `b/../..`, which runs through `a/b`",
    );
}

#[test]
fn refuses_hard_links_to_anything_but_an_earlier_file() {
    assert_refused(
        &[hard_link(b"h", b"/etc/passwd")],
        "entry `h` is a hard link to `/etc/passwd`, which has an absolute name",
    );
    assert_refused(&[hard_link(b"h", b"../x")], "a `..` component");
    assert_refused(
        &[hard_link(b"h", b"f"), file(b"f", b"x")],
        "entry `h` is a hard link to `f`, which is not an earlier regular file",
    );
    assert_refused(
        &[hard_link(b"h", b"nowhere")],
        "not an earlier regular file",
    );
    assert_refused(
        &[
            file(b"f", b"x"),
            hard_link(b"h1", b"f"),
            hard_link(b"h2", b"h1"),
        ],
        "entry `h2` is a hard link to `h1`, which is not an earlier regular file",
    );
    assert_refused(
        &[dir(b"d/"), hard_link(b"h", b"d")],
        "not an earlier regular file",
    );
    assert_refused(
        &[symlink_to(b"s", b"x"), hard_link(b"h", b"s")],
        "not an earlier regular file",
    );
}

#[test]
fn refuses_special_files_and_unknown_types() {
    assert_refused(
        &[special(b"dev/sda", EntryType::Block)],
        "entry `dev/sda` is a device node",
    );
    assert_refused(
        &[special(b"null", EntryType::Char)],
        "entry `null` is a device node",
    );
    assert_refused(
        &[special(b"pipe", EntryType::Fifo)],
        "entry `pipe` is a FIFO",
    );
    assert_refused(
        &[special(b"label", EntryType::new(b'V'))],
        "entry `label` has tar entry type `V`",
    );
    let (mut data_dir, _) = dir(b"d/");
    data_dir.set_size(3);
    data_dir.set_cksum();
    assert_refused(
        &[(data_dir, b"abc".to_vec())],
        "entry `d/` is a directory but carries 3 bytes",
    );
}

#[test]
fn refuses_conflicting_duplicates_and_keeps_the_last_directory_mode() {
    assert_refused(
        &[file(b"x", b"1"), file(b"x", b"2")],
        "entry `x` appears twice in the archive, as a file and as a file",
    );
    assert_refused(
        &[file(b"x", b"1"), dir(b"x/")],
        "as a file and as a directory",
    );

    let (mut private, _) = dir(b"d");
    private.set_mode(0o700);
    private.set_cksum();
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        &tmp,
        "dirs.tar",
        &tar_bytes(&[file(b"d/f", b"x"), dir(b"d/"), (private, Vec::new())]),
    );
    let entries = Source::open(&path).unwrap().scan(&LIMITS).unwrap();
    assert_eq!(entries[0], entry("d", EntryKind::Dir, 0o700));
    assert_eq!(entries.len(), 2);
}

#[test]
fn refuses_what_is_over_the_limits() {
    let big = vec![7u8; 2000];
    let limits = ImportLimits {
        max_file: 1000,
        max_total: 2500,
        max_entries: 5,
    };
    let message = refused_with(&[file(b"big", &big)], &limits);
    assert!(
        message.contains("entry `big` is 2000 bytes, over the limit of 1000 bytes per file"),
        "{message}"
    );
    let message = refused_with(
        &[
            file(b"a", &big[..900]),
            file(b"b", &big[..900]),
            hard_link(b"c", b"a"),
        ],
        &limits,
    );
    assert!(
        message.contains("entry `c` brings the total past the limit of 2500 bytes"),
        "{message}"
    );
    let message = refused_with(
        &[
            file(b"1", b""),
            file(b"2", b""),
            file(b"3", b""),
            file(b"4", b""),
            file(b"5", b""),
            file(b"6", b""),
        ],
        &limits,
    );
    assert!(
        message.contains("entry `6` is past the limit of 5 entries"),
        "{message}"
    );
    // Implicit parents count too.
    let message = refused_with(&[file(b"a/b/c/d/e/f", b"")], &limits);
    assert!(
        message.contains("is past the limit of 5 entries"),
        "{message}"
    );
}

#[test]
fn refuses_a_directory_source_with_a_fifo_or_an_escaping_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fifo");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        root.join("sub/pipe"),
        Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let message = Source::open(&root)
        .unwrap()
        .scan(&LIMITS)
        .unwrap_err()
        .to_string();
    assert!(message.contains("entry `sub/pipe` is a FIFO"), "{message}");

    let root = tmp.path().join("links");
    std::fs::create_dir_all(root.join("a")).unwrap();
    symlink("../../outside", root.join("a/l")).unwrap();
    let message = Source::open(&root)
        .unwrap()
        .scan(&LIMITS)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("entry `a/l` is a symlink to `../../outside`, which points outside"),
        "{message}"
    );
    std::fs::remove_file(root.join("a/l")).unwrap();
    symlink("/etc", root.join("a/l")).unwrap();
    let message = Source::open(&root)
        .unwrap()
        .scan(&LIMITS)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("entry `a/l` is a symlink to the absolute path `/etc`"),
        "{message}"
    );
}

#[test]
fn does_not_descend_into_symlinked_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("src");
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/f"), b"x").unwrap();
    symlink("real", root.join("alias")).unwrap();
    let entries = Source::open(&root).unwrap().scan(&LIMITS).unwrap();
    let paths: Vec<_> = entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["alias", "real", "real/f"]);
}

#[test]
fn pass_two_notices_a_file_that_changed_in_a_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("src");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("f"), b"small").unwrap();
    let source = Source::open(&root).unwrap();
    let entries = source.scan(&LIMITS).unwrap();
    std::fs::write(root.join("f"), b"much larger now").unwrap();
    let message = contents(&source, &entries).unwrap_err().to_string();
    assert!(
        message.contains("entry `f` changed after the source was checked"),
        "{message}"
    );

    // Replaced by a symlink to something outside: still refused, never followed.
    std::fs::write(tmp.path().join("secret"), b"small").unwrap();
    std::fs::remove_file(root.join("f")).unwrap();
    symlink(tmp.path().join("secret"), root.join("f")).unwrap();
    let message = contents(&source, &entries).unwrap_err().to_string();
    assert!(message.contains("entry `f` changed"), "{message}");
}

#[test]
fn pass_two_notices_an_archive_that_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        &tmp,
        "seed.tar",
        &tar_bytes(&[dir(b"d/"), file(b"d/f", b"small")]),
    );
    let source = Source::open(&path).unwrap();
    let entries = source.scan(&LIMITS).unwrap();
    // Rewritten in place (the same inode the source holds open).
    std::fs::write(
        &path,
        tar_bytes(&[dir(b"d/"), file(b"d/f", b"much larger now")]),
    )
    .unwrap();
    let message = contents(&source, &entries).unwrap_err().to_string();
    assert!(message.contains("entry `d/f` changed"), "{message}");
    std::fs::write(
        &path,
        tar_bytes(&[dir(b"d/"), file(b"d/f", b"small"), file(b"d/new", b"!")]),
    )
    .unwrap();
    let message = contents(&source, &entries).unwrap_err().to_string();
    assert!(message.contains("entry `d/new` changed"), "{message}");
    std::fs::write(&path, tar_bytes(&[dir(b"d/"), file(b"d/f", b"small")])).unwrap();
    assert_eq!(contents(&source, &entries).unwrap().len(), 2);
}

#[test]
fn hard_links_in_a_gzipped_archive_read_their_target() {
    let tmp = tempfile::tempdir().unwrap();
    let members = [
        file(b"a", b"first"),
        file(b"b", &[9u8; 3000]),
        hard_link(b"c", b"b"),
        hard_link(b"d", b"./a"),
    ];
    let path = write(&tmp, "links.tgz", &gzip(&tar_bytes(&members)));
    let source = Source::open(&path).unwrap();
    let entries = source.scan(&LIMITS).unwrap();
    let seen = contents(&source, &entries).unwrap();
    assert_eq!(seen[2].1.as_deref(), Some(&[9u8; 3000][..]));
    assert_eq!(seen[3].1.as_deref(), Some(&b"first"[..]));
}

#[test]
fn messages_escape_what_they_quote() {
    assert_eq!(show(b"a\nb\xffc"), "a\\nb\\xffc");
    assert!(show(&[b'x'; 500]).ends_with('…'));
}
