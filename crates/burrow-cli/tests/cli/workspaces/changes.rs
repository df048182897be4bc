//! A workspace's contents as a whole: seeds, patch, diff, export, import, reset, snapshots,
//! audit; with overlay layers and with the copying fallback.

use std::path::Path;

use crate::cell_test;
use crate::harness::Harness;

const PATCH: &str = "\
diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,2 +1,2 @@
 line one
-line two
+line 2
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+fresh
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/run.sh b/bin/run.sh
similarity index 100%
rename from run.sh
rename to bin/run.sh
";

/// A seed directory on the host.
fn seed(t: &Harness) -> std::path::PathBuf {
    t.write("seed/hello.txt", "line one\nline two\n");
    t.write("seed/gone.txt", "bye\n");
    t.write("seed/run.sh", "#!/bin/sh\necho run\n");
    t.write("seed/sub/deep.txt", "deep\n");
    let dir = t.root.join("seed");
    std::fs::set_permissions(
        dir.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    dir
}

cell_test!(patches_apply_whole_or_not_at_all, |t| {
    let seed = seed(&t);
    t.create_ws("p", &["--seed", seed.to_str().unwrap()]);
    let done = t.call_with_input(&["patch", "p"], PATCH.as_bytes());
    assert_eq!(done.status, 0, "{done:#?}");
    assert_eq!(
        t.sh("p", "cat hello.txt new.txt; test -e gone.txt || echo gone; test -e run.sh || echo moved; ./bin/run.sh"),
        "line one\nline 2\nfresh\ngone\nmoved\nrun\n"
    );

    // A hunk that does not apply names its file and line; the file before it is untouched.
    let bad = "\
--- a/hello.txt
+++ b/hello.txt
@@ -1 +1 @@
-line one
+LINE ONE
--- a/sub/deep.txt
+++ b/sub/deep.txt
@@ -1 +1 @@
-not what is there
+x
";
    let file = t.write("bad.patch", bad);
    t.fails(
        &["patch", "p", "--file", file.to_str().unwrap()],
        "sub/deep.txt",
    );
    assert_eq!(
        t.sh("p", "head -1 hello.txt; cat sub/deep.txt"),
        "line one\ndeep\n"
    );
    let garbage = t.call_with_input(&["patch", "p"], b"this is not a patch\n");
    assert_ne!(garbage.status, 0);
});

cell_test!(
    diff_shows_changes_since_the_baseline_and_applies_back,
    |t| {
        let seed = seed(&t);
        t.create_ws("d", &["--seed", seed.to_str().unwrap()]);
        assert_eq!(t.ok(&["diff", "d"]), "");
        t.sh("d", "echo more >> hello.txt && rm gone.txt && echo new > added.txt && printf 'a\\0b' > blob && chmod +x sub/deep.txt && rm -r sub && mkdir sub && echo again > sub/deep.txt");
        let diff = t.ok(&["diff", "d"]);
        for needle in [
            "diff --git a/hello.txt b/hello.txt",
            "+more",
            "deleted file mode 100644",
            "-bye",
            "new file mode 100644",
            "+new",
            "Binary files",
            "-deep",
            "+again",
        ] {
            assert!(diff.contains(needle), "missing {needle:?} in\n{diff}");
        }
        assert!(
            !diff.contains("run.sh"),
            "an untouched file is in the diff:\n{diff}"
        );

        let stat = t.ok(&["diff", "d", "--stat"]);
        assert!(
            stat.contains("hello.txt") && stat.contains("files changed"),
            "{stat}"
        );
        let json = t.call(&["diff", "d", "--json"]).json();
        let status_of = |path: &str| {
            json.as_array()
                .unwrap()
                .iter()
                .find(|f| f["path"] == path)
                .map(|f| f["status"].as_str().unwrap().to_owned())
        };
        assert_eq!(status_of("hello.txt").as_deref(), Some("modified"));
        assert_eq!(status_of("gone.txt").as_deref(), Some("deleted"));
        assert_eq!(status_of("added.txt").as_deref(), Some("added"));
        assert_eq!(status_of("sub/deep.txt").as_deref(), Some("modified"));

        // The text part of the diff, applied by git to the seed, gives the workspace's files.
        let copy = t.root.join("copy");
        copy_dir(&seed, &copy);
        let text_only = t.root.join("text.patch");
        let patch: String = diff
            .split("diff --git ")
            .filter(|p| !p.is_empty() && !p.contains("Binary files"))
            .map(|p| format!("diff --git {p}"))
            .collect();
        std::fs::write(&text_only, patch).unwrap();
        // A repository of its own, so that git does not take the test tree's enclosing one.
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&copy)
            .status()
            .unwrap();
        assert!(init.success());
        let applied = std::process::Command::new("git")
            .arg("apply")
            .arg(&text_only)
            .current_dir(&copy)
            .output()
            .unwrap();
        assert!(applied.status.success(), "{applied:?}");
        let exported = t.root.join("exported");
        t.ok(&["export", "d", "--output", exported.to_str().unwrap()]);
        std::fs::remove_file(exported.join("blob")).unwrap();
        std::fs::remove_dir_all(copy.join(".git")).unwrap();
        assert_eq!(tree_of(&copy), tree_of(&exported));
    }
);

