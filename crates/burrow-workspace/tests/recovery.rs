//! Recovery: what a burrow killed mid-operation leaves is finished or undone by the next one to
//! open the state. These tests leave the state exactly as a kill at that point would (real
//! SQLite, real directories) and open it again. No cell is started.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use burrow_policy::{PathContext, Policy};
use burrow_workspace::layout::StateDir;
use burrow_workspace::lock::WorkspaceLock;
use burrow_workspace::manager::{CreateOptions, Workspaces};
use burrow_workspace::store::{CellRecord, Lifecycle, SnapshotRecord};

/// A state directory whose storage mode is already known (no probe: it would fork this
/// multi-threaded test process).
fn state() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let kernel = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    std::fs::write(dir.path().join("storage"), format!("overlay {kernel}\n")).unwrap();
    dir
}

fn create(workspaces: &mut Workspaces, name: &str) -> String {
    let options = CreateOptions {
        name: Some(name.to_owned()),
        seed: None,
        policy: Policy::default(),
        context: PathContext {
            cwd: PathBuf::from("/"),
            home: None,
            state_dir: None,
        },
        ttl: None,
        labels: BTreeMap::new(),
        secrets: BTreeMap::new(),
        redact: Vec::new(),
        tenant: None,
    };
    workspaces.create(&options).unwrap().id
}

fn names(workspaces: &Workspaces) -> Vec<String> {
    workspaces
        .list()
        .unwrap()
        .into_iter()
        .filter_map(|w| w.name)
        .collect()
}

#[test]
fn an_interrupted_snapshot_is_undone() {
    let root = state();
    let mut workspaces = Workspaces::open(root.path()).unwrap();
    let id = create(&mut workspaces, "snap");
    let dir = StateDir::new(root.path()).workspace(&id);
    std::fs::write(dir.upper().join("work.txt"), "unsaved").unwrap();
    // Killed after the row and the rename, before the new upper layer was complete.
    workspaces
        .store()
        .insert_snapshot(
            &id,
            &SnapshotRecord {
                id: "aaaaaaaaaaaa".into(),
                name: "half".into(),
                parent: None,
                created_at: 0,
                complete: false,
            },
        )
        .unwrap();
    std::fs::rename(dir.upper(), dir.layer("aaaaaaaaaaaa")).unwrap();
    std::fs::create_dir(dir.upper()).unwrap();
    drop(workspaces);

    let workspaces = Workspaces::open(root.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.upper().join("work.txt")).unwrap(),
        "unsaved"
    );
    assert!(!dir.layer("aaaaaaaaaaaa").exists());
    assert!(workspaces.snapshots("snap").unwrap().is_empty());
}

#[test]
fn an_interrupted_create_and_an_orphaned_directory_are_removed() {
    let root = state();
    let mut workspaces = Workspaces::open(root.path()).unwrap();
    let id = create(&mut workspaces, "half");
    workspaces
        .store()
        .set_lifecycle(&id, Lifecycle::Creating)
        .unwrap();
    // A create killed after moving its directory in, before inserting its row: taken at
    // once, however young.
    let orphan = root.path().join("workspaces/bbbbbbbbbbbb");
    std::fs::create_dir_all(orphan.join("upper")).unwrap();
    // A create still alive between the two holds the directory's lock: left alone.
    let moving_in = root.path().join("workspaces/dddddddddddd");
    std::fs::create_dir_all(&moving_in).unwrap();
    let held = WorkspaceLock::acquire(&moving_in.join("lock")).unwrap();
    // In `incoming/`, a young directory may be a create that has not locked it yet; an old
    // unlocked one is a killed create's.
    let young = root.path().join("incoming/cccccccccccc");
    std::fs::create_dir_all(&young).unwrap();
    let stale = root.path().join("incoming/eeeeeeeeeeee");
    std::fs::create_dir_all(&stale).unwrap();
    age(&stale);
    drop(workspaces);

    let workspaces = Workspaces::open(root.path()).unwrap();
    assert!(names(&workspaces).is_empty());
    assert!(!root.path().join("workspaces").join(&id).exists());
    assert!(!root.path().join("names/half").exists());
    assert!(!orphan.exists());
    assert!(
        moving_in.exists() && young.exists(),
        "a create in progress elsewhere was taken for an orphan"
    );
    assert!(!stale.exists());
    drop(held);
    assert_eq!(
        std::fs::read_dir(root.path().join("trash"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn work_in_progress_elsewhere_is_left_alone() {
    let root = state();
    let mut workspaces = Workspaces::open(root.path()).unwrap();
    let id = create(&mut workspaces, "busy");
    workspaces
        .store()
        .set_lifecycle(&id, Lifecycle::Creating)
        .unwrap();
    // Another process is creating it right now: it holds the workspace's lock.
    let lock = WorkspaceLock::acquire(&StateDir::new(root.path()).workspace(&id).lock()).unwrap();
    drop(workspaces);
    let reopened = Workspaces::open(root.path()).unwrap();
    assert!(root.path().join("workspaces").join(&id).exists());
    drop((reopened, lock));
    Workspaces::open(root.path()).unwrap();
    assert!(!root.path().join("workspaces").join(&id).exists());
}

#[test]
fn a_dead_cell_is_forgotten_and_the_journal_ingested() {
    let root = state();
    let mut workspaces = Workspaces::open(root.path()).unwrap();
    let id = create(&mut workspaces, "dead");
    // A process that has exited: its pid is not the recorded cell any more.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let cell = CellRecord {
        pid,
        start_time: 1,
        cgroup_dirs: Vec::new(),
    };
    workspaces.store().set_cell(&id, Some(&cell)).unwrap();
    let journal = StateDir::new(root.path()).workspace(&id).journal();
    burrow_workspace::journal::append(&journal, &burrow_workspace::journal::record("exec", "make"))
        .unwrap();
    drop(workspaces);

    let mut workspaces = Workspaces::open(root.path()).unwrap();
    assert_eq!(workspaces.status("dead").unwrap().state, "stopped");
    assert!(workspaces.get("dead").unwrap().cell.is_none());
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    let kinds: Vec<String> = workspaces
        .audit("dead")
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(kinds, ["create", "exec"]);
}

#[test]
fn a_stale_name_link_is_removed() {
    let root = state();
    drop(Workspaces::open(root.path()).unwrap());
    let link = root.path().join("names/ghost");
    std::os::unix::fs::symlink(Path::new("../workspaces/cccccccccccc"), &link).unwrap();
    drop(Workspaces::open(root.path()).unwrap());
    assert!(std::fs::symlink_metadata(&link).is_err());
}

/// Makes `dir` look as if it was last changed ten minutes ago.
fn age(dir: &std::path::Path) {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    std::fs::File::open(dir)
        .unwrap()
        .set_modified(then)
        .unwrap();
}
