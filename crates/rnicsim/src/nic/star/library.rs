//! The stateless side's host library (StaR §III-C2, §IV-C): a queue pair as the application
//! sees it, kept in host memory, not on the NIC. Posting a WQE packs it into a WQEP (the NIC
//! keeps nothing); the library starts a timeout per WQEP, re-posts it until an EA arrives, and
//! completes the WQE with an error after the last retry. The WQEs the stateful side has not yet
//! completed are remembered here, so a CQEP sent again after a lost EA completes nothing twice.
//! A send-queue WQE confirmed but not completed within `probe` (the stateful side's whole
//! resend budget) has its WQEP sent again as a probe: a live stateful side confirms it again
//! (it runs a WQE once), while one that gave up on the connection, or a path that no longer
//! carries its packets, leaves the probe unconfirmed and the WQE fails after the retries, as
//! an RC requester's does. Receive WQEs wait for the peer without a timer, as RC's do.
//! Before the connection's initial state has reached the stateful side (the migration WQEP
//! with the M bit and its EA, §III-C1), posted WQEs wait here.

use crate::nic::qp::Owner;
use crate::nic::verbs::{CompletionKind, Status};
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::star::{StarCqe, StarWqe};
use std::collections::{BTreeMap, VecDeque};

/// A posted WQE the stateful side has not completed.
#[derive(Clone, Copy, Debug)]
struct Pending {
    wqe: StarWqe,
    wr_id: u64,
    kind: CompletionKind,
    /// The stateful side confirmed the WQEP (EA).
    acked: bool,
    /// When the WQEP is sent again: if not confirmed by then, or, once confirmed, as a probe
    /// if not completed by then.
    deadline: Option<Time>,
    tries: u32,
    /// Its CQE, arrived ahead of an earlier WQE's of the same queue.
    done: Option<StarCqe>,
}

/// What the library asks of the NIC after a call.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LibActions {
    /// WQEPs to send (the migration WQEP is `migrate`).
    pub send: Vec<StarWqe>,
    pub migrate: bool,
    /// WQEs that failed: (wr id, kind, status): `RetryExceeded` for those that ran out of
    /// retries (or waited for a migration that did), `Flushed` for the rest.
    pub failed: Vec<(u64, CompletionKind, Status)>,
}

/// One stateless queue pair's library state.
#[derive(Clone, Debug)]
pub struct StarLib {
    pub node: u32,
    pub host: u32,
    pub owner: Owner,
    pub pd: u32,
    /// The connection's queue pair on its stateful side, and that side's node.
    pub conn: u32,
    pub peer_node: u32,
    pub udp_sport: u16,
    pub timer: TimerId,
    /// The initial state is on the stateful side (its migration was acknowledged).
    pub ready: bool,
    /// A WQEP (or the migration) went unconfirmed through every retry: the queue pair is in
    /// the error state, its work flushed and new posts refused, as an RC queue pair after a
    /// retry-exceeded error.
    pub failed: bool,
    migrate_deadline: Option<Time>,
    migrate_tries: u32,
    next_index: u32,
    held: VecDeque<u32>,
    outstanding: BTreeMap<u32, Pending>,
}

impl StarLib {
    #[allow(clippy::too_many_arguments)]
    pub fn new(node: u32, host: u32, owner: Owner, pd: u32, conn: u32, peer_node: u32, udp_sport: u16, timer: TimerId) -> StarLib {
        StarLib { node, host, owner, pd, conn, peer_node, udp_sport, timer, ready: false, failed: false, migrate_deadline: None, migrate_tries: 0, next_index: 0, held: VecDeque::new(), outstanding: BTreeMap::new() }
    }

    /// Starts the state migration: the first WQEP, with the M bit.
    pub fn start(&mut self, now: Time, timeout: Time) -> LibActions {
        self.migrate_deadline = Some(now + timeout);
        LibActions { migrate: true, ..Default::default() }
    }

    /// Posts a WQE (`wqe.index` is assigned here); returns what to send now.
    pub fn post(&mut self, mut wqe: StarWqe, wr_id: u64, kind: CompletionKind, now: Time, timeout: Time) -> LibActions {
        wqe.index = self.next_index;
        self.next_index = self.next_index.wrapping_add(1) & 0xff_ffff;
        let sent = self.ready;
        self.outstanding.insert(wqe.index, Pending { wqe, wr_id, kind, acked: false, deadline: sent.then_some(now + timeout), tries: 0, done: None });
        let mut a = LibActions::default();
        if sent {
            a.send.push(wqe);
        } else {
            self.held.push_back(wqe.index);
        }
        a
    }

