//! The output folder, and every other file the tool writes. Everything is written into a
//! temporary sibling that replaces its target only once complete, so a failed or killed run
//! leaves the previous output whole and never half a new one.
//!
//! An output folder is replaced only when it is empty or when everything in it is listed in
//! its marker file (the files shardsim wrote there), or is itself such a folder (a run made
//! inside an earlier output); a folder holding anything else — a file the user added, before
//! or during the run — is refused, naming that file. A single file (a baseline, a JUnit
//! report) is replaced only when it looks like one shardsim wrote, or when the user says so.
//!
//! Temporary names carry the host, the process id and a random token, and hold a stamp file,
//! so two writers on different machines never take each other's, and a leftover is removed
//! only when the same host shows that its process is gone. A second writer of a folder that
//! another run is writing is refused, naming that run's host, process and temporary folder. On Linux the finished folder is
//! swapped with the previous one in one atomic exchange.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::error::{InputError, IoFailure};

/// The marker file that identifies a folder written by shardsim and lists its files.
pub const MARKER: &str = ".shardsim-output";
/// The marker's first line; the files it lists follow, one a line.
const MARKER_HEADER: &str = "# written by shardsim; the files below are replaced by each run";
/// The stamp inside a temporary folder: which host and process is writing it.
const STAMP: &str = ".shardsim-staging";
/// What a temporary name holds between the target's name and the writer's host.
const PARTIAL: &str = ".partial.";
/// How deep a folder may nest earlier outputs and still count as shardsim's.
const MAX_NESTING: usize = 8;
/// The most bytes of an existing file read to tell whether shardsim wrote it.
const SNIFF_BYTES: u64 = 4096;

/// A temporary folder that becomes the output folder on [`Staging::commit`].
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
    /// Removes the temporary folder if the run is interrupted before the commit.
    on_interrupt: Option<crate::interrupt::Cleanup>,
}

