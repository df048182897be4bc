//! `burrow secret ...`: a workspace's secrets (names are listed, values never shown).

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::SecretCommand;
use crate::commands::workspaces::{finish, open};
use crate::report::print_json;

pub fn secret(command: &SecretCommand) -> ExitCode {
    finish(match command {
        SecretCommand::Set {
            workspace,
            name,
            value,
            from_file,
        } => (|| {
            let value = match (value, from_file) {
                (Some(value), _) => value.clone().into_bytes(),
                (None, Some(path)) => {
                    std::fs::read(path).with_context(|| path.display().to_string())?
                }
                (None, None) => {
                    let mut value = Vec::new();
                    std::io::stdin()
                        .lock()
                        .take(burrow_workspace::secrets::MAX_SECRET as u64 + 1)
                        .read_to_end(&mut value)?;
                    // A value typed or piped in ends with the newline of its line.
                    if value.ends_with(b"\n") {
                        value.pop();
                    }
                    value
                }
            };
            Ok(open()?.set_secret(workspace, name, value)?)
        })(),
        SecretCommand::Rm { workspace, name } => {
            open().and_then(|mut w| Ok(w.remove_secret(workspace, name)?))
        }
        SecretCommand::List { workspace, json } => open().and_then(|w| {
            let names = w.secret_names(workspace)?;
            if *json {
                print_json(&names);
            } else {
                for name in names {
                    println!("{name}");
                }
            }
            Ok(())
        }),
    })
}
