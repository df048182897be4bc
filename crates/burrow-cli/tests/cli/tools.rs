//! Ordinary tools work inside a cell, and the host backend behaves as documented.

use crate::cell_test;

cell_test!(shell_and_python_work, |t| {
    let run = t.run_json(&[], "echo $((6*7)); python3 -c 'import json,sys; print(json.dumps({\"ok\": sys.version_info[0]}))'");
    run.assert_success();
    assert_eq!(run.stdout(), "42\n{\"ok\": 3}\n");
});

cell_test!(git_works_in_a_writable_repository, |t| {
    let run = t.run_json(
        &crate::harness::GIT_IDENTITY,
        "git init -q repo && cd repo && echo hi > f && git add f && git commit -qm first && git log --format=%s",
    );
    run.assert_success();
    assert_eq!(run.stdout(), "first\n");
});

cell_test!(cargo_works_wherever_it_works_on_the_host, |t| {
    let Some(cargo) = which_cargo() else {
        return;
    };
    let script = format!("{} --version", cargo.display());
    let control = t.run_on_host(&[], &script);
    if control.exit_code() != 0 {
        // This user cannot run the host's cargo at all (it lives in root's home): nothing to
        // compare with.
        return;
    }
    let run = t.run_json(&[], &script);
    run.assert_success();
    assert!(run.stdout().starts_with("cargo "), "{run:#?}");
});

fn which_cargo() -> Option<std::path::PathBuf> {
    std::env::var_os("CARGO")
        .map(std::path::PathBuf::from)
        .filter(|path| path.is_file())
}

cell_test!(the_host_backend_runs_in_its_own_process_group, |t| {
    let run = t.run_on_host(&[], "ps -o pid=,pgid= -p $$");
    run.assert_success();
    let fields: Vec<&str> = run.stdout().split_whitespace().collect();
    assert_eq!(fields[0], fields[1], "{run:#?}");
});

cell_test!(the_host_backend_applies_limits_and_timeouts, |t| {
    let run = t.run_on_host(&["--max-file-size", "1M"], "head -c 5M /dev/zero > big");
    assert_ne!(run.exit_code(), 0, "{run:#?}");
    let run = t.run_on_host(&["--timeout", "1"], "sleep 30");
    assert_eq!(run.exit_code(), 124);
    let run = t.run_on_host(&[], "echo out; exit 4");
    assert_eq!(run.exit_code(), 4);
    assert_eq!(run.stdout(), "out\n");
});
