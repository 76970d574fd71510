//! A StaR connection's state on its stateful side (StaR §III-C): both sides' transmission
//! state. The stateful side runs two queues of operations, its own WQEs and the stateless
//! side's (from WQEPs), each in posting order. An operation moves `len` bytes in chunks of one
//! MTU: towards the stateless side in RDs (acknowledged by RDAs), or from it with GDs (answered
//! by GDAs that carry the data). Every RD, GD and CQEP waits in `unacked` until its
//! acknowledgement, and is sent again after the timeout. Finished operations complete in order:
//! a CQE here for the stateful side's own WQEs, a CQEP for the stateless side's.

use crate::nic::qp::Owner;
use crate::nic::verbs::{CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::star::{StarCqe, StarType, StarWqe};
use std::collections::{BTreeMap, VecDeque};

/// Which way an operation's data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Into the stateless side's memory: RDs.
    Push,
    /// Out of the stateless side's memory: GDs and GDAs.
    Pull,
}

/// Which queue an operation is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The stateful side's own WQE.
    Local,
    /// The stateless side's WQE, from a WQEP.
    Remote,
}

/// An operation as the stateful side runs it.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub id: u64,
    pub side: Side,
    /// The WQE it runs (local: the stateful side's; remote: the stateless side's).
    pub local_wr: Option<SendWr>,
    pub remote_wqe: Option<StarWqe>,
    /// Set once the operation starts (its receive WQE found, its buffers checked).
    pub started: bool,
    pub dir: Dir,
    pub len: u64,
    /// The stateless side's buffer and the key that names it (its lkey, or an rkey).
    pub s_addr: u64,
    pub s_key: u32,
    pub s_remote: bool,
    /// The stateful side's buffer.
    pub c_addr: u64,
    pub chunks: u32,
    /// Chunks sent (the send window holds back the rest) and acknowledged.
    pub sent: u32,
    pub done: u32,
    /// When its WQE is on the NIC (a local post's doorbell and fetch).
    pub ready_at: Time,
    /// A receive WQE it consumed here (the stateless side SENDs, or WRITEs with immediate).
    pub local_recv: Option<RecvWr>,
    /// A receive WQE of the stateless side it consumed (index, length).
    pub remote_recv: Option<StarWqe>,
    pub status: Status,
    pub finished: bool,
}

/// The chunk number of a probe: an empty GD the stateful side sends when one of its own WQEs
/// has waited a whole resend budget for the stateless side (for a receive WQE, or for the
/// connection's state to migrate). A live stateless side answers it (a GDA) and the WQE waits
/// on, as an RC SEND answered by RNR NAKs does; a peer that never answers fails the WQE
/// (`RetryExceeded`) and the connection, as an RC queue pair whose responder is silent does.
pub const PROBE_CHUNK: u32 = u32::MAX;

/// A sent RD, GD or CQEP waiting for its acknowledgement.
#[derive(Clone, Copy, Debug)]
pub struct Unacked {
    pub psn: u32,
    pub ptype: StarType,
    /// The operation and chunk (RD, GD), or the CQE (CQEP).
    pub op: u64,
    pub chunk: u32,
    pub cqe: Option<StarCqe>,
    pub sent_at: Time,
    pub tries: u32,
}

/// A receive WQE here that a SEND (or WRITE with immediate) of the stateless side consumed: its
/// completion waits for the EA of the CQEP that told the stateless side (§III-B: the stateful
/// side generates its CQE after receiving the EA, for confirmation), and completions leave in
/// the receive queue's order.
#[derive(Clone, Copy, Debug)]
pub struct HeldRecv {
    pub cqep_psn: u32,
    pub wr_id: u64,
    pub status: Status,
    pub bytes: u64,
    pub imm: Option<u32>,
    pub confirmed: bool,
}

/// What finished, in order, for the world to deliver.
#[derive(Clone, Copy, Debug)]
pub enum Finished {
    /// A CQE for the stateful side's own WQE.
    Local { wr_id: u64, kind: CompletionKind, status: Status, bytes: u64, imm: Option<u32> },
    /// A receive WQE of the stateful side consumed (a message landed).
    LocalRecv { wr_id: u64, status: Status, bytes: u64, imm: Option<u32> },
    /// A CQEP to send to the stateless side.
    Remote(StarCqe),
}