    /// An EA arrived: the WQEP `index` (or the migration) reached the stateful side. A
    /// send-queue WQE is probed if not completed within `probe` from now.
    pub fn on_ea(&mut self, index: u32, migrate: bool, now: Time, timeout: Time, probe: Time) -> LibActions {
        let mut a = LibActions::default();
        if migrate {
            if !self.ready {
                self.ready = true;
                self.migrate_deadline = None;
                for i in std::mem::take(&mut self.held) {
                    if let Some(p) = self.outstanding.get_mut(&i) {
                        p.deadline = Some(now + timeout);
                        a.send.push(p.wqe);
                    }
                }
            }
        } else if let Some(p) = self.outstanding.get_mut(&index).filter(|p| p.done.is_none()) {
            p.acked = true;
            p.tries = 0;
            p.deadline = (p.kind != CompletionKind::Recv).then_some(now + probe);
        }
        a
    }

    /// A CQE arrived. Returns the completions now due as (wr id, kind, CQE), in posting order
    /// per queue (send queue, receive queue), as RC completes: a CQE that overtook an earlier
    /// one of its queue (a CQEP re-sent after a loss) waits for it. `None` for a repeat.
    ///
    /// A CQE of a transport failure (`RetryExceeded`, or `Flushed`: the stateful side put the
    /// connection in the error state) puts the queue pair in the error state: everything still
    /// outstanding completes, in posting order, with its own CQE if it has one, else `Flushed`.
    pub fn on_cqe(&mut self, cqe: StarCqe) -> Option<Vec<(u64, CompletionKind, StarCqe)>> {
        let p = self.outstanding.get_mut(&cqe.index).filter(|p| p.done.is_none())?;
        p.done = Some(cqe);
        p.deadline = None;
        let recv = p.kind == CompletionKind::Recv;
        let mut due = Vec::new();
        while let Some((&i, first)) = self.outstanding.iter().find(|(_, q)| (q.kind == CompletionKind::Recv) == recv) {
            let Some(c) = first.done else { break };
            due.push((first.wr_id, first.kind, c));
            self.outstanding.remove(&i);
        }
        if matches!(cqe.status, Status::RetryExceeded | Status::Flushed) {
            self.failed = true;
            for (i, p) in self.take_all() {
                let c = p.done.unwrap_or(StarCqe { qp: cqe.qp, index: i, kind: p.kind, status: Status::Flushed, bytes: 0, imm: None });
                due.push((p.wr_id, p.kind, c));
            }
        }
        Some(due)
    }

    /// The library's timer fired: WQEPs due are sent again (a confirmed one as a probe, its
    /// retries counted afresh), or fail after the last retry.
    pub fn expire(&mut self, now: Time, timeout: Time, retries: u32) -> LibActions {
        let mut a = LibActions::default();
        if let Some(d) = self.migrate_deadline {
            if d <= now {
                self.migrate_tries += 1;
                if self.migrate_tries > retries {
                    let all: Vec<u32> = self.outstanding.keys().copied().collect();
                    self.fail(&mut a, &all);
                    return a;
                } else {
                    self.migrate_deadline = Some(now + timeout);
                    a.migrate = true;
                }
            }
        }
        let mut dead = Vec::new();
        for (&i, p) in self.outstanding.iter_mut() {
            if p.deadline.is_some_and(|d| d <= now) {
                if p.acked {
                    p.acked = false;
                    p.tries = 0;
                    p.deadline = Some(now + timeout);
                    a.send.push(p.wqe);
                    continue;
                }
                p.tries += 1;
                if p.tries > retries {
                    dead.push(i);
                } else {
                    p.deadline = Some(now + timeout);
                    a.send.push(p.wqe);
                }
            }
        }
        if !dead.is_empty() {
            self.fail(&mut a, &dead);
        }
        a
    }

    /// Enters the error state: everything outstanding fails (the WQEs that ran out of retries
    /// and every other, as RC flushes a queue pair in error).
    fn fail(&mut self, a: &mut LibActions, dead: &[u32]) {
        self.failed = true;
        a.send.clear();
        a.migrate = false;
        for (i, p) in self.take_all() {
            let status = if dead.contains(&i) { Status::RetryExceeded } else { Status::Flushed };
            a.failed.push((p.wr_id, p.kind, status));
        }
    }

