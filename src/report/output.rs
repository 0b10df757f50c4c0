//! The output folder. Everything is written into a temporary sibling folder that replaces the
//! output folder only once every file is complete, so a failed run leaves the previous output
//! untouched and never half a new one. Only a folder shardsim wrote (it carries a marker file)
//! or an empty one is ever replaced.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::InputError;

/// The marker file that identifies a folder written by shardsim.
pub const MARKER: &str = ".shardsim-output";

/// A temporary folder that becomes the output folder on [`Staging::commit`].
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl Staging {
    /// Checks that `target` may be written and creates the temporary folder beside it.
    pub fn prepare(target: &Path) -> Result<Staging, InputError> {
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
            .map_err(|err| InputError::file(&parent, format!("cannot create the folder: {err}")))?;
        let temp = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if temp.exists() {
            let _ = fs::remove_dir_all(&temp);
        }
        fs::create_dir(&temp)
            .map_err(|err| InputError::file(&temp, format!("cannot create the folder: {err}")))?;
        Ok(Staging {
            target: target.to_path_buf(),
            temp,
            committed: false,
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

    /// Moves the finished output into place, replacing the previous output folder.
    pub fn commit(mut self) -> io::Result<()> {
        self.write(
            MARKER,
            b"written by shardsim; the whole folder is replaced by each run\n",
        )?;
        if self.target.exists() {
            let old = self.temp.with_extension("old");
            fs::rename(&self.target, &old)?;
            fs::rename(&self.temp, &self.target)?;
            fs::remove_dir_all(&old)?;
        } else {
            fs::rename(&self.temp, &self.target)?;
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
    let is_ours = target.join(MARKER).is_file();
    let is_empty = fs::read_dir(target)
        .map(|mut entries| entries.next().is_none())
        .unwrap_or(false);
    if !is_ours && !is_empty {
        return Err(InputError::file(
            target,
            "exists and was not written by shardsim: choose an empty or new folder with --out",
        ));
    }
    Ok(())
}
