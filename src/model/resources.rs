//! The shared resources of the event-driven pipeline: the CPU cores and the WAL flush. Each
//! grants, queues and releases jobs (updates, by id) first come, first served; the pipeline
//! schedules when a granted job is done. Queues are intrusive lists through one `links` array
//! indexed by job id, so queueing never allocates.

/// "No job": the end of a list.
pub const NONE: u32 = u32::MAX;

/// A first-in, first-out list of jobs, linked through `links[job]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fifo {
    head: u32,
    tail: u32,
    len: u32,
}

impl Fifo {
    /// No job.
    pub const EMPTY: Fifo = Fifo {
        head: NONE,
        tail: NONE,
        len: 0,
    };

    /// Jobs in the list.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `job`.
    #[inline]
    pub fn push(&mut self, job: u32, links: &mut [u32]) {
        links[job as usize] = NONE;
        if self.tail == NONE {
            self.head = job;
        } else {
            links[self.tail as usize] = job;
        }
        self.tail = job;
        self.len += 1;
    }

    /// Removes and returns the first job.
    #[inline]
    pub fn pop(&mut self, links: &[u32]) -> Option<u32> {
        if self.head == NONE {
            return None;
        }
        let job = self.head;
        self.head = links[job as usize];
        if self.head == NONE {
            self.tail = NONE;
        }
        self.len -= 1;
        Some(job)
    }
}

/// `cores` CPU cores shared by every row and key: a job runs on a free core or waits for one.
#[derive(Debug, Clone)]
pub struct Cores {
    cores: u32,
    busy: u32,
    waiting: Fifo,
}

impl Cores {
    /// `cores ≥ 1` idle cores.
    pub fn new(cores: u32) -> Self {
        assert!(cores >= 1, "a machine has a core");
        Cores {
            cores,
            busy: 0,
            waiting: Fifo::EMPTY,
        }
    }

    /// The number of cores.
    pub fn count(&self) -> u32 {
        self.cores
    }

    /// Asks for a core for `job`: `true` when it runs now, `false` when it waits.
    #[inline]
    pub fn request(&mut self, job: u32, links: &mut [u32]) -> bool {
        if self.busy < self.cores {
            self.busy += 1;
            true
        } else {
            self.waiting.push(job, links);
            false
        }
    }

    /// A job finished its CPU: returns the waiting job that takes the core, if any.
    #[inline]
    pub fn release(&mut self, links: &[u32]) -> Option<u32> {
        let next = self.waiting.pop(links);
        if next.is_none() {
            self.busy -= 1;
        }
        next
    }
}

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
    pub fn request(&mut self, job: u32, links: &mut [u32]) -> bool {
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
    pub fn finish(&mut self, links: &mut [u32], covered: &mut Vec<u32>) -> bool {
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
    fn fifo_keeps_order() {
        let mut links = vec![NONE; 8];
        let mut list = Fifo::EMPTY;
        for job in [3, 1, 4] {
            list.push(job, &mut links);
        }
        assert_eq!(list.len(), 3);
        assert_eq!(list.pop(&links), Some(3));
        list.push(5, &mut links);
        let rest: Vec<u32> = std::iter::from_fn(|| list.pop(&links)).collect();
        assert_eq!(rest, [1, 4, 5]);
        assert!(list.is_empty());
    }

    #[test]
    fn cores_serve_in_turn() {
        let mut links = vec![NONE; 8];
        let mut cores = Cores::new(2);
        assert!(cores.request(0, &mut links));
        assert!(cores.request(1, &mut links));
        assert!(!cores.request(2, &mut links));
        assert!(!cores.request(3, &mut links));
        assert_eq!(cores.release(&links), Some(2));
        assert_eq!(cores.release(&links), Some(3));
        assert_eq!(cores.release(&links), None);
        assert_eq!(cores.release(&links), None);
        assert!(cores.request(4, &mut links));
    }

    #[test]
    fn group_commit_covers_every_waiting_commit() {
        for (group_commit, flushes) in [(true, 2), (false, 4)] {
            let mut links = vec![NONE; 8];
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
