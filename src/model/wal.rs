//! The WAL flush stage: one flush at a time, covering one commit or, with group commit, every
//! commit waiting when it starts.

use super::resources::{Fifo, Links};

/// The WAL flush: one flush at a time. With group commit a flush covers every commit waiting
/// when it starts; without it each commit flushes alone, in turn.
#[derive(Debug, Clone)]
pub struct Wal {
    group_commit: bool,
    flushing: Fifo,
    waiting: Fifo,
    busy: bool,
}

impl Wal {
    /// An idle WAL.
    pub fn new(group_commit: bool) -> Self {
        Wal {
            group_commit,
            flushing: Fifo::EMPTY,
            waiting: Fifo::EMPTY,
            busy: false,
        }
    }

    /// `job` needs its commit flushed: `true` when a flush starts now (covering it), `false`
    /// when it waits for the next.
    #[inline]
    pub fn request(&mut self, job: u32, links: &mut Links) -> bool {
        if self.busy {
            self.waiting.push(job, links);
            return false;
        }
        self.busy = true;
        self.flushing.push(job, links);
        true
    }

    /// The running flush ended: returns the commits it covered, in the order they asked, and
    /// whether the next flush starts now (there were commits waiting).
    pub fn finish(&mut self, links: &mut Links, covered: &mut Vec<u32>) -> bool {
        covered.clear();
        while let Some(job) = self.flushing.pop(links) {
            covered.push(job);
        }
        if self.waiting.is_empty() {
            self.busy = false;
            return false;
        }
        if self.group_commit {
            self.flushing = std::mem::replace(&mut self.waiting, Fifo::EMPTY);
        } else {
            let job = self.waiting.pop(links).expect("not empty");
            self.flushing.push(job, links);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_commit_covers_every_waiting_commit() {
        for (group_commit, flushes) in [(true, 2), (false, 4)] {
            let mut links = Links::with_jobs(8);
            let mut wal = Wal::new(group_commit);
            let mut covered = Vec::new();
            assert!(wal.request(0, &mut links));
            for job in 1..4 {
                assert!(!wal.request(job, &mut links));
            }
            let mut count = 1;
            let mut all = Vec::new();
            while wal.finish(&mut links, &mut covered) {
                all.extend_from_slice(&covered);
                count += 1;
            }
            all.extend_from_slice(&covered);
            assert_eq!(all, [0, 1, 2, 3]);
            assert_eq!(count, flushes, "group commit {group_commit}");
        }
    }
}
