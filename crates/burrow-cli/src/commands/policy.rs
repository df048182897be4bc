//! `burrow policy check FILE`.

use std::path::Path;
use std::process::ExitCode;

use burrow_policy::Policy;

use crate::exit;

/// Validates a policy file and prints it with every default made explicit. Exit 0 when valid,
/// 1 (with a one-line error naming the key) when not.
pub fn check(file: &Path, json: bool) -> ExitCode {
    let policy = match Policy::load(file) {
        Ok(policy) => policy,
        Err(error) => {
            eprintln!("burrow: {}", exit::one_line(&error.to_string()));
            return ExitCode::from(1);
        }
    };
    let effective = policy.to_file();
    let text = if json {
        serde_json::to_string_pretty(&effective).map_err(|e| e.to_string())
    } else {
        toml::to_string(&effective).map_err(|e| e.to_string())
    };
    match text {
        Ok(text) => {
            print!("{text}");
            if json {
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(error) => exit::fail(&format!("cannot print the policy: {error}")),
    }
}
