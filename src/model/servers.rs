//! Identical servers one line shares: the machine's CPU cores, the pool's connections.

use super::resources::{Fifo, Links};

/// Identical servers shared by every row and key — the machine's CPU cores, the pool's
/// connections: a job takes a free one or waits for one.
#[derive(Debug, Clone)]
pub struct Servers {
    servers: u32,
    busy: u32,
    waiting: Fifo,
}

impl Servers {
    /// `servers ≥ 1` idle servers.
    pub fn new(servers: u32) -> Self {
        assert!(servers >= 1, "a resource has a server");
        Servers {
            servers,
            busy: 0,
            waiting: Fifo::EMPTY,
        }
    }

    /// The number of servers.
    pub fn count(&self) -> u32 {
        self.servers
    }

    /// Whether a request now would have a server at once.
    pub fn has_free(&self) -> bool {
        self.busy < self.servers
    }

    /// Asks for a server for `job`: `true` when it has one now, `false` when it waits.
    #[inline]
    pub fn request(&mut self, job: u32, links: &mut Links) -> bool {
        if self.busy < self.servers {
            self.busy += 1;
            true
        } else {
            self.waiting.push(job, links);
            false
        }
    }

    /// A job is done with its server: returns the waiting job that takes it, if any.
    #[inline]
    pub fn release(&mut self, links: &mut Links) -> Option<u32> {
        let next = self.waiting.pop(links);
        if next.is_none() {
            self.busy -= 1;
        }
        next
    }

    /// `job`, waiting for a server, gives up.
    pub fn withdraw(&mut self, job: u32, links: &mut Links) {
        self.waiting.remove(job, links);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_serve_in_turn() {
        let mut links = Links::with_jobs(8);
        let mut cores = Servers::new(2);
        assert!(cores.request(0, &mut links));
        assert!(cores.request(1, &mut links));
        assert!(!cores.request(2, &mut links));
        assert!(!cores.request(3, &mut links));
        assert_eq!(cores.release(&mut links), Some(2));
        assert_eq!(cores.release(&mut links), Some(3));
        assert_eq!(cores.release(&mut links), None);
        assert_eq!(cores.release(&mut links), None);
        assert!(cores.request(4, &mut links));
    }
}
