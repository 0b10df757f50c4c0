//! Two (or more) regions taking likes for one post, each on its own rows, copying their counts
//! to each other in the background (`[regions]`).
//!
//! Each region commits its own likes (and unlikes) on its own shard rows; every
//! `sync_every` each region sends its state to every other, which arrives after a drawn lag.
//! Two merge rules:
//! - **g-counter** (a grow-only counter per region, one for likes and one for removals): a
//!   region's state is one entry per region; a message's entries are merged by taking the
//!   larger, so nothing is lost and a region's shown total trails by the lag;
//! - **lww** (last write wins): a region's state is one total stamped with the time of its last
//!   write; a later-stamped total from another region replaces it, so the increments the
//!   replaced total had not seen are lost. The lost likes are counted exactly by keeping, beside
//!   each total, whose likes it holds.
//!
//! [`Replicas`] is the state machine, fed likes as they are made and commits in time order;
//! [`RegionObserver`] feeds it from either row stage: from the exact core a commit is the
//! row's grant plus the hold, known at the arrival; the queued row stage tells each arrival
//! and each commit as it happens (with the machine, a commit waits for its CPU and flush).
//! Staleness is counted from the like, so a row's queue is part of it, and sampled every
//! millisecond of the simulated period: in likes, every like made so far less a region's shown
//! total; in time, how long ago the oldest like the region does not show was made — one still
//! queued for its row, in any region, or committed in another region and not heard of yet (a
//! commit is heard when a message its region sent after it arrives). The regions agree once
//! every region shows every like, counted from the last like made.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use rand::RngExt;

use super::engine::{Arrival, KeyCounts, Observer};
use super::hold::HoldDist;
use super::random::{SimRng, Stream, stream_rng};
use super::rows::Grant;
use crate::stats::{WaitStats, WaitSummary};
use crate::time::SimTime;

/// How regions merge each other's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// Per-region grow-only entries, merged by taking the larger (a CRDT).
    GCounter,
    /// One total per region, a later-stamped copy replacing it.
    Lww,
}

impl Replication {
    /// The scenario's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Replication::GCounter => "g-counter",
            Replication::Lww => "lww",
        }
    }
}

/// The `[regions]` section, resolved.
#[derive(Debug, Clone)]
pub struct RegionsPlan {
    /// Region names, in the scenario's order (region i's likes go to key i's rows).
    pub(crate) names: Vec<String>,
    /// Each region's share of the likes (summing to 1).
    pub(crate) shares: Vec<f64>,
    /// The merge rules, each run on the same commits and lags.
    pub(crate) replications: Vec<Replication>,
    /// The lag of one copy between two regions.
    pub(crate) lag: HoldDist,
    /// How often each region sends its state.
    pub(crate) sync_every: SimTime,
    /// The share of updates that are unlikes (a removal).
    pub(crate) unlike_fraction: f64,
    /// The count every region shows at the start (likes from before the simulated period).
    pub(crate) initial: u64,
}

/// Likes and removals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Entry {
    /// Likes.
    pub(crate) likes: u64,
    /// Unlikes.
    pub(crate) removals: u64,
}

impl Entry {
    fn max(self, other: Entry) -> Entry {
        Entry {
            likes: self.likes.max(other.likes),
            removals: self.removals.max(other.removals),
        }
    }
}

/// A copy in flight: `from`'s state when it was sent.
#[derive(Debug, Clone)]
struct Message {
    from: usize,
    to: usize,
    sent_at: SimTime,
    entries: Vec<Entry>,
    stamp: (SimTime, usize),
}

/// Per-region results of a run.
#[derive(Debug, Clone)]
pub struct RegionResult {
    /// The region's name.
    pub(crate) name: String,
    /// Its share of the likes.
    pub(crate) share: f64,
    /// Likes it committed.
    pub(crate) likes: u64,
    /// Unlikes it committed.
    pub(crate) removals: u64,
    /// Its likes missing from the final, converged count (LWW's losses; 0 with g-counter).
    pub(crate) lost_likes: u64,
    /// Its unlikes missing from the final count.
    pub(crate) lost_removals: u64,
    /// How long ago the oldest commit it had not heard of was made, ns, over the samples.
    pub(crate) staleness_ns: WaitSummary,
    /// How many commits its shown total was behind the truth, over the samples.
    pub(crate) staleness_likes: WaitSummary,
}