impl Staging {
    /// Checks that `target` may be written and creates the temporary folder beside it (after
    /// restoring a previous output that a killed run left half-moved, and removing the
    /// temporary folders of runs that died on this host).
    pub fn prepare(target: &Path) -> anyhow::Result<Staging> {
        let (parent, name) = place(target)?;
        fs::create_dir_all(&parent)
            .map_err(|err| IoFailure::new(target, format!("cannot create the folder: {err}")))?;
        recover_leftovers(&parent, &name, target);
        refuse_another_writer(&parent, &name, target)?;
        check_replaceable(target)?;
        let temp = parent.join(temporary_name(&name, Kind::Partial));
        // Registered before it exists, so a signal at any moment from here removes it.
        let on_interrupt = register(&temp, target);
        let cannot = |err: io::Error| IoFailure::new(target, format!("cannot write here: {err}"));
        fs::create_dir(&temp).map_err(cannot)?;
        // A kill here leaves an empty folder, which the next run knows for a dead run's.
        crate::faults::at("staging-made");
        if let Err(err) = fs::write(temp.join(STAMP), stamp()) {
            // A full disk: nothing of this run is left behind.
            let _ = fs::remove_dir_all(&temp);
            return Err(cannot(err).into());
        }
        Ok(Staging {
            target: target.to_path_buf(),
            temp,
            committed: false,
            on_interrupt: Some(on_interrupt),
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
    /// lists every file written. Refused, naming the file, when something not shardsim's
    /// appeared in the output folder during the run.
    ///
    /// An interrupt cannot cut into the step that puts the results in place and removes the
    /// previous ones: before it, the interrupt removes the new results and leaves the previous
    /// ones untouched; during it, it waits, and then says the new results are in place — with
    /// nothing of the previous output left behind.
    pub fn commit(mut self) -> anyhow::Result<()> {
        use crate::faults::at;
        check_replaceable(&self.target)?;
        let fail = |err: io::Error| {
            IoFailure::new(&self.target, format!("cannot move the results here: {err}"))
        };
        let mut names: Vec<String> = fs::read_dir(&self.temp)
            .map_err(fail)?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name != STAMP)
            .collect();
        names.sort();
        let marker = format!("{MARKER_HEADER}\n{}\n", names.join("\n"));
        self.write(MARKER, marker.as_bytes()).map_err(fail)?;
        at("commit-marked");
        // From here the folder is recognised by its marker.
        fs::remove_file(self.temp.join(STAMP)).map_err(fail)?;
        at("commit-unstamped");
        let held = crate::interrupt::hold_off();
        at("commit-held");
        let previous = if fs::symlink_metadata(&self.target).is_ok() {
            Some(swap_into_place(&self.temp, &self.target).map_err(fail)?)
        } else {
            fs::rename(&self.temp, &self.target).map_err(fail)?;
            None
        };
        at("commit-swapped");
        self.committed = true;
        self.on_interrupt = None;
        crate::interrupt::note_done(format!(
            "the new results are in place in {}",
            self.target.display()
        ));
        if let Some(previous) = previous {
            remove_previous(&previous);
        }
        drop(held);
        at("commit-released");
        at("commit-done");
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

/// Puts the finished folder `temp` in the place of `target` and returns where the previous
/// output now is. On Linux the two are exchanged in one step, so `target` always holds a whole
/// output; elsewhere (or on a file system without the exchange) the previous output is first
/// moved aside under a name the next run recognises and restores if this process dies in
/// between.
fn swap_into_place(temp: &Path, target: &Path) -> io::Result<PathBuf> {
    if exchange(temp, target).is_ok() {
        return Ok(temp.to_path_buf());
    }
    let (parent, name) = place(target).map_err(|err| io::Error::other(err.to_string()))?;
    let old = parent.join(temporary_name(&name, Kind::Old));
    fs::rename(target, &old)?;
    fs::rename(temp, target)?;
    Ok(old)
}

/// Removes a previous output after the new one took its place. It is stamped first and the
/// stamp removed last, so that a kill midway leaves a folder the next run knows for a dead
/// run's and removes; a failure leaves it for that run too (the new results are in place).
fn remove_previous(folder: &Path) {
    let _ = fs::write(folder.join(STAMP), stamp());
    if let Ok(entries) = fs::read_dir(folder) {
        for entry in entries.filter_map(|entry| entry.ok()) {
            if entry.file_name() == STAMP {
                continue;
            }
            let _ = match entry.file_type() {
                Ok(kind) if kind.is_dir() => fs::remove_dir_all(entry.path()),
                _ => fs::remove_file(entry.path()),
            };
        }
    }
    let _ = fs::remove_file(folder.join(STAMP));
    let _ = fs::remove_dir(folder);
}

#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Writes one file outside an output folder — a baseline, a JUnit report — atomically: into a
/// temporary file beside it that is then renamed over it, so a full disk or a kill leaves the
/// previous file whole. An existing file is replaced only when `ours` says shardsim wrote it
/// (given its first bytes), or with `overwrite`; `what` names the file kind in the refusal.
pub fn write_file(
    path: &Path,
    bytes: &[u8],
    ours: &dyn Fn(&[u8]) -> bool,
    overwrite: bool,
    what: &str,
) -> anyhow::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.is_file() => {
            return Err(InputError::file(
                path,
                format!("exists and is not a regular file, so it is not replaced by the {what}: name a file"),
            )
            .into());
        }
        Ok(_) if !overwrite && !ours(&read_head(path)?) => {
            return Err(InputError::file(
                path,
                format!(
                    "exists and is not a {what} shardsim wrote, so it is not replaced: name another file, or pass --overwrite"
                ),
            )
            .into());
        }
        _ => {}
    }
    let (parent, name) = place(path)?;
    fs::create_dir_all(&parent).map_err(|err| IoFailure::new(&parent, err))?;
    remove_stale(&parent, &name);
    let temp = parent.join(temporary_name(&name, Kind::Partial));
    let written = write_synced(&temp, bytes).and_then(|()| fs::rename(&temp, path));
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(IoFailure::new(path, format!("cannot write: {err}")).into());
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The first [`SNIFF_BYTES`] of a file.
fn read_head(path: &Path) -> Result<Vec<u8>, InputError> {
    let mut head = Vec::new();
    fs::File::open(path)
        .and_then(|file| file.take(SNIFF_BYTES).read_to_end(&mut head))
        .map_err(|err| InputError::file(path, format!("cannot read it: {err}")))?;
    Ok(head)
}

/// Refuses, before any work, a destination that cannot be one (`DIR/.`, `DIR/..`, `/`): what
/// [`Staging::prepare`] would refuse after the work.
pub fn check_destination(target: &Path) -> Result<(), InputError> {
    place(target).map(|_| ())
}

/// The folder a target sits in and its own name; a target that names no file or folder of its
/// own (`DIR/.`, `DIR/..`, `/`) is refused.
fn place(target: &Path) -> Result<(PathBuf, String), InputError> {
    let raw = target.as_os_str().to_string_lossy();
    let last = raw
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if matches!(last, "" | "." | "..") {
        return Err(InputError::file(
            target,
            "cannot be written: name a file or folder of its own (not `.`, `..` or `/`)",
        ));
    }
    let name = target
        .file_name()
        .ok_or_else(|| InputError::file(target, "cannot be written: name a file or folder"))?
        .to_string_lossy()
        .into_owned();
    let parent = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

/// What a temporary sibling is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A new output (or file) being written.
    Partial,
    /// A previous output moved aside during a commit.
    Old,
}

impl Kind {
    fn infix(self) -> &'static str {
        match self {
            Kind::Partial => PARTIAL,
            Kind::Old => ".old.",
        }
    }
}

/// `.NAME.partial.HOST.PID.TOKEN`: unique across hosts and processes.
fn temporary_name(name: &str, kind: Kind) -> String {
    use std::hash::{BuildHasher, Hasher};
    let token = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!(
        ".{name}{}{}.{}.{:08x}",
        kind.infix(),
        host(),
        std::process::id(),
        token as u32
    )
}

/// The host and process that write a temporary folder.
fn stamp() -> String {
    format!("host {}\npid {}\n", host(), std::process::id())
}

/// This machine's name, with dots and anything unusual made `-` (it sits inside a file name
/// whose other parts are separated by dots).
fn host() -> String {
    #[cfg(target_os = "linux")]
    let name = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    #[cfg(not(target_os = "linux"))]
    let name = std::env::var("HOSTNAME")
        .or_else(|_| std::env::var("COMPUTERNAME"))
        .unwrap_or_default();
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "localhost".to_owned()
    } else {
        cleaned
    }
}

/// A temporary sibling of `name` of `kind` written on this host by a process that is gone.
fn dead_leftover(file_name: &str, name: &str, kind: Kind) -> bool {
    let Some(rest) = file_name.strip_prefix(&format!(".{name}{}", kind.infix())) else {
        return false;
    };
    let mut parts = rest.rsplitn(3, '.');
    let (Some(_token), Some(pid), Some(writer)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    writer == host() && pid != std::process::id() && !process_alive(pid)
}

/// Whether a leftover is really shardsim's: a file by its name, a folder by its stamp or its
/// marker, or an empty folder (a kill between making it and stamping it); a user's folder
/// that merely has such a name is kept.
fn is_ours(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => true,
        Ok(meta) if meta.is_dir() => {
            path.join(STAMP).is_file()
                || listed_files(&path.join(MARKER)).is_some()
                || fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none())
        }
        _ => false,
    }
}