/// A connection's state on its stateful side.
#[derive(Clone, Debug)]
pub struct StarConn {
    pub node: u32,
    pub host: u32,
    pub owner: Owner,
    /// The stateless side: its node and its library's handle.
    pub peer_node: u32,
    pub peer: u32,
    pub udp_sport: u16,
    pub flow_hash: u32,
    pub timer: TimerId,
    /// The stateless side's initial state has arrived (migration WQEP).
    pub migrated: bool,
    /// A CQEP went unacknowledged through every resend: the stateless side can no longer be
    /// told what completed, so the connection is in the error state (see [`StarConn::fail`]).
    pub failed: bool,
    /// Since when an own WQE has waited for the stateless side ([`StarConn::waiting_for_peer`]),
    /// and whether a probe of the peer is out (see [`PROBE_CHUNK`]).
    pub waiting_since: Option<Time>,
    pub probing: bool,
    pub next_psn: u32,
    /// When the latest data from the stateless side was in this host's memory (completions
    /// follow it).
    pub placed: Time,
    next_op: u64,
    /// Receive WQEs posted here, and the stateless side's (from WQEPs).
    pub local_rq: VecDeque<RecvWr>,
    pub remote_rq: VecDeque<StarWqe>,
    pub ops: VecDeque<Op>,
    pub unacked: VecDeque<Unacked>,
    /// Receive completions waiting for their CQEP's EA, in the receive queue's order.
    pub held: VecDeque<HeldRecv>,
    /// The index of the stateless side's next WQE to run, and WQEs that arrived ahead of it
    /// (a WQEP sent again after a loss arrives behind later ones; they run in posting order).
    next_wqe: u32,
    early: BTreeMap<u32, StarWqe>,
}

impl StarConn {
    #[allow(clippy::too_many_arguments)]
    pub fn new(node: u32, host: u32, owner: Owner, peer_node: u32, peer: u32, udp_sport: u16, flow_hash: u32, timer: TimerId) -> StarConn {
        StarConn {
            node,
            host,
            owner,
            peer_node,
            peer,
            udp_sport,
            flow_hash,
            timer,
            migrated: false,
            failed: false,
            waiting_since: None,
            probing: false,
            next_psn: 0,
            placed: Time::ZERO,
            next_op: 0,
            local_rq: VecDeque::new(),
            remote_rq: VecDeque::new(),
            ops: VecDeque::new(),
            unacked: VecDeque::new(),
            held: VecDeque::new(),
            next_wqe: 0,
            early: BTreeMap::new(),
        }
    }

    /// Takes a WQE from a WQEP: returns the WQEs that can now run, in posting order (none for
    /// a repeat, or for one that arrived ahead of an earlier one still missing).
    pub fn take_wqep(&mut self, w: StarWqe) -> Vec<StarWqe> {
        if !psn_le(self.next_wqe, w.index) || self.early.contains_key(&w.index) {
            return Vec::new();
        }
        self.early.insert(w.index, w);
        let mut ready = Vec::new();
        while let Some(w) = self.early.remove(&self.next_wqe) {
            ready.push(w);
            self.next_wqe = (self.next_wqe + 1) & 0xff_ffff;
        }
        ready
    }

    fn op(&mut self, side: Side, local_wr: Option<SendWr>, remote_wqe: Option<StarWqe>) -> &mut Op {
        let id = self.next_op;
        self.next_op += 1;
        self.ops.push_back(Op {
            id,
            side,
            local_wr,
            remote_wqe,
            started: false,
            dir: Dir::Push,
            len: 0,
            s_addr: 0,
            s_key: 0,
            s_remote: false,
            c_addr: 0,
            chunks: 0,
            sent: 0,
            done: 0,
            ready_at: Time::ZERO,
            local_recv: None,
            remote_recv: None,
            status: Status::Success,
            finished: false,
        });
        self.ops.back_mut().expect("pushed")
    }

    /// Queues one of the stateful side's own WQEs, on the NIC at `ready`.
    pub fn post_local(&mut self, wr: SendWr, ready: Time) {
        self.op(Side::Local, Some(wr), None).ready_at = ready;
    }

