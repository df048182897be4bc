//! `burrow doctor`: what this host offers, what is missing, and how to fix it.

use std::process::ExitCode;

use burrow_sandbox::probe::{self, Status};

use crate::context::path_context;
use crate::exit;

/// Prints the host report; exits 1 when a required feature is missing.
pub fn doctor(json: bool) -> ExitCode {
    let context = match path_context(None) {
        Ok(context) => context,
        Err(error) => return exit::fail(&error),
    };
    let report = probe::probe(&context);
    if json {
        match serde_json::to_string(&report) {
            Ok(text) => println!("{text}"),
            Err(error) => return exit::fail(&format!("cannot encode the report: {error}")),
        }
    } else {
        println!(
            "burrow doctor: Linux {} on {}, running as {}",
            report.kernel,
            report.arch,
            if report.root {
                "root"
            } else {
                "an unprivileged user"
            }
        );
        for check in &report.checks {
            let status = match check.status {
                Status::Ok => "ok",
                Status::Partial => "partial",
                Status::Missing => "MISSING",
            };
            println!("  {status:<8} {:<16} {}", check.name, check.detail);
            if let Some(fix) = &check.fix {
                println!("  {:<8} {:<16} fix: {fix}", "", "");
            }
        }
    }
    if report.healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