/// The result of a regions run.
#[derive(Debug, Clone)]
pub struct RegionsRun {
    /// The merge rule.
    pub(crate) replication: Replication,
    /// Each region's results.
    pub(crate) regions: Vec<RegionResult>,
    /// The true count at the end: the initial count plus every like less every unlike.
    pub(crate) truth: u64,
    /// The count every region shows once converged.
    pub(crate) converged: u64,
    /// From the last commit until every region shows the same count and has heard every
    /// commit, ns (`None` if that did not happen within 10,000 sync periods).
    pub(crate) convergence_ns: Option<SimTime>,
}

/// The regions' replicas, fed commits in time order.
#[derive(Debug)]
pub struct Replicas {
    plan: std::sync::Arc<RegionsPlan>,
    replication: Replication,
    /// `view[q][p]`: region p's entry as region q holds it (LWW: p's likes inside q's total).
    view: Vec<Vec<Entry>>,
    /// LWW: the stamp (time, region) of each region's total.
    stamp: Vec<(SimTime, usize)>,
    committed: Vec<Entry>,
    /// Likes (and unlikes) made in each region, committed or not.
    made: Vec<Entry>,
    /// When each region's likes still waiting for their commit were made (a multiset).
    waiting: Vec<BTreeMap<SimTime, u32>>,
    /// `heard[q][p]`: when the latest message from p that q has received was sent.
    heard: Vec<Vec<Option<SimTime>>>,
    /// Each region's commits that some other region has not heard of yet: (commit, made).
    commits: Vec<VecDeque<(SimTime, SimTime)>>,
    messages: BinaryHeap<Reverse<(SimTime, u64)>>,
    in_flight: std::collections::HashMap<u64, Message>,
    sent: u64,
    next_tick: SimTime,
    next_sample: SimTime,
    sample_until: SimTime,
    last_commit: Option<SimTime>,
    last_made: Option<SimTime>,
    /// Since when every region shows the same count and has heard every commit (`None` while
    /// they do not).
    agreed_since: Option<SimTime>,
    lag_rng: SimRng,
    staleness_ns: Vec<WaitStats>,
    staleness_likes: Vec<WaitStats>,
}

/// Staleness is sampled this often over the simulated period.
const SAMPLE_EVERY: SimTime = 1_000_000;
/// Sync periods after the last commit within which the regions must converge.
const CONVERGENCE_PERIODS: u64 = 10_000;

impl Replicas {
    /// Replicas for `plan` merging by `replication`, sampling staleness over `[0, horizon)`,
    /// lags drawn from `seed`.
    pub fn new(
        plan: std::sync::Arc<RegionsPlan>,
        replication: Replication,
        horizon: SimTime,
        seed: u64,
    ) -> Replicas {
        let n = plan.names.len();
        Replicas {
            replication,
            view: vec![vec![Entry::default(); n]; n],
            stamp: vec![(0, 0); n],
            committed: vec![Entry::default(); n],
            made: vec![Entry::default(); n],
            waiting: vec![BTreeMap::new(); n],
            heard: vec![vec![None; n]; n],
            commits: vec![VecDeque::new(); n],
            messages: BinaryHeap::new(),
            in_flight: std::collections::HashMap::new(),
            sent: 0,
            next_tick: plan.sync_every,
            next_sample: 0,
            sample_until: horizon,
            last_commit: None,
            last_made: None,
            agreed_since: None,
            lag_rng: stream_rng(seed, Stream::Lags),
            staleness_ns: vec![WaitStats::new(); n],
            staleness_likes: vec![WaitStats::new(); n],
            plan,
        }
    }

