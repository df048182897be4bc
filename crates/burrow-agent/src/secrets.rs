//! Secrets as files: /run/secrets/NAME in the cell (its private /run), owner-read-only,
//! replaced as a set whenever the host sends them.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Where secret files appear in the cell.
pub const SECRETS_DIR: &str = "/run/secrets";

/// Makes /run/secrets hold exactly `files`.
pub fn install(files: &[(String, Vec<u8>)]) -> Result<(), String> {
    install_in(Path::new(SECRETS_DIR), files)
}

fn install_in(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<(), String> {
    let failed =
        |error: std::io::Error| format!("cannot install secrets in {}: {error}", dir.display());
    std::fs::create_dir_all(dir).map_err(failed)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    for (name, content) in files {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(format!("`{name}` is not a secret's name"));
        }
        let temp = dir.join(format!(".{name}.new"));
        let _ = std::fs::remove_file(&temp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open(&temp)
            .map_err(failed)?;
        file.write_all(content).map_err(failed)?;
        std::fs::rename(&temp, dir.join(name)).map_err(failed)?;
    }
    for entry in std::fs::read_dir(dir).map_err(failed)?.flatten() {
        let name = entry.file_name();
        if !files.iter().any(|(kept, _)| name == kept.as_str()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_replaces_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets");
        install_in(
            &secrets,
            &[("A".into(), b"one".to_vec()), ("B".into(), b"two".to_vec())],
        )
        .unwrap();
        install_in(&secrets, &[("B".into(), b"2".to_vec())]).unwrap();
        assert!(!secrets.join("A").exists());
        assert_eq!(std::fs::read(secrets.join("B")).unwrap(), b"2");
        let mode = std::fs::metadata(secrets.join("B"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o400);
        assert!(install_in(&secrets, &[("../x".into(), Vec::new())]).is_err());
    }
}