/// Restores a previous output that a run killed in the middle of its commit left aside
/// (when the target is missing), and removes the temporary siblings of dead runs.
fn recover_leftovers(parent: &Path, name: &str, target: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|entry| entry.ok()) {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if dead_leftover(&file_name, name, Kind::Old) && is_ours(&entry.path()) {
            if fs::symlink_metadata(target).is_err() {
                let _ = fs::rename(entry.path(), target);
            } else {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    remove_stale(parent, name);
}

/// Refuses to write `target` while another run writes it: a temporary folder of `name` that
/// is not a dead run's of this host (those are gone by now) belongs to a live run here or to a
/// run on another host, whose liveness this host cannot see.
fn refuse_another_writer(parent: &Path, name: &str, target: &Path) -> Result<(), IoFailure> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Ok(());
    };
    let prefix = format!(".{name}{PARTIAL}");
    for entry in entries.filter_map(|entry| entry.ok()) {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if !file_name.starts_with(&prefix) || !path.is_dir() || !path.join(STAMP).is_file() {
            continue;
        }
        let stamp = fs::read_to_string(path.join(STAMP)).unwrap_or_default();
        let field = |key: &str| {
            stamp
                .lines()
                .find_map(|line| line.strip_prefix(key))
                .map_or("?".to_owned(), |value| value.trim().to_owned())
        };
        return Err(IoFailure::new(
            target,
            format!(
                "another shardsim is writing this folder (host {}, process {}, into {}): wait for it to end, \
                 or remove that folder if that run is gone",
                field("host "),
                field("pid "),
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Removes temporary siblings of `name` left on this host by processes that no longer run.
fn remove_stale(parent: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(|entry| entry.ok()) {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if dead_leftover(&file_name, name, Kind::Partial) && is_ours(&path) {
            if path.is_dir() {
                let _ = fs::remove_dir_all(&path);
            } else {
                let _ = fs::remove_file(&path);
            }
        }
    }
}

/// Removes the temporary folder if the run is interrupted; the returned guard unregisters it.
fn register(temp: &Path, target: &Path) -> crate::interrupt::Cleanup {
    let folder = temp.to_path_buf();
    let note = if fs::symlink_metadata(target).is_ok() {
        format!(
            "nothing was written; the previous results in {} are untouched",
            target.display()
        )
    } else {
        "nothing was written".to_owned()
    };
    crate::interrupt::on_interrupt(note, move || {
        // A worker may still be writing a file into it: try again if it reappears.
        for _ in 0..3 {
            let _ = fs::remove_dir_all(&folder);
            if !folder.exists() {
                break;
            }
        }
    })
}

/// Whether a process with this id runs (Linux's `/proc`; elsewhere assume it does, so nothing
/// of a live run is removed). A process killed but not yet reaped by its parent (a zombie,
/// state `Z`, or `X` as it goes) runs no more and writes nothing.
fn process_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return true;
    }
    match fs::read_to_string(proc.join(pid.to_string()).join("stat")) {
        Ok(stat) => !matches!(process_state(&stat), Some('Z' | 'X' | 'x')),
        Err(_) => proc.join(pid.to_string()).exists(),
    }
}

/// The state letter of a `/proc/PID/stat` line: the field after the command name, which is in
/// parentheses and may itself hold spaces and parentheses.
fn process_state(stat: &str) -> Option<char> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// The files a marker lists, or `None` when the file is not a marker shardsim wrote.
fn listed_files(marker: &Path) -> Option<BTreeSet<String>> {
    let meta = fs::symlink_metadata(marker).ok()?;
    if !meta.is_file() || meta.len() > 1 << 20 {
        return None;
    }
    let text = fs::read_to_string(marker).ok()?;
    let mut lines = text.lines();
    (lines.next()? == MARKER_HEADER).then(|| lines.map(str::to_owned).collect())
}

/// The entries of a folder that shardsim did not write: neither listed in its marker nor an
/// earlier output made inside it. `None` when the folder has no marker of shardsim's.
fn foreign_entries(folder: &Path, depth: usize) -> io::Result<Option<Vec<String>>> {
    let Some(listed) = listed_files(&folder.join(MARKER)) else {
        return Ok(None);
    };
    let mut foreign = Vec::new();
    for entry in fs::read_dir(folder)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // A listed name is ours only as the regular file shardsim wrote: a user's folder or
        // link that took an artefact's name is theirs.
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && (name == MARKER || listed.contains(&name)) {
            continue;
        }
        let nested_output = entry.file_type().is_ok_and(|t| t.is_dir())
            && holds_only_outputs(&entry.path(), depth + 1);
        if !nested_output {
            foreign.push(name);
        }
    }
    foreign.sort();
    Ok(Some(foreign))
}

/// Whether a folder is an output of shardsim's, or holds nothing but such outputs (the
/// `output/` folder of a run made inside an earlier output).
fn holds_only_outputs(folder: &Path, depth: usize) -> bool {
    if depth > MAX_NESTING {
        return false;
    }
    if let Ok(Some(foreign)) = foreign_entries(folder, depth) {
        return foreign.is_empty();
    }
    let Ok(entries) = fs::read_dir(folder) else {
        return false;
    };
    let mut any = false;
    for entry in entries {
        let Ok(entry) = entry else { return false };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir || !holds_only_outputs(&entry.path(), depth + 1) {
            return false;
        }
        any = true;
    }
    any
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
    let unreadable =
        |err: io::Error| InputError::file(target, format!("cannot read the folder: {err}"));
    if fs::read_dir(target).map_err(unreadable)?.next().is_none() {
        return Ok(());
    }
    let marker = target.join(MARKER);
    let Some(foreign) = foreign_entries(target, 0).map_err(unreadable)? else {
        let message = if marker.is_file() {
            // An older shardsim's marker, or an empty one: it does not say which files are ours.
            "has a marker that does not list shardsim's files (an older version's, or a foreign one), so it is \
             not replaced: remove the folder or choose another with --out"
        } else {
            "exists and was not written by shardsim: choose an empty or new folder with --out"
        };
        return Err(InputError::file(target, message));
    };
    if let Some(first) = foreign.first() {
        let others = match foreign.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        return Err(InputError::file(
            &target.join(first),
            format!(
                "was not written by shardsim{others}, so the output folder is not replaced; \
                 move it away or choose another folder with --out"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit_one(target: &Path, file: &str) {
        let staging = Staging::prepare(target).unwrap();
        staging.write(file, b"x\n").unwrap();
        staging.commit().unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_folder_is_replaced_only_with_exactly_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        commit_one(&target, "summary.csv");
        let listed = listed_files(&target.join(MARKER)).unwrap();
        assert_eq!(listed, BTreeSet::from(["summary.csv".to_owned()]));
        commit_one(&target, "summary.csv");
        assert_eq!(names(dir.path()), ["out"], "nothing left beside it");
        assert_eq!(names(&target), [MARKER, "summary.csv"]);
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
    fn an_output_made_inside_an_earlier_output_is_shardsims() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("final");
        commit_one(&target, "summary.csv");
        commit_one(&target.join("output").join("final"), "summary.csv");
        assert!(check_replaceable(&target).is_ok());
        fs::write(target.join("output/final/mine.txt"), b"mine").unwrap();
        let err = check_replaceable(&target).unwrap_err().to_string();
        assert!(err.contains("output"), "{err}");
    }

    #[test]
    fn a_file_added_during_the_run_stops_the_commit_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        commit_one(&target, "summary.csv");
        let staging = Staging::prepare(&target).unwrap();
        staging.write("summary.csv", b"new\n").unwrap();
        fs::write(target.join("notes.txt"), b"mine").unwrap();
        let err = staging.commit().unwrap_err().to_string();
        assert!(err.contains("notes.txt"), "{err}");
        assert_eq!(fs::read(target.join("notes.txt")).unwrap(), b"mine");
        assert_eq!(fs::read(target.join("summary.csv")).unwrap(), b"x\n");
        assert_eq!(names(dir.path()), ["out"], "the new results are removed");
    }

    #[test]
    fn only_this_hosts_dead_leftovers_are_removed_and_a_users_folders_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dead = format!(".out{PARTIAL}{}.999999999.0000abcd", host());
        fs::create_dir(dir.path().join(&dead)).unwrap();
        fs::write(dir.path().join(&dead).join(STAMP), stamp()).unwrap();
        let elsewhere = format!(".out{PARTIAL}another-host.999999999.0000abcd");
        fs::create_dir(dir.path().join(&elsewhere)).unwrap();
        fs::write(dir.path().join(&elsewhere).join(STAMP), stamp()).unwrap();
        let unstamped = format!(".out{PARTIAL}{}.999999998.0000abcd", host());
        let users = [".out.old", ".out.partial-999999999", unstamped.as_str()];
        for name in users {
            fs::create_dir(dir.path().join(name)).unwrap();
            fs::write(dir.path().join(name).join("thesis.tex"), b"years").unwrap();
        }
        // Another host's run may still be writing: refused, naming its folder.
        let refused = Staging::prepare(&dir.path().join("out")).unwrap_err();
        assert!(refused.to_string().contains(&elsewhere), "{refused}");
        let left = names(dir.path());
        assert!(!left.contains(&dead), "{left:?}");
        assert!(
            left.contains(&elsewhere),
            "another host's is not judged here"
        );
        for name in users {
            assert!(left.iter().any(|n| n == name), "{name} kept: {left:?}");
        }
        fs::remove_dir_all(dir.path().join(&elsewhere)).unwrap();
        commit_one(&dir.path().join("out"), "summary.csv");
        for name in users {
            assert!(dir.path().join(name).join("thesis.tex").is_file(), "{name}");
        }
    }

    #[test]
    fn a_previous_output_left_aside_by_a_killed_commit_is_restored() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        commit_one(&target, "summary.csv");
        let aside = dir
            .path()
            .join(format!(".out.old.{}.999999999.0000abcd", host()));
        fs::rename(&target, &aside).unwrap();
        let staging = Staging::prepare(&target).unwrap();
        assert!(
            target.join("summary.csv").is_file(),
            "restored before the run"
        );
        drop(staging);
        assert_eq!(names(dir.path()), ["out"]);
    }

    #[test]
    fn a_single_file_replaces_only_its_own_kind_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.xml");
        let ours = |head: &[u8]| head.starts_with(b"<ours>");
        write_file(&path, b"<ours>1", &ours, false, "report").unwrap();
        write_file(&path, b"<ours>2", &ours, false, "report").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"<ours>2");
        fs::write(&path, b"my notes").unwrap();
        let err = write_file(&path, b"<ours>3", &ours, false, "report").unwrap_err();
        assert!(err.to_string().contains("--overwrite"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"my notes");
        write_file(&path, b"<ours>4", &ours, true, "report").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"<ours>4");
        let folder = dir.path().join("folder");
        fs::create_dir(&folder).unwrap();
        assert!(write_file(&folder, b"<ours>", &ours, true, "report").is_err());
        assert_eq!(
            names(dir.path()),
            ["folder", "report.xml"],
            "no temporary file left"
        );
    }
}