    /// Runs every tick, delivery and sample before `now` (a commit at `now` comes next).
    pub fn advance(&mut self, now: SimTime) {
        loop {
            let delivery = self.messages.peek().map(|Reverse((at, _))| *at);
            let sample = (self.next_sample < self.sample_until).then_some(self.next_sample);
            let next = [delivery, Some(self.next_tick), sample]
                .into_iter()
                .flatten()
                .min()
                .expect("the next tick always exists");
            if next >= now {
                return;
            }
            if delivery == Some(next) {
                self.deliver_at(next);
            } else if self.next_tick == next {
                self.tick();
            } else {
                self.sample(next);
                self.next_sample += SAMPLE_EVERY;
            }
        }
    }

    /// Region `region` makes a like (or an unlike) at `at`: a user tapped, and the update is
    /// sent (times never decrease, between themselves and with commits).
    pub fn make(&mut self, region: usize, at: SimTime, unlike: bool) {
        self.advance(at);
        let entry = &mut self.made[region];
        if unlike {
            entry.removals += 1;
        } else {
            entry.likes += 1;
        }
        *self.waiting[region].entry(at).or_insert(0) += 1;
        self.last_made = Some(at);
    }

    /// Region `region` commits at `at` the like (or unlike) made at `made_at` (commit times
    /// never decrease).
    pub fn commit(&mut self, region: usize, at: SimTime, made_at: SimTime, unlike: bool) {
        self.advance(at);
        let waiting = &mut self.waiting[region];
        if let Some(count) = waiting.get_mut(&made_at) {
            *count -= 1;
            if *count == 0 {
                waiting.remove(&made_at);
            }
        }
        let entry = &mut self.committed[region];
        if unlike {
            entry.removals += 1;
        } else {
            entry.likes += 1;
        }
        let own = *entry;
        match self.replication {
            Replication::GCounter => self.view[region][region] = own,
            Replication::Lww => {
                let held = &mut self.view[region][region];
                if unlike {
                    held.removals += 1;
                } else {
                    held.likes += 1;
                }
                self.stamp[region] = (at, region);
            }
        }
        self.commits[region].push_back((at, made_at));
        self.last_commit = Some(at);
        self.agreed_since = None;
    }

    /// Delivers the next message, due at `at`, and notes when the regions came to agree.
    fn deliver_at(&mut self, at: SimTime) {
        self.deliver();
        if self.agreed_since.is_none() && self.converged() {
            self.agreed_since = Some(at);
        }
    }

    /// Syncs on until the regions agree (or give up), and returns the results.
    pub fn finish(mut self) -> RegionsRun {
        let last = self.last_commit.unwrap_or(0);
        self.advance(self.sample_until.max(last) + 1);
        let first_like_done = self.last_made.unwrap_or(0).min(last);
        let give_up = last + CONVERGENCE_PERIODS * self.plan.sync_every;
        if self.agreed_since.is_none() && self.converged() {
            self.agreed_since = Some(last);
        }
        while self.agreed_since.is_none() {
            let delivery = self.messages.peek().map(|Reverse((at, _))| *at);
            let next = delivery.map_or(self.next_tick, |d| d.min(self.next_tick));
            if next > give_up {
                break;
            }
            if delivery == Some(next) {
                self.deliver_at(next);
            } else {
                self.tick();
            }
        }
        let converged_at = self.agreed_since;
        let n = self.committed.len();
        let final_view = self.view[0].clone();
        let shown = self.shown(0);
        let truth = self.truth();
        RegionsRun {
            replication: self.replication,
            regions: (0..n)
                .map(|p| RegionResult {
                    name: self.plan.names[p].clone(),
                    share: self.plan.shares[p],
                    likes: self.committed[p].likes,
                    removals: self.committed[p].removals,
                    lost_likes: self.committed[p].likes - final_view[p].likes,
                    lost_removals: self.committed[p].removals - final_view[p].removals,
                    staleness_ns: self.staleness_ns[p].summary(),
                    staleness_likes: self.staleness_likes[p].summary(),
                })
                .collect(),
            truth,
            converged: shown,
            convergence_ns: converged_at.map(|at| at - first_like_done),
        }
    }

    /// The count region `q` shows.
    pub fn shown(&self, q: usize) -> u64 {
        let (likes, removals) = self.view[q]
            .iter()
            .fold((0, 0), |(l, r), e| (l + e.likes, r + e.removals));
        (self.plan.initial + likes).saturating_sub(removals)
    }