    /// When the timer must fire next.
    pub fn next_deadline(&self) -> Option<Time> {
        let w = self.outstanding.values().filter_map(|p| p.deadline).min();
        [w, self.migrate_deadline].into_iter().flatten().min()
    }

    /// WQEs posted and not completed.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// WQEs posted to one of the queue pair's two queues (receive, or send) and not completed:
    /// each queue has its own depth, as an RC queue pair's send and receive queues do.
    pub fn outstanding_in(&self, recv: bool) -> usize {
        self.outstanding.values().filter(|p| (p.kind == CompletionKind::Recv) == recv).count()
    }

    /// Everything outstanding, for a flush at teardown: (wr id, kind).
    pub fn drain(&mut self) -> Vec<(u64, CompletionKind)> {
        self.take_all().into_values().map(|p| (p.wr_id, p.kind)).collect()
    }

    /// Stops every timer and takes everything outstanding (the queue pair in error, or gone).
    fn take_all(&mut self) -> BTreeMap<u32, Pending> {
        self.held.clear();
        self.migrate_deadline = None;
        std::mem::take(&mut self.outstanding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::verbs::Verb;

    fn wqe() -> StarWqe {
        StarWqe { index: 0, verb: Some(Verb::Send), local_addr: 0, len: 32, lkey: 1, remote_addr: 0, rkey: 0 }
    }

    const PROBE: Time = Time(1_000_000_000);

    fn lib() -> StarLib {
        StarLib::new(0, 0, Owner::HOST, 0, 5, 1, 50000, TimerId(0))
    }

    #[test]
    fn posts_wait_for_the_migration_then_go_in_order() {
        let t = Time::from_us(100);
        let mut l = lib();
        assert!(l.start(Time::ZERO, t).migrate);
        assert!(l.post(wqe(), 10, CompletionKind::Send, Time::ZERO, t).send.is_empty());
        assert!(l.post(wqe(), 11, CompletionKind::Send, Time::ZERO, t).send.is_empty());
        let a = l.on_ea(0, true, Time::from_us(5), t, PROBE);
        assert_eq!(a.send.iter().map(|w| w.index).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(l.next_deadline(), Some(Time::from_us(105)));
        assert_eq!(l.post(wqe(), 12, CompletionKind::Send, Time::from_us(6), t).send[0].index, 2);
    }

    #[test]
    fn an_unconfirmed_wqep_is_reposted_then_fails_after_its_retries() {
        let t = Time::from_us(10);
        let mut l = lib();
        l.on_ea(0, true, Time::ZERO, t, PROBE);
        l.post(wqe(), 7, CompletionKind::Send, Time::ZERO, t);
        for k in 1..=3 {
            let now = l.next_deadline().unwrap();
            let a = l.expire(now, t, 3);
            assert_eq!((a.send.len(), a.failed.len()), (1, 0), "retry {k}");
        }
        let now = l.next_deadline().unwrap();
        assert_eq!(now, Time::from_us(40));
        let a = l.expire(now, t, 3);
        assert_eq!(a.failed, vec![(7, CompletionKind::Send, Status::RetryExceeded)]);
        assert!(l.failed, "the queue pair is in the error state");
        assert_eq!((l.outstanding(), l.next_deadline()), (0, None));
    }

    #[test]
    fn an_ea_stops_the_timer_and_a_repeated_cqe_completes_nothing() {
        let t = Time::from_us(10);
        let mut l = lib();
        l.on_ea(0, true, Time::ZERO, t, PROBE);
        l.post(wqe(), 7, CompletionKind::Send, Time::ZERO, t);
        l.on_ea(0, false, Time::from_us(2), t, PROBE);
        assert_eq!(l.next_deadline(), Some(Time::from_us(2) + PROBE), "no re-post before the probe");
        let c = cqe(0, CompletionKind::Send);
        assert_eq!(l.on_cqe(c), Some(vec![(7, CompletionKind::Send, c)]));
        assert_eq!(l.next_deadline(), None);
        assert_eq!(l.on_cqe(c), None);
    }

    #[test]
    fn a_confirmed_wqe_left_uncompleted_is_probed_and_fails_if_the_probe_goes_unanswered() {
        let t = Time::from_us(10);
        let mut l = lib();
        l.on_ea(0, true, Time::ZERO, t, PROBE);
        l.post(wqe(), 7, CompletionKind::Send, Time::ZERO, t);
        l.post(StarWqe { verb: None, ..wqe() }, 8, CompletionKind::Recv, Time::ZERO, t);
        l.on_ea(0, false, Time::from_us(1), t, PROBE);
        l.on_ea(1, false, Time::from_us(1), t, PROBE);
        // Only the send-queue WQE is probed: a receive waits for the peer, as RC's does.
        let at = Time::from_us(1) + PROBE;
        assert_eq!(l.next_deadline(), Some(at));
        let a = l.expire(at, t, 2);
        assert_eq!((a.send.iter().map(|w| w.index).collect::<Vec<_>>(), a.failed.len()), (vec![0], 0));
        // A live stateful side confirms the probe: the WQE waits another probe period.
        l.on_ea(0, false, at + Time::from_us(3), t, PROBE);
        let at = at + Time::from_us(3) + PROBE;
        assert_eq!(l.next_deadline(), Some(at));
        // One that gave up never does: two retries of the probe, then the queue pair fails.
        let mut now = at;
        for k in 0..3 {
            let a = l.expire(now, t, 2);
            assert_eq!((a.send.len(), a.failed.len()), (1, 0), "try {k}");
            now = l.next_deadline().unwrap();
            assert_eq!(now, at + Time::from_us(10 * (k + 1)));
        }
        let a = l.expire(now, t, 2);
        assert_eq!(a.failed, vec![(7, CompletionKind::Send, Status::RetryExceeded), (8, CompletionKind::Recv, Status::Flushed)]);
        assert!(l.failed);
    }

    fn cqe(index: u32, kind: CompletionKind) -> StarCqe {
        StarCqe { qp: 0, index, kind, status: Status::Success, bytes: 32, imm: None }
    }

    #[test]
    fn a_failed_cqe_flushes_the_rest_and_completes_nothing_twice() {
        let t = Time::from_us(10);
        let mut l = lib();
        l.on_ea(0, true, Time::ZERO, t, PROBE);
        l.post(wqe(), 10, CompletionKind::Send, Time::ZERO, t); // 0
        l.post(StarWqe { verb: None, ..wqe() }, 20, CompletionKind::Recv, Time::ZERO, t); // 1
        l.post(wqe(), 11, CompletionKind::Send, Time::ZERO, t); // 2
        let bad = StarCqe { status: Status::RetryExceeded, bytes: 0, ..cqe(0, CompletionKind::Send) };
        let got: Vec<_> = l.on_cqe(bad).unwrap().iter().map(|d| (d.0, d.2.status)).collect();
        assert_eq!(got, vec![(10, Status::RetryExceeded), (20, Status::Flushed), (11, Status::Flushed)]);
        assert!(l.failed);
        assert_eq!((l.outstanding(), l.next_deadline()), (0, None));
        assert_eq!(l.on_cqe(cqe(2, CompletionKind::Send)), None, "nothing completes twice");
    }

    #[test]
    fn completions_come_in_posting_order_per_queue() {
        let t = Time::from_us(10);
        let mut l = lib();
        l.on_ea(0, true, Time::ZERO, t, PROBE);
        let recv = StarWqe { verb: None, ..wqe() };
        l.post(wqe(), 10, CompletionKind::Send, Time::ZERO, t); // 0
        l.post(recv, 20, CompletionKind::Recv, Time::ZERO, t); // 1
        l.post(wqe(), 11, CompletionKind::Send, Time::ZERO, t); // 2
        l.post(recv, 21, CompletionKind::Recv, Time::ZERO, t); // 3
        let ids = |v: Option<Vec<(u64, CompletionKind, StarCqe)>>| v.unwrap().iter().map(|d| d.0).collect::<Vec<_>>();
        assert!(ids(l.on_cqe(cqe(2, CompletionKind::Send))).is_empty(), "SEND 11 waits for SEND 10");
        assert_eq!(ids(l.on_cqe(cqe(1, CompletionKind::Recv))), vec![20], "the receive queue runs apart");
        assert_eq!(ids(l.on_cqe(cqe(0, CompletionKind::Send))), vec![10, 11]);
        assert_eq!(ids(l.on_cqe(cqe(3, CompletionKind::Recv))), vec![21]);
        assert_eq!(l.outstanding(), 0);
    }
}
