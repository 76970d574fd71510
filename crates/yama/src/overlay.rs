//! The coordinating overlay of one chain (Yama §4.3). The leader runs the feedback loop and
//! publishes its estimate with a timestamp; the other instances read it (RDMA READ) and write
//! their completed work into their ring buffer at the leader (RDMA WRITE). An instance that reads
//! an estimate older than `stale_after` proposes itself: it runs the loop at once, without
//! waiting for votes, and the others follow the proposal with the highest term (lowest
//! instance on a tie) when its vote request reaches them.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The estimate is fresh: pace at it.
    Fresh,
    /// Stale, and this instance is active: it proposes itself (call [`Overlay::propose`]).
    Propose,
    /// Stale, but this instance is idle and cannot run the loop.
    Stale,
}

#[derive(Clone, Debug)]
struct Member {
    active: bool,
    /// The leader it reports to, and the term of that leader's election.
    leader: usize,
    term: u32,
}

#[derive(Clone, Debug)]
pub struct Overlay {
    members: Vec<Member>,
    stale_after: u64,
    elections: u32,
}

impl Overlay {
    /// `members` instances, `first` the initial leader (chosen by the control plane).
    pub fn new(members: usize, first: usize, stale_after: u64) -> Overlay {
        assert!(first < members);
        Overlay { members: vec![Member { active: true, leader: first, term: 0 }; members], stale_after, elections: 0 }
    }

    /// Whether instance `m`'s application drives it (polls) now.
    pub fn set_active(&mut self, m: usize, active: bool) {
        self.members[m].active = active;
    }

    pub fn is_active(&self, m: usize) -> bool {
        self.members[m].active
    }

    /// The leader instance `m` believes in.
    pub fn leader_of(&self, m: usize) -> usize {
        self.members[m].leader
    }

    /// Whether `m` runs the feedback loop (it is its own leader and active).
    pub fn runs_loop(&self, m: usize) -> bool {
        self.members[m].leader == m && self.members[m].active
    }

    /// Instance `m` read an estimate stamped `stamp` at `now`.
    pub fn read(&self, m: usize, stamp: u64, now: u64) -> ReadOutcome {
        if now.saturating_sub(stamp) <= self.stale_after {
            ReadOutcome::Fresh
        } else if self.members[m].active {
            ReadOutcome::Propose
        } else {
            ReadOutcome::Stale
        }
    }

    /// `m` proposes itself: it leads from now on; returns the term to put in its vote requests.
    pub fn propose(&mut self, m: usize) -> u32 {
        let term = self.members.iter().map(|x| x.term).max().unwrap_or(0) + 1;
        self.elections += 1;
        let me = &mut self.members[m];
        me.leader = m;
        me.term = term;
        term
    }

    /// `m` receives `candidate`'s vote request of `term`; returns whether it now follows it.
    pub fn vote_request(&mut self, m: usize, candidate: usize, term: u32) -> bool {
        let me = &mut self.members[m];
        if term > me.term || (term == me.term && candidate < me.leader) {
            me.leader = candidate;
            me.term = term;
            return true;
        }
        false
    }

    pub fn elections(&self) -> u32 {
        self.elections
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_active_reader_of_a_stale_estimate_takes_over() {
        let mut o = Overlay::new(3, 0, 100);
        assert!(o.runs_loop(0));
        assert_eq!(o.read(1, 1000, 1050), ReadOutcome::Fresh);
        // The leader's application stops: its estimate ages.
        o.set_active(0, false);
        assert!(!o.runs_loop(0));
        o.set_active(2, false);
        assert_eq!(o.read(2, 1000, 1200), ReadOutcome::Stale);
        assert_eq!(o.read(1, 1000, 1200), ReadOutcome::Propose);
        let term = o.propose(1);
        assert!(o.runs_loop(1), "the proposer runs the loop before any vote");
        assert!(o.vote_request(2, 1, term));
        assert!(o.vote_request(0, 1, term));
        assert_eq!((o.leader_of(0), o.leader_of(2)), (1, 1));
        assert_eq!(o.elections(), 1);
    }

    #[test]
    fn concurrent_proposals_resolve_to_one_leader() {
        let mut o = Overlay::new(4, 0, 10);
        o.set_active(0, false);
        let t2 = o.propose(2);
        let t1 = o.propose(1);
        assert!(t1 > t2);
        // Vote requests cross: everyone ends with the later term.
        for m in [0, 3] {
            o.vote_request(m, 2, t2);
            o.vote_request(m, 1, t1);
        }
        assert!(o.vote_request(2, 1, t1));
        assert!(!o.vote_request(1, 2, t2), "a stale term does not unseat");
        assert!((0..4).all(|m| o.leader_of(m) == 1));
        assert!(o.runs_loop(1) && !o.runs_loop(2));
    }
}