    /// The true count: the initial count plus every committed like less every unlike.
    pub fn truth(&self) -> u64 {
        let (likes, removals) = self
            .committed
            .iter()
            .fold((0, 0), |(l, r), e| (l + e.likes, r + e.removals));
        (self.plan.initial + likes).saturating_sub(removals)
    }

    /// Whether every region shows the same count and has heard every commit.
    fn converged(&self) -> bool {
        let n = self.committed.len();
        let same = (1..n).all(|q| self.view[q] == self.view[0]);
        same && (0..n).all(|q| self.oldest_unheard(q).is_none())
    }

    /// Every region sends its state to every other.
    fn tick(&mut self) {
        let at = self.next_tick;
        let n = self.committed.len();
        for from in 0..n {
            for to in (0..n).filter(|&to| to != from) {
                let lag = self.plan.lag.sample(&mut self.lag_rng);
                let id = self.sent;
                self.sent += 1;
                self.messages.push(Reverse((at + lag, id)));
                self.in_flight.insert(
                    id,
                    Message {
                        from,
                        to,
                        sent_at: at,
                        entries: self.view[from].clone(),
                        stamp: self.stamp[from],
                    },
                );
            }
        }
        self.next_tick += self.plan.sync_every;
    }

    /// The earliest copy in flight arrives and is merged.
    fn deliver(&mut self) {
        let Some(Reverse((_, id))) = self.messages.pop() else {
            return;
        };
        let Some(message) = self.in_flight.remove(&id) else {
            return;
        };
        let (from, to) = (message.from, message.to);
        let heard = &mut self.heard[to][from];
        *heard = Some(heard.map_or(message.sent_at, |h| h.max(message.sent_at)));
        match self.replication {
            Replication::GCounter => {
                for (mine, theirs) in self.view[to].iter_mut().zip(&message.entries) {
                    *mine = mine.max(*theirs);
                }
            }
            Replication::Lww => {
                if message.stamp > self.stamp[to] {
                    self.view[to] = message.entries;
                    self.stamp[to] = message.stamp;
                }
            }
        }
        self.prune(from);
    }

    /// Drops region `p`'s commit times that every other region has heard of.
    fn prune(&mut self, p: usize) {
        let n = self.committed.len();
        let all_heard = (0..n)
            .filter(|&q| q != p)
            .map(|q| self.heard[q][p])
            .min()
            .flatten();
        if let Some(until) = all_heard {
            while self.commits[p].front().is_some_and(|&(c, _)| c <= until) {
                self.commits[p].pop_front();
            }
        }
    }

    /// When the oldest like region `q` does not show was made: the oldest still waiting for
    /// its commit in any region, or the like of the oldest commit of another region that `q`
    /// has not heard of.
    fn oldest_unheard(&self, q: usize) -> Option<SimTime> {
        let queued = self
            .waiting
            .iter()
            .filter_map(|waiting| waiting.keys().next().copied());
        let unheard = (0..self.commits.len()).filter(|&p| p != q).filter_map(|p| {
            let commits = &self.commits[p];
            let first = match self.heard[q][p] {
                Some(heard) => commits.partition_point(|&(c, _)| c <= heard),
                None => 0,
            };
            commits.get(first).map(|&(_, made)| made)
        });
        queued.chain(unheard).min()
    }

    /// The count every like made so far would show.
    fn made_truth(&self) -> u64 {
        let (likes, removals) = self
            .made
            .iter()
            .fold((0, 0), |(l, r), e| (l + e.likes, r + e.removals));
        (self.plan.initial + likes).saturating_sub(removals)
    }

    fn sample(&mut self, at: SimTime) {
        let truth = self.made_truth();
        for q in 0..self.committed.len() {
            let behind = truth.saturating_sub(self.shown(q));
            self.staleness_likes[q].record(behind);
            let age = self.oldest_unheard(q).map_or(0, |c| at.saturating_sub(c));
            self.staleness_ns[q].record(age);
        }
    }
}

/// A like waiting for its commit: (commit time, order made, region, unlike, made at).
type PendingCommit = (SimTime, u64, u32, bool, SimTime);