    /// Takes a WQE of the stateless side (a receive WQE joins its receive queue).
    pub fn post_remote(&mut self, wqe: StarWqe) {
        match wqe.verb {
            None => self.remote_rq.push_back(wqe),
            Some(_) => {
                self.op(Side::Remote, None, Some(wqe));
            }
        }
    }

    /// Starts, in order per queue, the operations that can start: their receive WQEs are there.
    /// Returns the ids of the operations started; an operation waiting for a receive WQE holds
    /// the later ones of its queue.
    pub fn start_ready(&mut self, mtu: u32) -> Vec<u64> {
        let mut started = Vec::new();
        let mut blocked = [false, false];
        for i in 0..self.ops.len() {
            let side = self.ops[i].side as usize;
            if self.ops[i].started || self.ops[i].finished || blocked[side] {
                continue;
            }
            if !self.prepare(i) {
                blocked[side] = true;
                continue;
            }
            let op = &mut self.ops[i];
            op.started = true;
            op.chunks = (op.len.div_ceil(mtu as u64) as u32).max(1);
            started.push(op.id);
        }
        started
    }

    /// Fills in an operation's buffers; false if it needs a receive WQE that is not there.
    fn prepare(&mut self, i: usize) -> bool {
        let op = self.ops[i];
        let needs_local_recv = matches!(op.remote_wqe.and_then(|w| w.verb), Some(Verb::Send | Verb::SendImm(_) | Verb::WriteImm(_)));
        let needs_remote_recv = matches!(op.local_wr.map(|w| w.verb), Some(Verb::Send | Verb::SendImm(_) | Verb::WriteImm(_)));
        if (needs_local_recv && self.local_rq.is_empty()) || (needs_remote_recv && self.remote_rq.is_empty()) {
            return false;
        }
        let local_recv = if needs_local_recv { self.local_rq.pop_front() } else { None };
        let remote_recv = if needs_remote_recv { self.remote_rq.pop_front() } else { None };
        let op = &mut self.ops[i];
        op.local_recv = local_recv;
        op.remote_recv = remote_recv;
        if let Some(wr) = op.local_wr {
            op.len = wr.len;
            op.c_addr = wr.local_addr;
            match wr.verb {
                Verb::Send | Verb::SendImm(_) => {
                    let r = remote_recv.expect("taken");
                    (op.dir, op.s_addr, op.s_key, op.s_remote) = (Dir::Push, r.local_addr, r.lkey, false);
                    if wr.len > r.len {
                        op.status = Status::RemoteInvalidRequest;
                    }
                }
                Verb::Write | Verb::WriteImm(_) => (op.dir, op.s_addr, op.s_key, op.s_remote) = (Dir::Push, wr.remote_addr, wr.rkey, true),
                Verb::Read => (op.dir, op.s_addr, op.s_key, op.s_remote) = (Dir::Pull, wr.remote_addr, wr.rkey, true),
            }
        } else if let Some(w) = op.remote_wqe {
            op.len = w.len;
            op.s_addr = w.local_addr;
            op.s_key = w.lkey;
            op.s_remote = false;
            match w.verb.expect("not a receive WQE") {
                Verb::Send | Verb::SendImm(_) => {
                    let r = local_recv.expect("taken");
                    (op.dir, op.c_addr) = (Dir::Pull, r.addr);
                    if w.len > r.len {
                        op.status = Status::RemoteInvalidRequest;
                    }
                }
                Verb::Write | Verb::WriteImm(_) => (op.dir, op.c_addr) = (Dir::Pull, w.remote_addr),
                Verb::Read => (op.dir, op.c_addr) = (Dir::Push, w.remote_addr),
            }
        }
        true
    }

    pub fn find(&self, id: u64) -> Option<&Op> {
        self.ops.iter().find(|o| o.id == id)
    }

    pub fn find_mut(&mut self, id: u64) -> Option<&mut Op> {
        self.ops.iter_mut().find(|o| o.id == id)
    }

    /// A PSN for the next RD, GD or CQEP.
    pub fn psn(&mut self) -> u32 {
        let p = self.next_psn;
        self.next_psn = (self.next_psn + 1) & 0xff_ffff;
        p
    }

