//! The command's environment: empty but for a few variables, secrets never by accident.

use crate::cell_test;

cell_test!(only_the_base_variables_pass, |mut t| {
    t.env.push(("EDITOR".into(), "vi".into()));
    t.env.push(("TERM".into(), "xterm".into()));
    let run = t.run_json(&[], "env | cut -d= -f1 | sort | tr '\\n' ' '");
    run.assert_success();
    assert_eq!(run.stdout(), "BURROW_SANDBOX HOME LANG PATH PWD TERM ");
});

cell_test!(secret_looking_variables_need_their_exact_name, |mut t| {
    t.env.push(("GITHUB_TOKEN".into(), "ghp_secret".into()));
    t.env
        .push(("AWS_SECRET_ACCESS_KEY".into(), "aws_secret".into()));
    t.env.push(("AWS_REGION".into(), "eu-west-1".into()));
    let script = "env";
    let run = t.run_json(&["--inherit-env", "AWS_*"], script);
    assert!(run.stdout().contains("AWS_REGION=eu-west-1"), "{run:#?}");
    assert!(!run.stdout().contains("ghp_secret"), "{run:#?}");
    assert!(!run.stdout().contains("aws_secret"), "{run:#?}");
    let run = t.run_json(&["--inherit-env", "GITHUB_TOKEN"], script);
    assert!(run.stdout().contains("GITHUB_TOKEN=ghp_secret"), "{run:#?}");
});

cell_test!(env_sets_variables, |t| {
    let run = t.run_json(
        &["--env", "GREETING=hello world", "--env", "API_KEY=given"],
        "echo $GREETING $API_KEY",
    );
    assert_eq!(run.stdout(), "hello world given\n");
});