/// Feeds a run's commits to its [`Replicas`] (one per merge rule, on the same commits): a
/// like's region is its key, its commit the grant plus its hold; each update is an unlike with
/// the plan's probability.
#[derive(Debug)]
pub struct RegionObserver {
    replicas: Vec<Replicas>,
    /// Fed by the queued row stage (arrivals and commits as they happen) rather than the
    /// exact core.
    queued: bool,
    /// Commits not yet fed (a later arrival can commit earlier on another row), by time.
    pending: BinaryHeap<Reverse<PendingCommit>>,
    made: u64,
    unlike_rng: SimRng,
    /// The seed of the queued row stage's unlike draws.
    unlike_seed: u64,
    unlike_fraction: f64,
}

impl RegionObserver {
    /// An observer for `plan` over `[0, horizon)`, drawing from `seed`, of a run on the
    /// queued row stage (`queued`) or the exact core.
    pub fn new(
        plan: std::sync::Arc<RegionsPlan>,
        horizon: SimTime,
        seed: u64,
        queued: bool,
    ) -> Self {
        RegionObserver {
            queued,
            unlike_fraction: plan.unlike_fraction,
            replicas: plan
                .replications
                .iter()
                .map(|&rule| Replicas::new(std::sync::Arc::clone(&plan), rule, horizon, seed))
                .collect(),
            pending: BinaryHeap::new(),
            made: 0,
            unlike_rng: stream_rng(seed, Stream::Unlikes),
            unlike_seed: seed,
        }
    }

    /// Feeds the commits still pending and returns each merge rule's results.
    pub fn finish(mut self) -> Vec<RegionsRun> {
        self.feed_until(SimTime::MAX);
        self.replicas.into_iter().map(Replicas::finish).collect()
    }

    fn feed_until(&mut self, now: SimTime) {
        while let Some(&Reverse((at, _, region, unlike, made_at))) = self.pending.peek() {
            if at > now {
                break;
            }
            self.pending.pop();
            for replicas in &mut self.replicas {
                replicas.commit(region as usize, at, made_at, unlike);
            }
        }
    }
}

/// Whether the update of `arrival` is an unlike, on the queued row stage: a uniform draw
/// made from the arrival itself, so that its arrival and its commit agree without keeping
/// it (the exact core draws from its own stream, in arrival order).
fn is_unlike(arrival: &Arrival, seed: u64, fraction: f64) -> bool {
    if fraction <= 0.0 {
        return false;
    }
    let bits = super::rows::mix64(
        seed ^ super::rows::mix64(arrival.at ^ super::rows::mix64(arrival.user))
            ^ u64::from(arrival.key),
    );
    ((bits >> 11) as f64) / ((1u64 << 53) as f64) < fraction
}

impl Observer for RegionObserver {
    fn on_arrival(&mut self, arrival: &Arrival) {
        if !self.queued {
            return;
        }
        let unlike = is_unlike(arrival, self.unlike_seed, self.unlike_fraction);
        for replicas in &mut self.replicas {
            replicas.make(arrival.key as usize, arrival.at, unlike);
        }
        self.made += 1;
    }

    fn on_commit(&mut self, arrival: &Arrival, at: SimTime) {
        if !self.queued {
            return;
        }
        let unlike = is_unlike(arrival, self.unlike_seed, self.unlike_fraction);
        for replicas in &mut self.replicas {
            replicas.commit(arrival.key as usize, at, arrival.at, unlike);
        }
    }