    /// Ends an operation now (failed before or during its transfer, or done).
    pub fn finish(&mut self, id: u64, status: Status) {
        if let Some(op) = self.find_mut(id) {
            // What ended keeps how it ended.
            if op.status == Status::Success && !op.finished {
                op.status = status;
            }
            op.finished = true;
        }
        if status != Status::Success {
            self.unacked.retain(|u| u.op != id || u.ptype == StarType::Cqep);
        }
    }

    /// Enters the error state, as an RC queue pair after a retry-exceeded error: every
    /// unfinished operation ends `Flushed`, nothing more is resent and nothing more is taken
    /// from the stateless side. Returns the receive completions held for an EA (to deliver as
    /// they are), and the receive WQEs posted here and the stateless side's not yet consumed,
    /// to complete `Flushed` (the latter by a CQEP each, which [`StarConn::pop_finished`] also
    /// yields for the stateless side's operations).
    pub fn fail(&mut self) -> (Vec<HeldRecv>, Vec<RecvWr>, Vec<StarWqe>) {
        self.failed = true;
        self.unacked.clear();
        for op in self.ops.iter_mut().filter(|o| !o.finished) {
            if op.status == Status::Success {
                op.status = Status::Flushed;
            }
            op.finished = true;
        }
        self.early.clear();
        // Receive completions that waited for an EA that will not come (their data landed, and
        // the stateless side may have its Success: they complete as they were), the receive
        // WQEs no message reached, and the stateless side's.
        (self.held.drain(..).collect(), std::mem::take(&mut self.local_rq).into(), std::mem::take(&mut self.remote_rq).into())
    }

    /// An RDA for `psn`: it acknowledges its own RD only (the stateless side cannot know of
    /// RDs lost before it). Returns the operation if that finished it.
    pub fn on_rda(&mut self, psn: u32) -> Option<u64> {
        let k = self.unacked.iter().position(|u| u.psn == psn && u.ptype == StarType::Rd)?;
        let op = self.unacked.remove(k).expect("found").op;
        let o = self.find_mut(op)?;
        o.done += 1;
        (o.done >= o.chunks && !o.finished).then(|| {
            o.finished = true;
            op
        })
    }

    /// A GDA for `psn`: the operation and chunk its data belongs to, and whether it finished the
    /// operation; `None` for a repeat.
    pub fn on_gda(&mut self, psn: u32) -> Option<(u64, u32, bool)> {
        let k = self.unacked.iter().position(|u| u.psn == psn && u.ptype == StarType::Gd)?;
        let u = self.unacked.remove(k).expect("found");
        if u.chunk == PROBE_CHUNK {
            // The peer is alive: the SEND waits another budget before the next probe.
            self.probing = false;
            self.waiting_since = None;
            return None;
        }
        let o = self.find_mut(u.op)?;
        o.done += 1;
        let last = o.done >= o.chunks && !o.finished;
        if last {
            o.finished = true;
        }
        Some((u.op, u.chunk, last))
    }

    /// The security module refused the probe for operation `op` (the peer's rule is gone): the
    /// operation fails as a refused chunk's does, and nothing waits on the probe.
    pub fn probe_refused(&mut self, op: u64) {
        self.finish(op, Status::RemoteAccess);
        (self.probing, self.waiting_since) = (false, None);
    }

    /// An EA for CQEP `psn`: the CQEP it confirms is done with, and the receive completions it
    /// held that are now first in their queue's order are returned to deliver.
    pub fn on_ea(&mut self, psn: u32) -> Vec<HeldRecv> {
        self.unacked.retain(|u| !(u.psn == psn && u.ptype == StarType::Cqep));
        for h in self.held.iter_mut().filter(|h| h.cqep_psn == psn) {
            h.confirmed = true;
        }
        self.take_confirmed()
    }

    /// The held receive completions at the head of the queue that are confirmed, in order.
    pub fn take_confirmed(&mut self) -> Vec<HeldRecv> {
        let n = self.held.iter().take_while(|h| h.confirmed).count();
        self.held.drain(..n).collect()
    }

