//! Reading the user's files: only regular files, checked before they are opened (opening a
//! FIFO waits for a writer, a device such as `/dev/zero` never ends), and a file read whole no
//! larger than its caller allows, so a wrong path costs a one-line error, not the machine's
//! memory.

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

use crate::error::InputError;
use crate::units::human_bytes;

/// The most bytes of a scenario file.
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;
/// The most bytes of a baseline summary.
pub const MAX_BASELINE_BYTES: u64 = 256 << 20;
/// The most bytes of a slice's manifest.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// The most bytes of a password file.
pub const MAX_PASSWORD_FILE_BYTES: u64 = 1 << 20;

/// Checks that `path` is a regular file (following links) before it is opened; `what` names
/// it in the error ("the scenario").
pub fn check_regular(path: &Path, what: &str) -> Result<fs::Metadata, InputError> {
    let meta = fs::metadata(path)
        .map_err(|err| InputError::file(path, format!("cannot read {what}: {err}")))?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file (a pipe or a device)"
        };
        return Err(InputError::file(
            path,
            format!("is {kind}, and {what} must be a file"),
        ));
    }
    Ok(meta)
}

/// Reads a regular file of at most `max_bytes` as UTF-8 text; `what` names it in errors.
pub fn read_text(path: &Path, max_bytes: u64, what: &str) -> Result<String, InputError> {
    let meta = check_regular(path, what)?;
    let too_big = |size: u64| {
        InputError::file(
            path,
            format!(
                "is {}, more than {what} may be ({}): is it the right file?",
                human_bytes(size),
                human_bytes(max_bytes)
            ),
        )
    };
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|file| file.take(max_bytes + 1).read_to_end(&mut bytes))
        .map_err(|err| InputError::file(path, format!("cannot read {what}: {err}")))?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes)
        .map_err(|err| InputError::file(path, format!("{what} is not UTF-8 text: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_folders_and_large_files_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let zero = read_text(Path::new("/dev/zero"), 1 << 20, "the scenario").unwrap_err();
        assert!(zero.to_string().contains("not a regular file"), "{zero}");
        let folder = read_text(dir.path(), 1 << 20, "the scenario").unwrap_err();
        assert!(folder.to_string().contains("a folder"), "{folder}");
        let big = dir.path().join("big.toml");
        fs::write(&big, vec![b'#'; 2048]).unwrap();
        let err = read_text(&big, 1024, "the scenario")
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 KiB") && err.contains("1 KiB"), "{err}");
        assert_eq!(read_text(&big, 4096, "the scenario").unwrap().len(), 2048);
    }
}
