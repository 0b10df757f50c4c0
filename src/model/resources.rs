//! The lines the event-driven pipeline's resources keep — the CPU cores and the connection
//! pool ([`super::servers`]), the WAL flush ([`super::wal`]), the rows ([`super::locks`]), the
//! likes table's insert paths: intrusive lists through one [`Links`] table indexed by job id,
//! so queueing never allocates, and a job that gives up leaves its line in O(1).

/// "No job": the end of a list.
pub const NONE: u32 = u32::MAX;

/// The next and previous job of every job in whatever list it is in, indexed by job id.
#[derive(Debug, Clone, Default)]
pub struct Links {
    next: Vec<u32>,
    prev: Vec<u32>,
}

impl Links {
    /// Links for `jobs` job ids.
    pub fn with_jobs(jobs: usize) -> Self {
        Links {
            next: vec![NONE; jobs],
            prev: vec![NONE; jobs],
        }
    }

    /// Makes room for one more job id.
    pub fn add_job(&mut self) {
        self.next.push(NONE);
        self.prev.push(NONE);
    }
}

/// A first-in, first-out list of jobs, linked through [`Links`].
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
    pub fn push(&mut self, job: u32, links: &mut Links) {
        links.next[job as usize] = NONE;
        links.prev[job as usize] = self.tail;
        if self.tail == NONE {
            self.head = job;
        } else {
            links.next[self.tail as usize] = job;
        }
        self.tail = job;
        self.len += 1;
    }

    /// Puts `job` first.
    #[inline]
    pub fn push_front(&mut self, job: u32, links: &mut Links) {
        links.prev[job as usize] = NONE;
        links.next[job as usize] = self.head;
        if self.head == NONE {
            self.tail = job;
        } else {
            links.prev[self.head as usize] = job;
        }
        self.head = job;
        self.len += 1;
    }

    /// Removes and returns the first job.
    #[inline]
    pub fn pop(&mut self, links: &mut Links) -> Option<u32> {
        if self.head == NONE {
            return None;
        }
        let job = self.head;
        self.head = links.next[job as usize];
        if self.head == NONE {
            self.tail = NONE;
        } else {
            links.prev[self.head as usize] = NONE;
        }
        self.len -= 1;
        Some(job)
    }

    /// Takes `job`, which is in this list, out of it.
    pub fn remove(&mut self, job: u32, links: &mut Links) {
        let (prev, next) = (links.prev[job as usize], links.next[job as usize]);
        if prev == NONE {
            self.head = next;
        } else {
            links.next[prev as usize] = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            links.prev[next as usize] = prev;
        }
        self.len -= 1;
    }
}

/// Jobs served in random order: whoever is taken next is drawn uniformly from those waiting
/// (a row lock whose released waiters race for it again). Each job's place in the list is
/// kept in [`Links`], so pushing, drawing and withdrawing are O(1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bag {
    jobs: Vec<u32>,
}

impl Bag {
    /// Jobs in the bag.
    #[inline]
    pub fn len(&self) -> u32 {
        self.jobs.len() as u32
    }

    /// Whether the bag is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Adds `job`.
    #[inline]
    pub fn push(&mut self, job: u32, links: &mut Links) {
        links.next[job as usize] = self.len();
        self.jobs.push(job);
    }

    /// Removes and returns the job that uniform `bits` pick (Lemire's multiply-shift).
    #[inline]
    pub fn take(&mut self, bits: u64, links: &mut Links) -> Option<u32> {
        if self.jobs.is_empty() {
            return None;
        }
        let place = super::random::bounded(bits, self.jobs.len() as u64) as usize;
        Some(self.remove_at(place, links))
    }

    /// Takes `job`, which is in this bag, out of it.
    pub fn remove(&mut self, job: u32, links: &mut Links) {
        let place = links.next[job as usize] as usize;
        debug_assert_eq!(self.jobs[place], job, "a job's place in its bag");
        self.remove_at(place, links);
    }

    fn remove_at(&mut self, place: usize, links: &mut Links) -> u32 {
        let job = self.jobs.swap_remove(place);
        if let Some(&moved) = self.jobs.get(place) {
            links.next[moved as usize] = place as u32;
        }
        job
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_keeps_order() {
        let mut links = Links::with_jobs(8);
        let mut list = Fifo::EMPTY;
        for job in [3, 1, 4] {
            list.push(job, &mut links);
        }
        assert_eq!(list.len(), 3);
        assert_eq!(list.pop(&mut links), Some(3));
        list.push(5, &mut links);
        let rest: Vec<u32> = std::iter::from_fn(|| list.pop(&mut links)).collect();
        assert_eq!(rest, [1, 4, 5]);
        assert!(list.is_empty());
    }

    #[test]
    fn fifo_removes_from_anywhere() {
        let mut links = Links::with_jobs(8);
        let mut list = Fifo::EMPTY;
        for job in [0, 1, 2, 3] {
            list.push(job, &mut links);
        }
        list.remove(0, &mut links);
        list.remove(2, &mut links);
        list.remove(3, &mut links);
        list.push_front(4, &mut links);
        list.push(5, &mut links);
        let rest: Vec<u32> = std::iter::from_fn(|| list.pop(&mut links)).collect();
        assert_eq!(rest, [4, 1, 5]);
    }

    #[test]
    fn a_bag_draws_every_waiter_and_lets_any_withdraw() {
        let mut links = Links::with_jobs(8);
        let mut bag = Bag::default();
        for job in [3, 1, 4, 0, 6] {
            bag.push(job, &mut links);
        }
        bag.remove(1, &mut links);
        bag.remove(6, &mut links);
        // bits 0 take the first place, u64::MAX the last.
        assert_eq!(bag.take(0, &mut links), Some(3));
        assert_eq!(bag.len(), 2);
        let last = bag.take(u64::MAX, &mut links);
        let first = bag.take(u64::MAX, &mut links);
        let mut rest = [first.unwrap(), last.unwrap()];
        rest.sort_unstable();
        assert_eq!(rest, [0, 4]);
        assert_eq!(bag.take(0, &mut links), None);
        assert!(bag.is_empty());
    }

    #[test]
    fn a_bag_draws_uniformly() {
        // 3 waiters drawn from 30,000 times with fresh bits: each within 4σ of a third
        // (σ = √(30,000 · 1/3 · 2/3) ≈ 82).
        let mut links = Links::with_jobs(4);
        let mut rng = crate::model::random::stream_rng(7, crate::model::random::Stream::Grants);
        let mut taken = [0u32; 3];
        for _ in 0..30_000 {
            let mut bag = Bag::default();
            for job in 0..3 {
                bag.push(job, &mut links);
            }
            let job = bag.take(rand::Rng::next_u64(&mut rng), &mut links).unwrap();
            taken[job as usize] += 1;
        }
        for count in taken {
            assert!(
                (f64::from(count) - 10_000.0).abs() < 4.0 * 82.0,
                "{taken:?}"
            );
        }
    }
}