    /// Takes the finished operations at the head of each queue, in order, as what to deliver.
    pub fn pop_finished(&mut self) -> Vec<Finished> {
        let mut out = Vec::new();
        for side in [Side::Local, Side::Remote] {
            while let Some(i) = self.ops.iter().position(|o| o.side == side) {
                if !self.ops[i].finished {
                    break;
                }
                let op = self.ops.remove(i).expect("found");
                finished_of(&op, self.peer, &mut out);
            }
        }
        out
    }

    /// When the oldest unacknowledged packet times out.
    pub fn next_deadline(&self, rto: Time, probe_after: Time) -> Option<Time> {
        let probe = self.waiting_since.filter(|_| !self.probing && !self.failed).map(|t| t + probe_after);
        self.unacked.iter().map(|u| u.sent_at + rto).chain(probe).min()
    }

    /// The own operation that waits for the stateless side, if the next one to start does: for
    /// the connection's state (it has not migrated yet), or for a receive WQE (a SEND, or a
    /// WRITE with immediate, with none of the peer's receives here).
    pub fn waiting_for_peer(&self) -> Option<u64> {
        let op = self.ops.iter().find(|o| o.side == Side::Local && !o.started && !o.finished)?;
        let needs = matches!(op.local_wr.map(|w| w.verb), Some(Verb::Send | Verb::SendImm(_) | Verb::WriteImm(_)));
        (!self.migrated || (needs && self.remote_rq.is_empty())).then_some(op.id)
    }
}

/// What an operation's end delivers.
fn finished_of(op: &Op, peer: u32, out: &mut Vec<Finished>) {
    let imm = op.local_wr.map(|w| w.verb).or(op.remote_wqe.and_then(|w| w.verb)).and_then(Verb::imm);
    if let Some(wr) = op.local_wr {
        out.push(Finished::Local { wr_id: wr.id, kind: wr.verb.completion_kind(), status: op.status, bytes: op.len, imm: None });
        if let Some(r) = op.remote_recv {
            // The receive it consumed completes with it; one of a SEND the connection's failure
            // ended, or that a protection check refused (its own buffer's, or the receive
            // buffer's whitelist rule), is flushed: it was taken, and no message reached it. (Left
            // out, it never completed, and every later receive waited behind it.)
            let status = match op.status {
                Status::RemoteInvalidRequest => Status::LocalLength,
                s @ (Status::Success | Status::LocalLength | Status::Flushed) => s,
                _ => Status::Flushed,
            };
            let bytes = if status == Status::Flushed { 0 } else { op.len };
            out.push(Finished::Remote(StarCqe { qp: peer, index: r.index, kind: CompletionKind::Recv, status, bytes, imm }));
        }
    }
    if let Some(w) = op.remote_wqe {
        if let Some(r) = op.local_recv {
            let status = if op.status == Status::RemoteInvalidRequest { Status::LocalLength } else { op.status };
            let bytes = if status == Status::Flushed { 0 } else { op.len };
            out.push(Finished::LocalRecv { wr_id: r.id, status, bytes, imm });
        }
        let kind = w.verb.expect("an operation").completion_kind();
        out.push(Finished::Remote(StarCqe { qp: peer, index: w.index, kind, status: op.status, bytes: op.len, imm: None }));
    }
}

