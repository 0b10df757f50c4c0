//! What the machine the load runs on does to what it measures. A load driver on the server's
//! own Linux machine shares its cores, and with autogroup on (`kernel.sched_autogroup_enabled
//! = 1`, the default of most distributions) the kernel schedules each session as one group and
//! shares the cores between the groups: a driver thread woken for a timed send or an answer
//! waits while the server's busy group runs out its time slice, and a row's holder may wait for
//! the driver's. A client on another machine waits for neither, and neither does the model.
//! Measured on this project's 2-core machine, an open stream of 20,000 updates/s over 16 rows
//! and 64 connections without durable commits answered in 1.0 ms at the median and 6.0 ms at
//! the p99 with autogroup, 0.31 ms and 1.9 ms without.

use std::path::{Path, PathBuf};

use super::backend::{DbFailure, Target};

/// The notice when the load and the server are in different autogroups of this machine.
pub const AUTOGROUP_NOTICE: &str = "note: the load runs on the server's machine in another \
    scheduling group (Linux autogroup is on), so its threads wait for the server's time slices \
    and its responses are longer than a client's on another machine would be (3× at an open \
    stream's median and p99 near the machine's capacity); run it from another machine, or with \
    kernel.sched_autogroup_enabled = 0 while it runs";

/// Whether the load's times on `target` include the waits of [`AUTOGROUP_NOTICE`]: `Some`
/// (that notice) when the server's process for this connection runs on this machine, in
/// another autogroup than this process, with autogroup scheduling on.
pub fn scheduling_notice(target: &Target) -> Result<Option<&'static str>, DbFailure> {
    let mut session = target.connect()?;
    let separate = session.server_process().is_some_and(|server| {
        in_other_autogroup(Path::new("/proc"), &server.pid.to_string(), server.command)
    });
    Ok(separate.then_some(AUTOGROUP_NOTICE))
}

/// Whether, by the process file system at `proc`, autogroup scheduling is on and process
/// `pid` is a server process (named `command`) in another autogroup than this one. Anything
/// unreadable (another machine, another process namespace, no autogroup) is `false`.
fn in_other_autogroup(proc: &Path, pid: &str, command: &str) -> bool {
    let read = |path: PathBuf| std::fs::read_to_string(path).ok();
    let group = |process: &str| {
        read(proc.join(process).join("autogroup"))
            .and_then(|text| text.split_whitespace().next().map(str::to_owned))
    };
    let enabled = read(proc.join("sys/kernel/sched_autogroup_enabled"))
        .is_some_and(|text| text.trim() == "1");
    let is_server = read(proc.join(pid).join("comm")).is_some_and(|name| name.trim() == command);
    enabled
        && is_server
        && match (group("self"), group(pid)) {
            (Some(ours), Some(theirs)) => ours != theirs,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process file system with autogroup `enabled`, this process in `ours` and process 42
    /// named `name` in `theirs`.
    fn fake_proc(enabled: &str, ours: &str, name: &str, theirs: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().expect("a temporary folder");
        let write = |path: &str, text: &str| {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
            std::fs::write(path, text).expect("a file");
        };
        write("sys/kernel/sched_autogroup_enabled", enabled);
        write("self/autogroup", &format!("/autogroup-{ours} nice 0\n"));
        write("42/comm", &format!("{name}\n"));
        write("42/autogroup", &format!("/autogroup-{theirs} nice 0\n"));
        root
    }

    #[test]
    fn a_server_in_another_autogroup_is_seen_only_with_autogroup_on() {
        let seen = |enabled, ours, name, theirs| {
            in_other_autogroup(
                fake_proc(enabled, ours, name, theirs).path(),
                "42",
                "postgres",
            )
        };
        assert!(seen("1\n", "7", "postgres", "9"));
        assert!(!seen("0\n", "7", "postgres", "9"), "autogroup off");
        assert!(!seen("1\n", "7", "postgres", "7"), "the same group");
        assert!(!seen("1\n", "7", "bash", "9"), "not a server process");
    }

    #[test]
    fn an_unreadable_process_is_not_reported() {
        let root = fake_proc("1\n", "7", "postgres", "9");
        assert!(
            !in_other_autogroup(root.path(), "43", "postgres"),
            "no such process"
        );
        assert!(!in_other_autogroup(
            Path::new("/nonexistent"),
            "42",
            "postgres"
        ));
        assert!(
            !in_other_autogroup(root.path(), "42", "mariadbd"),
            "another server"
        );
    }
}