cell_test!(
    export_writes_a_directory_or_a_tar_and_never_overwrites,
    |t| {
        let seed = seed(&t);
        t.create_ws("e", &["--seed", seed.to_str().unwrap()]);
        t.sh("e", "echo changed > sub/deep.txt && rm gone.txt");
        let out = t.root.join("out");
        t.ok(&["export", "e", "--output", out.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(out.join("sub/deep.txt")).unwrap(),
            "changed\n"
        );
        assert!(!out.join("gone.txt").exists());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(out.join("run.sh")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o755);
        t.fails(
            &["export", "e", "--output", out.to_str().unwrap()],
            "already exists",
        );

        let sub = t.root.join("sub-only");
        t.ok(&["export", "e", "sub", "--output", sub.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(sub.join("deep.txt")).unwrap(),
            "changed\n"
        );

        let tar_path = t.root.join("e.tar");
        t.ok(&["export", "e", "--output", tar_path.to_str().unwrap()]);
        let mut archive = tar::Archive::new(std::fs::File::open(&tar_path).unwrap());
        let mut names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        names.sort();
        assert!(
            names
                .iter()
                .any(|n| n.trim_end_matches('/') == "sub/deep.txt"),
            "{names:?}"
        );
        assert!(!names.iter().any(|n| n.contains("gone")), "{names:?}");
        t.fails(
            &[
                "export",
                "e",
                "nope",
                "--output",
                t.root.join("n").to_str().unwrap(),
            ],
            "",
        );
    }
);

cell_test!(imports_of_directories_and_tarballs_land_under_dest, |t| {
    t.create_ws("i", &[]);
    t.write("src/a.txt", "a\n");
    t.write("src/nested/b.txt", "b\n");
    std::os::unix::fs::symlink("a.txt", t.root.join("src/link")).unwrap();
    t.give_to_user(&t.root.join("src"));
    t.ok(&["import", "i", t.root.join("src").to_str().unwrap()]);
    assert_eq!(t.sh("i", "cat a.txt nested/b.txt link"), "a\nb\na\n");

    let tarball = t.root.join("in.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(t.root.join("src"))
        .arg(".")
        .status()
        .unwrap();
    assert!(status.success());
    t.give_to_user(&tarball);
    t.ok(&[
        "import",
        "i",
        tarball.to_str().unwrap(),
        "--dest",
        "vendor/pkg",
    ]);
    assert_eq!(t.sh("i", "cat vendor/pkg/nested/b.txt"), "b\n");
    t.fails(
        &["import", "i", t.root.join("missing").to_str().unwrap()],
        "missing",
    );
    t.fails(
        &["import", "i", t.root.join("src/a.txt").to_str().unwrap()],
        "",
    );
});

cell_test!(reset_and_snapshots_move_between_states, |t| {
    let seed = seed(&t);
    t.create_ws("s", &["--seed", seed.to_str().unwrap()]);
    t.sh("s", "echo v1 > version");
    t.ok(&["snapshot", "create", "s", "one"]);
    t.sh("s", "echo v2 > version && rm hello.txt");
    t.ok(&["snapshot", "create", "s", "two"]);
    t.sh("s", "echo v3 > version");
    let pid_before = t.status("s")["pid"].as_u64();

    t.ok(&["reset", "s", "--to", "one"]);
    assert_eq!(
        t.sh("s", "cat version hello.txt"),
        "v1\nline one\nline two\n"
    );
    // A running cell was restarted.
    assert!(t.status("s")["pid"].as_u64() != pid_before);
    t.ok(&["reset", "s", "--to", "two"]);
    assert_eq!(
        t.sh("s", "cat version; test -e hello.txt || echo no-hello"),
        "v2\nno-hello\n"
    );
    t.ok(&["reset", "s"]);
    assert_eq!(t.sh("s", "test -e version || echo baseline"), "baseline\n");
    assert_eq!(t.ok(&["diff", "s"]), "");

    let list = t.call(&["snapshot", "list", "s", "--json"]).json();
    let names: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(list[1]["parent"], "one");
    t.fails(
        &["snapshot", "create", "s", "one"],
        "already has a snapshot named one",
    );
    t.fails(&["snapshot", "create", "s", "bad/name"], "not a valid");
    t.fails(&["reset", "s", "--to", "three"], "no snapshot named three");
    t.fails(
        &["snapshot", "delete", "s", "one"],
        "was taken on top of it",
    );
    t.ok(&["reset", "s", "--to", "two"]);
    t.fails(&["snapshot", "delete", "s", "two"], "builds on it");
    t.ok(&["reset", "s", "--to", "one"]);
    t.ok(&["snapshot", "delete", "s", "two"]);
    t.ok(&["reset", "s"]);
    t.ok(&["snapshot", "delete", "s", "one"]);
    assert_eq!(
        t.call(&["snapshot", "list", "s", "--json"]).json(),
        serde_json::json!([])
    );
});

cell_test!(the_audit_log_records_every_change, |t| {
    let seed = seed(&t);
    t.create_ws("a", &["--seed", seed.to_str().unwrap()]);
    let _ = t.exec_json("a", &["--cwd", "sub"], "exit 7");
    t.ok(&["file", "write", "a", "w.txt", "--text", "x"]);
    assert_eq!(
        t.call_with_input(&["patch", "a"], PATCH.as_bytes()).status,
        0
    );
    t.ok(&[
        "import",
        "a",
        t.root.join("seed/sub").to_str().unwrap(),
        "--dest",
        "imported",
    ]);
    t.ok(&["reset", "a"]);
    let audit = t.call(&["audit", "a", "--json"]).json();
    let kinds: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    for kind in ["create", "exec", "file.write", "patch", "import", "reset"] {
        assert!(kinds.contains(&kind), "{kind} missing from {audit}");
    }
    let exec = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "exec")
        .unwrap();
    assert_eq!(exec["subject"], "sh -c 'exit 7'");
    assert_eq!(exec["cwd"], "/workspace/sub");
    assert_eq!(exec["exit_code"], 7);
    assert!(exec["duration_ms"].is_u64() && exec["at_ms"].is_i64());
    let text = t.ok(&["audit", "a"]);
    assert!(text.contains("exit 7"), "{text}");
});

cell_test!(the_copying_fallback_keeps_the_same_promises, |mut t| {
    t.env
        .push(("BURROW_WORKSPACE_STORAGE".into(), "copy".into()));
    let seed = seed(&t);
    t.create_ws("c", &["--seed", seed.to_str().unwrap()]);
    assert_eq!(t.status("c")["storage"], "copy");
    t.sh("c", "echo v1 > version && rm gone.txt");
    let diff = t.ok(&["diff", "c"]);
    assert!(
        diff.contains("+v1") && diff.contains("-bye") && !diff.contains("hello"),
        "{diff}"
    );
    t.ok(&["snapshot", "create", "c", "one"]);
    t.sh("c", "echo v2 > version");
    t.ok(&["reset", "c", "--to", "one"]);
    assert_eq!(t.sh("c", "cat version"), "v1\n");
    t.ok(&["reset", "c"]);
    assert_eq!(t.ok(&["diff", "c"]), "");
    let out = t.root.join("out");
    t.ok(&["export", "c", "--output", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(out.join("gone.txt")).unwrap(),
        "bye\n"
    );
});

/// Copies a host directory (test fixtures only).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `root` with its content, sorted.
fn tree_of(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .display()
                    .to_string();
                files.push((name, std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}