/// `a ≤ b` in 24-bit PSN space.
fn psn_le(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) & 0xff_ffff) < 0x80_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> StarConn {
        StarConn::new(1, 1, Owner::HOST, 0, 3, 50000, 7, TimerId(0))
    }

    fn send(id: u64, len: u64) -> SendWr {
        SendWr { id, verb: Verb::Send, local_addr: 0, len, lkey: 0, remote_addr: 0, rkey: 0 }
    }

    fn recv_wqe(index: u32, len: u64) -> StarWqe {
        StarWqe { index, verb: None, local_addr: 4096, len, lkey: 9, remote_addr: 0, rkey: 0 }
    }

    #[test]
    fn a_send_waits_for_the_stateless_sides_receive_and_holds_later_ones() {
        let mut c = conn();
        c.post_local(send(1, 2500), Time::ZERO);
        c.post_local(SendWr { verb: Verb::Write, ..send(2, 10) }, Time::ZERO);
        assert!(c.start_ready(1000).is_empty(), "no receive WQE of the stateless side yet");
        c.post_remote(recv_wqe(0, 4096));
        let s = c.start_ready(1000);
        assert_eq!(s.len(), 2);
        let op = c.find(s[0]).unwrap();
        assert_eq!((op.dir, op.s_addr, op.s_key, op.s_remote, op.chunks), (Dir::Push, 4096, 9, false, 3));
    }

    #[test]
    fn each_rda_acknowledges_its_rd_and_completions_come_in_order() {
        let mut c = conn();
        c.post_remote(recv_wqe(0, 4096));
        c.post_local(send(1, 2500), Time::ZERO);
        c.post_local(SendWr { verb: Verb::Write, ..send(2, 10) }, Time::ZERO);
        let s = c.start_ready(1000);
        for (op, chunks) in [(s[0], 3), (s[1], 1)] {
            for k in 0..chunks {
                let psn = c.psn();
                c.unacked.push_back(Unacked { psn, ptype: StarType::Rd, op, chunk: k, cqe: None, sent_at: Time::ZERO, tries: 0 });
            }
        }
        // The WRITE finishes first but completes after the SEND.
        assert_eq!(c.on_rda(3), Some(s[1]));
        assert!(c.pop_finished().is_empty());
        assert_eq!(c.on_rda(1), None, "RD 1 of the SEND: RD 0 may be lost");
        assert_eq!(c.on_rda(2), None);
        assert_eq!(c.on_rda(0), Some(s[0]));
        assert_eq!(c.on_rda(2), None, "a repeated RDA");
        let f = c.pop_finished();
        assert!(matches!(f[0], Finished::Local { wr_id: 1, kind: CompletionKind::Send, bytes: 2500, .. }));
        assert!(matches!(f[1], Finished::Remote(StarCqe { qp: 3, index: 0, kind: CompletionKind::Recv, bytes: 2500, .. })));
        assert!(matches!(f[2], Finished::Local { wr_id: 2, kind: CompletionKind::Write, .. }));
        assert!(c.ops.is_empty());
    }

    #[test]
    fn wqeps_run_in_posting_order_and_repeats_run_once() {
        let mut c = conn();
        let idx = |v: Vec<StarWqe>| v.iter().map(|w| w.index).collect::<Vec<_>>();
        assert!(c.take_wqep(recv_wqe(1, 8)).is_empty(), "WQE 0 is still missing");
        assert!(c.take_wqep(recv_wqe(1, 8)).is_empty(), "a repeat of an early one");
        assert_eq!(idx(c.take_wqep(recv_wqe(0, 8))), vec![0, 1]);
        assert!(c.take_wqep(recv_wqe(0, 8)).is_empty());
        assert!(c.take_wqep(recv_wqe(1, 8)).is_empty());
        assert_eq!(idx(c.take_wqep(recv_wqe(2, 8))), vec![2]);
        assert!(c.take_wqep(recv_wqe(5, 8)).is_empty());
        assert_eq!(idx(c.take_wqep(recv_wqe(4, 8))), Vec::<u32>::new());
        assert_eq!(idx(c.take_wqep(recv_wqe(3, 8))), vec![3, 4, 5]);
    }

    #[test]
    fn a_refused_send_flushes_the_receive_it_took() {
        // A SEND refused (its RD's receive buffer not whitelisted, or its own buffer's check)
        // took the stateless side's receive WQE; the receive was never completed, and every
        // later one waited behind it.
        for status in [Status::RemoteAccess, Status::LocalProtection, Status::RetryExceeded] {
            let mut c = conn();
            c.post_remote(recv_wqe(0, 4096));
            c.post_local(send(1, 100), Time::ZERO);
            let s = c.start_ready(1000);
            c.finish(s[0], status);
            let f = c.pop_finished();
            assert!(matches!(f[0], Finished::Local { wr_id: 1, status: st, .. } if st == status), "{status:?}: {f:?}");
            assert!(matches!(f[1], Finished::Remote(StarCqe { index: 0, kind: CompletionKind::Recv, status: Status::Flushed, bytes: 0, .. })), "{status:?}: {f:?}");
        }
    }

    #[test]
    fn psn_order_wraps() {
        assert!(psn_le(0xff_fffe, 1));
        assert!(!psn_le(1, 0xff_fffe));
        assert!(psn_le(5, 5));
    }
}