    fn on_increment(&mut self, arrival: &Arrival, grant: &Grant, _: &dyn KeyCounts) {
        if self.queued {
            return;
        }
        // Every commit at or before this arrival is final: later arrivals commit later.
        self.feed_until(arrival.at);
        let unlike =
            self.unlike_fraction > 0.0 && self.unlike_rng.random::<f64>() < self.unlike_fraction;
        for replicas in &mut self.replicas {
            replicas.make(arrival.key as usize, arrival.at, unlike);
        }
        let commit = grant.start + arrival.hold;
        self.pending.push(Reverse((
            commit,
            self.made,
            arrival.key,
            unlike,
            arrival.at,
        )));
        self.made += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::ms;

    fn plan(initial: u64) -> std::sync::Arc<RegionsPlan> {
        std::sync::Arc::new(RegionsPlan {
            names: vec!["mumbai".into(), "singapore".into()],
            shares: vec![0.6, 0.4],
            replications: vec![Replication::GCounter, Replication::Lww],
            lag: HoldDist::Constant { hold_ns: ms(120) },
            sync_every: ms(100),
            unlike_fraction: 0.0,
            initial,
        })
    }

    /// The seeds' example: both at 1,000, Mumbai adds 5, Singapore 3 (the later writer last).
    fn seed_example(replication: Replication, mumbai_last: bool) -> RegionsRun {
        let mut replicas = Replicas::new(plan(1000), replication, ms(50), 1);
        let (mumbai_at, singapore_at) = if mumbai_last { (10, 1) } else { (1, 10) };
        let mut commits: Vec<(SimTime, usize)> = (0..5)
            .map(|i| (ms(mumbai_at) + i, 0))
            .chain((0..3).map(|i| (ms(singapore_at) + i, 1)))
            .collect();
        commits.sort_unstable();
        for (at, region) in commits {
            replicas.make(region, at, false);
            replicas.commit(region, at, at, false);
        }
        replicas.finish()
    }

    #[test]
    fn the_seeds_two_region_example() {
        for mumbai_last in [true, false] {
            let g = seed_example(Replication::GCounter, mumbai_last);
            assert_eq!((g.truth, g.converged), (1008, 1008));
            assert!(g.regions.iter().all(|r| r.lost_likes == 0));
            let lww = seed_example(Replication::Lww, mumbai_last);
            assert_eq!(lww.truth, 1008);
            let (winner, loser, lost) = if mumbai_last {
                (1005, 1, 3)
            } else {
                (1003, 0, 5)
            };
            assert_eq!(lww.converged, winner, "mumbai last: {mumbai_last}");
            assert_eq!(lww.regions[loser].lost_likes, lost);
            // Converged one sync and one lag after the last commit: the tick at 100 ms sends,
            // the copies land at 220 ms.
            let last = ms(10) + if mumbai_last { 4 } else { 2 };
            assert_eq!(g.convergence_ns, Some(ms(220) - last));
            assert_eq!(lww.convergence_ns, Some(ms(220) - last));
        }
    }

    #[test]
    fn staleness_is_the_lag_until_a_copy_lands() {
        // One like in Mumbai at 0: Singapore hears of it with the copy sent at 100 ms, landing
        // at 220 ms, so it is behind by one like for 220 samples (0 … 219 ms).
        let mut replicas = Replicas::new(plan(0), Replication::GCounter, ms(400), 1);
        replicas.make(0, 0, false);
        replicas.commit(0, 0, 0, false);
        let run = replicas.finish();
        let singapore = &run.regions[1];
        assert_eq!(singapore.staleness_likes.max_ns, 1);
        assert_eq!(singapore.staleness_ns.max_ns / 1_000_000, 219);
        assert_eq!(run.regions[0].staleness_likes.max_ns, 0);
    }

    #[test]
    fn a_like_waiting_for_its_row_is_stale_from_the_tap_in_every_region() {
        // A like made at 0 waits 150 ms in Mumbai's queue, commits at 150 ms, is copied with the
        // tick at 200 ms and lands in Singapore at 320 ms.
        let mut replicas = Replicas::new(plan(0), Replication::GCounter, ms(400), 1);
        replicas.make(0, 0, false);
        replicas.commit(0, ms(150), 0, false);
        let run = replicas.finish();
        let (mumbai, singapore) = (&run.regions[0], &run.regions[1]);
        assert_eq!(mumbai.staleness_likes.max_ns, 1, "its own queue counts");
        assert_eq!(mumbai.staleness_ns.max_ns / 1_000_000, 149);
        assert_eq!(singapore.staleness_ns.max_ns / 1_000_000, 319);
        assert_eq!(run.convergence_ns, Some(ms(320)), "counted from the like");
    }
}
