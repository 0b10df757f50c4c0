//! The output folder. Everything is written into a temporary sibling folder that replaces the
//! output folder only once every file is complete, so a failed run leaves the previous output
//! untouched and never half a new one. A folder is replaced only when it is empty or when
//! everything in it is listed in its marker file (the files shardsim wrote there): a folder
//! holding anything else — a file the user added — is refused, naming that file. The
//! temporary folder is removed when the run fails, on SIGINT and SIGTERM, and, if its process
//! died without cleaning up, by the next run that writes beside it.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{InputError, IoFailure};

/// The marker file that identifies a folder written by shardsim and lists its files.
pub const MARKER: &str = ".shardsim-output";
/// The marker's first line; the files it lists follow, one a line.
const MARKER_HEADER: &str = "# written by shardsim; the files below are replaced by each run";
/// What a temporary folder's name holds between the output's name and the process id.
const PARTIAL: &str = ".partial-";

/// A temporary folder that becomes the output folder on [`Staging::commit`].
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
    /// Removes the temporary folder if the run is interrupted.
    _on_interrupt: crate::interrupt::Cleanup,
}

impl Staging {
    /// Checks that `target` may be written and creates the temporary folder beside it.
    pub fn prepare(target: &Path) -> anyhow::Result<Staging> {
        check_replaceable(target)?;
        let name = target
            .file_name()
            .ok_or_else(|| InputError::file(target, "cannot be an output folder: name a folder"))?
            .to_string_lossy()
            .into_owned();
        let parent = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent)
            .map_err(|err| IoFailure::new(target, format!("cannot create the folder: {err}")))?;
        remove_stale(&parent, &name);
        let temp = parent.join(format!(".{name}{PARTIAL}{}", std::process::id()));
        if temp.exists() {
            let _ = fs::remove_dir_all(&temp);
        }
        // Registered before it exists, so a signal at any moment from here removes it.
        let on_interrupt = register(&temp);
        fs::create_dir(&temp)
            .map_err(|err| IoFailure::new(target, format!("cannot write here: {err}")))?;
        Ok(Staging {
            target: target.to_path_buf(),
            temp,
            committed: false,
            _on_interrupt: on_interrupt,
        })
    }

    /// The final output folder.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where a file of the output is written before the commit.
    pub fn path(&self, file_name: &str) -> PathBuf {
        self.temp.join(file_name)
    }

    /// Writes one file of the output.
    pub fn write(&self, file_name: &str, bytes: &[u8]) -> io::Result<()> {
        fs::write(self.path(file_name), bytes)
    }

    /// Moves the finished output into place, replacing the previous output folder; the marker
    /// lists every file written.
    pub fn commit(mut self) -> Result<(), IoFailure> {
        let fail = |err: io::Error| {
            IoFailure::new(&self.target, format!("cannot move the results here: {err}"))
        };
        let mut names: Vec<String> = fs::read_dir(&self.temp)
            .map_err(fail)?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let marker = format!("{MARKER_HEADER}\n{}\n", names.join("\n"));
        self.write(MARKER, marker.as_bytes()).map_err(fail)?;
        if self.target.exists() {
            let old = self.temp.with_extension("old");
            fs::rename(&self.target, &old).map_err(fail)?;
            fs::rename(&self.temp, &self.target).map_err(fail)?;
            fs::remove_dir_all(&old).map_err(fail)?;
        } else {
            fs::rename(&self.temp, &self.target).map_err(fail)?;
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.temp);
        }
    }
}

/// Removes the temporary folder if the run is interrupted; the returned guard unregisters it.
fn register(temp: &Path) -> crate::interrupt::Cleanup {
    let folder = temp.to_path_buf();
    crate::interrupt::on_interrupt("nothing was written", move || {
        // A worker may still be writing a file into it: try again if it reappears.
        for _ in 0..3 {
            let _ = fs::remove_dir_all(&folder);
            if !folder.exists() {
                break;
            }
        }
    })
}

/// Removes temporary folders of `name` left by processes that no longer run.
fn remove_stale(parent: &Path, name: &str) {
    let prefix = format!(".{name}{PARTIAL}");
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|entry| entry.ok()) {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file_name.strip_prefix(&prefix) else {
            continue;
        };
        let pid = rest.strip_suffix(".old").unwrap_or(rest);
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid != std::process::id() && !process_alive(pid) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a process with this id runs (Linux's `/proc`; elsewhere assume it does, so nothing
/// of a live run is removed).
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// The files a marker lists, or `None` when the file is not a marker shardsim wrote.
fn listed_files(marker: &Path) -> Option<BTreeSet<String>> {
    let text = fs::read_to_string(marker).ok()?;
    let mut lines = text.lines();
    (lines.next()? == MARKER_HEADER).then(|| lines.map(str::to_owned).collect())
}

fn check_replaceable(target: &Path) -> Result<(), InputError> {
    let Ok(metadata) = fs::symlink_metadata(target) else {
        return Ok(());
    };
    if !metadata.is_dir() {
        return Err(InputError::file(
            target,
            "exists and is not a folder: choose another output folder with --out",
        ));
    }
    let entries: Vec<String> = fs::read_dir(target)
        .map_err(|err| InputError::file(target, format!("cannot read the folder: {err}")))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    let marker = target.join(MARKER);
    let Some(listed) = listed_files(&marker) else {
        let message = if marker.is_file() {
            // An older shardsim's marker, or an empty one: it does not say which files are ours.
            "has a marker that does not list shardsim's files (an older version's, or a foreign one), so it is \
             not replaced: remove the folder or choose another with --out"
        } else {
            "exists and was not written by shardsim: choose an empty or new folder with --out"
        };
        return Err(InputError::file(target, message));
    };
    let mut foreign: Vec<&String> = entries
        .iter()
        .filter(|name| name.as_str() != MARKER && !listed.contains(name.as_str()))
        .collect();
    foreign.sort();
    if let Some(first) = foreign.first() {
        return Err(InputError::file(
            &target.join(first),
            format!(
                "was not written by shardsim, so the output folder is not replaced ({} such file(s)); \
                 move it away or choose another folder with --out",
                foreign.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_replaced_only_with_exactly_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let staging = Staging::prepare(&target).unwrap();
        staging.write("summary.csv", b"x\n").unwrap();
        staging.commit().unwrap();
        let listed = listed_files(&target.join(MARKER)).unwrap();
        assert!(listed.contains("summary.csv"));
        assert!(check_replaceable(&target).is_ok());
        fs::write(target.join("notes.txt"), b"mine").unwrap();
        let err = check_replaceable(&target).unwrap_err().to_string();
        assert!(err.contains("notes.txt"), "{err}");
    }

    #[test]
    fn an_empty_marker_does_not_make_a_folder_ours() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(MARKER), b"").unwrap();
        fs::write(dir.path().join("precious.txt"), b"mine").unwrap();
        assert!(check_replaceable(dir.path()).is_err());
    }

    #[test]
    fn stale_temporary_folders_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join(format!(".out{PARTIAL}999999999"));
        fs::create_dir(&stale).unwrap();
        let _staging = Staging::prepare(&dir.path().join("out")).unwrap();
        assert!(!stale.exists());
    }
}
