//! The transport driven by hand, with no event loop: two NICs 100 Gbps apart, packets carried
//! from one to the other by the test, every packet and completion checked against what the
//! RoCEv2 rules say it must be.

use super::{requester, responder, Action, Ctx, Outbox};
use crate::nic::events::EventTap;
use crate::nic::qp::{Owner, Qp};
use crate::nic::qp_table::QpTable;
use crate::nic::verbs::{Access, CompletionKind, RecvWr, SendWr, Status, Verb};
use crate::nic::{MemoryMode, Nic, NicSpec, Recovery};
use crate::sim::TimerId;
use crate::units::{BitsPerSec, Bytes, Time};
use crate::wire::packet::{PacketId, PacketPool};
use crate::wire::roce::{Opcode, Syndrome};

struct Pair {
    spec: NicSpec,
    nics: Vec<Nic>,
    qps: QpTable,
    pool: PacketPool,
    tap: EventTap,
    out: Outbox,
    now: Time,
    /// (lkey on host 0, rkey on host 1, lkey on host 1)
    keys: (u32, u32, u32),
}

impl Pair {
    fn new(recovery: Recovery) -> Pair {
        let spec = NicSpec { memory: MemoryMode::Bytes, memory_size: Bytes(1 << 20), recovery, cc: crate::nic::cc::CcSpec::None {}, ..NicSpec::default() };
        let mut nics: Vec<Nic> = (0..2).map(|h| Nic::new(h, h, h, &spec, BitsPerSec::gbps(100))).collect();
        let a = nics[0].memory.register(0, 0, 1 << 16, Access::LOCAL_WRITE).unwrap();
        let b = nics[1].memory.register(1, 1 << 16, 1 << 16, Access::ALL).unwrap();
        let mut p = Pair { spec, nics, qps: QpTable::default(), pool: PacketPool::default(), tap: EventTap::recording(), out: Outbox::default(), now: Time::ZERO, keys: (a.lkey, b.rkey, b.lkey) };
        for h in 0..2u32 {
            let (q, _) = p.qps.open(Time::ZERO, |q| Qp::new_slot(TimerId(q), &p.spec));
            p.qps.get_mut(q).start(&p.spec, h, h, Owner::HOST, 50000 + h as u16);
        }
        let rtt = Time::from_us(2);
        p.ctx().connect_to(0, 1, rtt);
        p.ctx().connect_to(1, 0, rtt);
        p
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx { now: self.now, spec: &self.spec, nics: &mut self.nics, qps: &mut self.qps, pool: &mut self.pool, tap: &mut self.tap, out: &mut self.out, int_enabled: false, seed: 0 }
    }

    fn actions(&mut self) -> Vec<Action> {
        std::mem::take(&mut self.out.actions)
    }

    /// Control packets (ACKs, NAKs, CNPs) the last calls queued, in order.
    fn control(&mut self) -> Vec<PacketId> {
        self.actions().into_iter().filter_map(|a| if let Action::Control { id, .. } = a { Some(id) } else { None }).collect()
    }

    fn write(&mut self, len: u64, verb: Verb) {
        let (lkey, rkey, _) = self.keys;
        let wr = SendWr { id: 7, verb, local_addr: 0, len, lkey, remote_addr: 1 << 16, rkey };
        let now = self.now;
        requester::post_send(&mut self.ctx(), 0, wr, now).unwrap();
    }

    /// Queue pair `q`'s next packet, at the time it is eligible, if the transport has put it
    /// in the scheduler (as the NIC would pick it).
    fn send(&mut self, q: u32) -> Option<PacketId> {
        if !self.qps.get(q).in_sched {
            return None;
        }
        self.qps.get_mut(q).in_sched = false;
        // When the transport would let it send: its next packet's WQE fetched and its pacing.
        let ready = self.ctx().eligible_at(q).unwrap_or(self.now);
        self.now = self.now.max(ready);
        requester::next_packet(&mut self.ctx(), q).map(|(id, _)| id)
    }

    /// PSNs of every packet queue pair `q` can send now.
    fn send_all(&mut self, q: u32) -> Vec<u64> {
        std::iter::from_fn(|| self.send(q)).collect::<Vec<_>>().into_iter().map(|id| self.pool.get(id).seq).collect()
    }

    fn deliver(&mut self, to_host: u32, id: PacketId) {
        responder::receive(&mut self.ctx(), to_host, id);
    }
}

#[test]
fn a_write_is_packetized_acknowledged_and_completed() {
    let mut p = Pair::new(Recovery::GoBackN);
    let data: Vec<u8> = (0..2500u32).map(|i| (i * 7) as u8).collect();
    p.nics[0].memory.write(0, &data);
    p.write(2500, Verb::Write);
    let acts = p.actions();
    assert!(!acts.is_empty() && acts.iter().all(|a| *a == Action::Kick(0)), "posting wakes the host port: {acts:?}");
    let mut sent = Vec::new();
    while let Some(id) = p.send(0) {
        let pkt = *p.pool.get(id);
        sent.push((pkt.roce.opcode, pkt.seq, pkt.roce.payload, pkt.roce.offset, pkt.size));
        p.out.actions.clear();
        p.deliver(1, id);
        let acks = p.control();
        assert_eq!(acks.len(), 1, "ack_interval 1: one ACK per packet");
        let ack = *p.pool.get(acks[0]);
        assert_eq!((ack.roce.opcode, ack.roce.syndrome, ack.seq), (Opcode::Acknowledge, Syndrome::Ack, pkt.seq));
        assert_eq!(ack.size, 66);
        p.deliver(0, acks[0]);
        if pkt.seq < 2 {
            assert!(p.nics[0].cq.is_empty());
        }
    }
    assert_eq!(
        sent,
        vec![
            (Opcode::WriteFirst, 0, 1000, 0, 1000 + 78),
            (Opcode::WriteMiddle, 1, 1000, 1000, 1000 + 62),
            (Opcode::WriteLast, 2, 500, 2000, 500 + 62),
        ]
    );
    let c = p.nics[0].cq.pop_front().expect("the WRITE completed");
    assert_eq!((c.wr_id, c.kind, c.status, c.bytes), (7, CompletionKind::Write, Status::Success, 2500));
    assert_eq!(p.nics[1].memory.slice(1 << 16, 2500), &data[..]);
    let qp = p.qps.get(0);
    assert_eq!((qp.snd_una, qp.snd_nxt, qp.rto_at), (3, 3, Time::MAX), "all acknowledged, no timer");
    let kinds: Vec<&str> = p.tap.log.as_ref().unwrap().records.iter().map(|r| r.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "tx").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "ack").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "rx").count(), 3);
}

#[test]
fn a_read_is_answered_by_the_responder_and_completes_at_the_requester() {
    let mut p = Pair::new(Recovery::GoBackN);
    let data: Vec<u8> = (0..1500u32).map(|i| (i * 3) as u8).collect();
    p.nics[1].memory.write(1 << 16, &data);
    p.write(1500, Verb::Read);
    let req = p.send(0).expect("the READ request");
    let r = *p.pool.get(req);
    assert_eq!((r.roce.opcode, r.seq, r.roce.dma_len, r.size), (Opcode::ReadRequest, 0, 1500, 78));
    assert_eq!(p.qps.get(0).snd_nxt, 2, "a READ takes one PSN per response packet");
    assert!(p.send(0).is_none(), "nothing more to send");
    p.out.actions.clear();
    p.deliver(1, req);
    assert!(p.actions().contains(&Action::Kick(1)), "the responder has responses to send");
    let mut resp = Vec::new();
    while let Some(id) = p.send(1) {
        let pkt = *p.pool.get(id);
        resp.push((pkt.roce.opcode, pkt.seq, pkt.roce.payload));
        p.deliver(0, id);
    }
    assert_eq!(resp, vec![(Opcode::ReadResponseFirst, 0, 1000), (Opcode::ReadResponseLast, 1, 500)]);
    let c = p.nics[0].cq.pop_front().expect("the READ completed");
    assert_eq!((c.kind, c.status, c.bytes), (CompletionKind::Read, Status::Success, 1500));
    assert_eq!(p.nics[0].memory.slice(0, 1500), &data[..]);
}

#[test]
fn a_send_without_a_receive_gets_an_rnr_nak_and_succeeds_after_the_rnr_timer() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.write(100, Verb::Send);
    let first = p.send(0).unwrap();
    p.out.actions.clear();
    p.deliver(1, first);
    let nak = p.control()[0];
    assert_eq!((p.pool.get(nak).roce.syndrome, p.pool.get(nak).seq), (Syndrome::RnrNak, 0));
    let t = p.now;
    p.deliver(0, nak);
    let qp = p.qps.get(0);
    // rnr_retry 7 (the default) retries forever: nothing is counted down.
    assert_eq!((qp.snd_nxt, qp.rnr_until, qp.rnr_left), (0, t + p.spec.rnr_timer, p.spec.rnr_retry));
    assert!(requester::next_packet(&mut p.ctx(), 0).is_none(), "not before the RNR timer");
    // The application posts a receive; the retry after the timer lands in it.
    let lkey = p.keys.2;
    p.qps.get_mut(1).rq.push_back(RecvWr { id: 9, addr: 1 << 16, len: 4096, lkey });
    p.now = t + p.spec.rnr_timer;
    let again = p.send(0).expect("the retry");
    assert_eq!((p.pool.get(again).seq, p.pool.get(again).roce.opcode), (0, Opcode::SendOnly));
    p.out.actions.clear();
    p.deliver(1, again);
    let c = p.nics[1].cq.pop_front().expect("a receive completion");
    assert_eq!((c.wr_id, c.kind, c.status, c.bytes), (9, CompletionKind::Recv, Status::Success, 100));
    let ack = p.control()[0];
    p.deliver(0, ack);
    assert_eq!(p.nics[0].cq.pop_front().map(|c| (c.kind, c.status)), Some((CompletionKind::Send, Status::Success)));
}

/// Sends a 3-packet WRITE, loses the middle packet; returns the NAK the responder sent.
fn lose_the_middle(p: &mut Pair) -> PacketId {
    p.write(3000, Verb::Write);
    let ids: Vec<PacketId> = (0..3).map(|_| p.send(0).unwrap()).collect();
    p.out.actions.clear();
    p.deliver(1, ids[0]);
    let ack = p.control()[0];
    p.deliver(0, ack);
    p.pool.free(ids[1]);
    p.out.actions.clear();
    p.deliver(1, ids[2]);
    let nak = p.control();
    assert_eq!(nak.len(), 1);
    let n = *p.pool.get(nak[0]);
    // Selective repeat keeps the WRITE packet that arrived and reports it (a SACK); go-back-N
    // drops it and reports no PSN received.
    let sack = if p.spec.recovery == Recovery::SelectiveRepeat { 2 } else { super::recovery::NO_SACK };
    assert_eq!((n.roce.syndrome, n.seq, n.roce.va), (Syndrome::NakSequence, 1, sack), "NAK names the expected PSN and what arrived");
    nak[0]
}

#[test]
fn go_back_n_rewinds_to_the_naked_psn_and_resends_everything_after_it() {
    let mut p = Pair::new(Recovery::GoBackN);
    let nak = lose_the_middle(&mut p);
    p.deliver(0, nak);
    assert_eq!((p.qps.get(0).snd_una, p.qps.get(0).snd_nxt), (1, 1));
    let again = p.send_all(0);
    assert_eq!(again, vec![1, 2]);
    assert_eq!(p.nics[0].retransmits, 2);
}

#[test]
fn selective_repeat_resends_only_the_hole() {
    let mut p = Pair::new(Recovery::SelectiveRepeat);
    let nak = lose_the_middle(&mut p);
    p.deliver(0, nak);
    assert_eq!(p.qps.get(0).resend.iter().copied().collect::<Vec<_>>(), vec![1]);
    let id = p.send(0).expect("the hole");
    assert_eq!(p.pool.get(id).seq, 1);
    assert!(p.send(0).is_none(), "PSN 2 arrived and is not sent again");
    assert_eq!(p.nics[0].retransmits, 1);
    // The hole filled, the responder's expected PSN jumps over the kept packet and the
    // cumulative ACK covers all three.
    p.out.actions.clear();
    p.deliver(1, id);
    assert_eq!(p.qps.get(1).epsn, 3);
    let ack = p.control()[0];
    assert_eq!((p.pool.get(ack).roce.syndrome, p.pool.get(ack).seq), (Syndrome::Ack, 2));
}

#[test]
fn a_timeout_rewinds_and_the_last_retry_fails_the_queue_pair() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.write(1000, Verb::Write);
    let lost = p.send(0).unwrap();
    p.pool.free(lost);
    let rto_at = p.qps.get(0).rto_at;
    assert_eq!(rto_at, p.now + p.spec.rto, "the timer starts with the first packet");
    for retry in 0..=p.spec.retry_count {
        p.now = p.qps.get(0).rto_at;
        p.out.actions.clear();
        requester::on_timer(&mut p.ctx(), 0);
        if retry < p.spec.retry_count {
            assert_eq!(p.qps.get(0).snd_nxt, 0, "go back to the oldest unacknowledged PSN");
            assert!(p.actions().contains(&Action::Arm { timer: TimerId(0), at: p.now + p.spec.rto }));
            let id = p.send(0).expect("the retransmission");
            p.pool.free(id);
        }
    }
    assert_eq!(p.nics[0].timeouts as u32, p.spec.retry_count);
    let c = p.nics[0].cq.pop_front().expect("an error completion");
    assert_eq!((c.wr_id, c.status), (7, Status::RetryExceeded));
    assert!(p.send(0).is_none(), "a failed queue pair sends nothing");
}

#[test]
fn a_write_outside_the_region_is_naked_and_nothing_is_placed() {
    let mut p = Pair::new(Recovery::GoBackN);
    let (lkey, rkey, _) = p.keys;
    let wr = SendWr { id: 3, verb: Verb::Write, local_addr: 0, len: 100, lkey, remote_addr: (1 << 17) - 50, rkey };
    let now = p.now;
    requester::post_send(&mut p.ctx(), 0, wr, now).unwrap();
    let id = p.send(0).unwrap();
    p.out.actions.clear();
    p.deliver(1, id);
    let nak = p.control()[0];
    assert_eq!(p.pool.get(nak).roce.syndrome, Syndrome::NakRemoteAccess);
    p.deliver(0, nak);
    assert_eq!(p.nics[0].cq.pop_front().map(|c| c.status), Some(Status::RemoteAccess));
    assert!(p.nics[1].memory.slice((1 << 17) - 50, 50).iter().all(|&b| b == 0));
}

fn window(p: &mut Pair) -> Option<u64> {
    let c = p.ctx();
    c.window_packets(c.qps.get(0))
}

#[test]
fn selective_repeat_caps_the_flight_at_one_bdp_of_the_queue_pairs_own_rtt() {
    let mut p = Pair::new(Recovery::SelectiveRepeat);
    // 100 Gbps × 2 µs = 25,000 bytes = 25 packets of 1000 B.
    assert_eq!(window(&mut p), Some(25));
    p.write(50_000, Verb::Write);
    let sent = p.send_all(0);
    assert_eq!(sent.len(), 25, "{sent:?}");
    assert_eq!(p.ctx().eligible_at(0), None, "window full");
    // A longer path gets a bigger window: the RTT is the queue pair's, not a global guess.
    p.qps.get_mut(0).base_rtt = Time::from_us(4);
    assert_eq!(window(&mut p), Some(50));
    let mut g = Pair::new(Recovery::GoBackN);
    assert_eq!(window(&mut g), None, "go-back-N has no cap of its own");
}

#[test]
fn ack_flag_mode_carries_congestion_on_the_ack_instead_of_a_cnp_packet() {
    use crate::nic::CnpMode;
    use crate::wire::packet::ECN_CE;
    for mode in [CnpMode::Packet, CnpMode::AckFlag] {
        let mut p = Pair::new(Recovery::GoBackN);
        p.spec.cc = crate::nic::cc::CcSpec::Dcqcn(Default::default());
        p.spec.cnp = mode;
        p.ctx().connect_to(0, 1, Time::from_us(2));
        p.write(3000, Verb::Write);
        let first = p.send(0).unwrap();
        let (second, third) = (p.send(0).unwrap(), p.send(0).unwrap());
        // A CE-marked packet: a CNP then the ACK (which still echoes the mark, for DCTCP's
        // count), or one ACK carrying the flag.
        p.pool.get_mut(first).ecn = ECN_CE;
        p.out.actions.clear();
        p.deliver(1, first);
        let ctl = p.control();
        let got: Vec<_> = ctl.iter().map(|&id| p.pool.get(id)).map(|c| (c.roce.opcode, c.roce.imm)).collect();
        match mode {
            CnpMode::Packet => assert_eq!(got, [(Opcode::Cnp, 1), (Opcode::Acknowledge, 1)]),
            CnpMode::AckFlag => assert_eq!(got, [(Opcode::Acknowledge, 1)]),
        }
        // Either way the sender's DCQCN cuts its rate in half (α = 1), once.
        for id in ctl {
            p.deliver(0, id);
        }
        assert_eq!(crate::nic::cc::CongestionControl::rate(&p.qps.get(0).cc).0, 50_000_000_000, "{mode:?}");
        // An out-of-order packet is NAKed; with ACK flags the NAK carries one too (ns-3 counts
        // a gap as congestion).
        p.out.actions.clear();
        p.deliver(1, third);
        let nak: Vec<_> = p.control().iter().map(|&id| *p.pool.get(id)).map(|c| (c.roce.syndrome, c.roce.imm)).collect();
        assert_eq!(nak, [(Syndrome::NakSequence, (mode == CnpMode::AckFlag) as u32)]);
        p.pool.free(second);
    }
}

#[test]
fn a_marked_read_request_is_not_echoed_on_a_later_ack() {
    // A READ request draws responses, not an ACK: its CE mark draws a CNP and is not left owed
    // to the ACK of a WRITE that comes later (which DCTCP would count as marked).
    use crate::nic::CnpMode;
    use crate::wire::packet::ECN_CE;
    for mode in [CnpMode::Packet, CnpMode::AckFlag] {
        let mut p = Pair::new(Recovery::GoBackN);
        p.spec.cc = crate::nic::cc::CcSpec::Dctcp(Default::default());
        p.spec.cnp = mode;
        p.ctx().connect_to(0, 1, Time::from_us(2));
        p.write(100, Verb::Read);
        let req = p.send(0).unwrap();
        p.pool.get_mut(req).ecn = ECN_CE;
        p.out.actions.clear();
        p.deliver(1, req);
        let ctl: Vec<_> = p.control().iter().map(|&id| p.pool.get(id).roce.opcode).collect();
        assert!(ctl.contains(&Opcode::Cnp), "{mode:?}: {ctl:?}");
        assert!(!p.qps.get(1).ecn_seen, "{mode:?}: the mark is owed to no ACK");
    }
}

#[test]
fn cc_window_caps_the_flight_and_scales_with_the_rate_when_asked() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.spec.cc = crate::nic::cc::CcSpec::Dcqcn(Default::default());
    p.spec.cc_window = Some(crate::nic::CcWindow { bytes: Some(Bytes(50_000)), with_rate: false, per_pair: false });
    p.ctx().connect_to(0, 1, Time::from_us(2));
    assert_eq!(window(&mut p), Some(50), "50,000 B of 1000 B packets");
    // A CNP halves the rate (α = 1): a fixed window stays, a rate-scaled one halves.
    crate::nic::cc::CongestionControl::on_cnp(&mut p.qps.get_mut(0).cc, Time::from_us(1));
    assert_eq!(window(&mut p), Some(50));
    p.spec.cc_window = Some(crate::nic::CcWindow { bytes: Some(Bytes(50_000)), with_rate: true, per_pair: false });
    assert_eq!(window(&mut p), Some(25));
    // GLOBAL_T 0: the pair's own BDP instead (2 µs at 100 Gbps, 25,000 B), halved with the rate.
    p.spec.cc_window = Some(crate::nic::CcWindow { bytes: Some(Bytes(50_000)), with_rate: true, per_pair: true });
    assert_eq!(window(&mut p), Some(13), "12,500 B");
    // The tighter of the cap and the recovery scheme's own window wins.
    let mut sr = Pair::new(Recovery::SelectiveRepeat);
    sr.spec.cc_window = Some(crate::nic::CcWindow { bytes: Some(Bytes(10_000)), with_rate: false, per_pair: false });
    assert_eq!(window(&mut sr), Some(10));
}

#[test]
fn reads_in_the_send_queue_are_counted_so_acks_skip_the_scan_without_them() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.write(1000, Verb::Write);
    p.write(1000, Verb::Write);
    assert!(!p.qps.get(0).has_read() && p.qps.get(0).pending_read().is_none());
    p.write(2000, Verb::Read);
    let qp = p.qps.get(0);
    assert_eq!((qp.reads_posted, qp.pending_read().map(|e| e.first_psn)), (1, Some(2)));
    // The queue pair fails: every WQE is flushed and the count goes back to zero.
    let now = p.now;
    p.ctx().qp_error(0, None, Status::Flushed, now);
    assert_eq!(p.qps.get(0).reads_posted, 0);
    assert_eq!(p.nics[0].cq.len(), 3);
}

#[test]
fn an_rtt_probe_request_marks_the_next_packet_and_its_ack_is_a_probe_response() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.spec.ack_interval = 8;
    p.write(3000, Verb::Write);
    p.ctx().request_rtt_probe(0);
    let first = p.send(0).unwrap();
    // (The next packets are built later: each waits for the payload read of the one before.)
    let sent_at = p.now;
    let ids: Vec<PacketId> = std::iter::once(first).chain((0..2).map(|_| p.send(0).unwrap())).collect();
    let ack_req: Vec<bool> = ids.iter().map(|&id| p.pool.get(id).roce.ack_req).collect();
    assert_eq!(ack_req, vec![true, false, true], "the probed packet and the message's last ask for an ACK");
    p.now = p.now + Time::from_us(3);
    p.out.actions.clear();
    p.deliver(1, ids[0]);
    let ack = p.control()[0];
    p.deliver(0, ack);
    let probes: Vec<Time> = p.tap.log.as_ref().unwrap().records.iter().filter(|r| r.kind == "rtt_probe").map(|r| r.rtt).collect();
    assert_eq!(probes, vec![p.now - sent_at], "one probe response with the RTT from the packet's timestamp");
    for &id in &ids[1..] {
        p.out.actions.clear();
        p.deliver(1, id);
        for a in p.control() {
            p.deliver(0, a);
        }
    }
    assert_eq!(p.tap.log.as_ref().unwrap().records.iter().filter(|r| r.kind == "rtt_probe").count(), 1);
}

#[test]
fn an_out_of_band_signal_reaches_the_peers_subscribers_outside_the_psn_space() {
    let mut p = Pair::new(Recovery::GoBackN);
    p.ctx().send_signal(0, 0xfeed, 100);
    let ids = p.control();
    assert_eq!(ids.len(), 1, "one control packet, at the head of the port's queue");
    let pkt = *p.pool.get(ids[0]);
    assert_eq!(pkt.roce.opcode, Opcode::OutOfBand);
    assert_eq!(pkt.size, 62 + 4 + 100);
    assert_eq!((pkt.src, pkt.dst, pkt.flow), (0, 1, 1));
    let before = (p.qps.get(0).next_psn, p.qps.get(1).epsn);
    p.deliver(1, ids[0]);
    let log = &p.tap.log.as_ref().unwrap().records;
    let last = log.last().unwrap();
    assert_eq!((last.host, last.qp, last.kind, last.bytes), (1, 1, "signal", 100));
    // Nothing is acknowledged or expected in the PSN space.
    assert_eq!((p.qps.get(0).next_psn, p.qps.get(1).epsn), before);
    assert!(p.control().is_empty(), "a signal is not acknowledged");
}

/// A pair whose NICs have a static 64-bit ordering layer (no hold of the last WRITE packet).
fn ordered_pair() -> Pair {
    let mut p = Pair::new(Recovery::SelectiveRepeat);
    let o = crate::nic::ordering::OrderingSpec { layer: crate::nic::ordering::Layer::Static, bits: 64, hold_last_write: false, ..toml::from_str("").unwrap() };
    p.spec.ordering = Some(o);
    for n in &mut p.nics {
        n.ordering = Some(crate::nic::ordering::NicOrdering::new(&o));
    }
    p
}

#[test]
fn with_an_ordering_layer_sends_arriving_backwards_land_in_their_receive_wqes_and_complete_in_order() {
    let mut p = ordered_pair();
    // Two 2-packet SENDs (PSNs 0-1 and 2-3) into two posted receive WQEs.
    let data: Vec<u8> = (0..4000u32).map(|i| (i * 13 + 5) as u8).collect();
    p.nics[0].memory.write(0, &data);
    let (lkey, _, rlkey) = p.keys;
    for (i, at) in [(0u64, 0u64), (1, 2000)] {
        let wr = SendWr { id: 20 + i, verb: Verb::Send, local_addr: at, len: 2000, lkey, remote_addr: 0, rkey: 0 };
        let now = p.now;
        requester::post_send(&mut p.ctx(), 0, wr, now).unwrap();
        p.qps.get_mut(1).rq.push_back(RecvWr { id: 30 + i, addr: (1 << 16) + i * 8192, len: 4096, lkey: rlkey });
    }
    let mut ids = Vec::new();
    while let Some(id) = p.send(0) {
        ids.push(id);
    }
    assert_eq!(ids.iter().map(|&i| p.pool.get(i).seq).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    // Everything arrives backwards: the second message whole before the first begins.
    p.out.actions.clear();
    for &id in ids.iter().rev() {
        p.deliver(1, id);
        if p.pool.get(id).seq > 0 {
            assert!(p.nics[1].cq.is_empty(), "no completion before the first message is in");
        }
    }
    let naks: Vec<_> = p.control().iter().map(|&c| (p.pool.get(c).roce.syndrome, p.pool.get(c).roce.va)).collect();
    assert_eq!(naks.len(), 4);
    assert!(naks[..3].iter().all(|&(s, va)| s == Syndrome::NakSequence && va != super::recovery::NO_SACK), "SACKs: {naks:?}");
    // Both receive WQEs complete, in order, each holding its own message.
    let c: Vec<_> = p.nics[1].cq.drain(..).map(|c| (c.wr_id, c.kind, c.status, c.bytes)).collect();
    assert_eq!(c, vec![(30, CompletionKind::Recv, Status::Success, 2000), (31, CompletionKind::Recv, Status::Success, 2000)]);
    assert_eq!(p.nics[1].memory.slice(1 << 16, 2000), &data[..2000]);
    assert_eq!(p.nics[1].memory.slice((1 << 16) + 8192, 2000), &data[2000..]);
    assert_eq!(p.qps.get(1).recv_taken, 2);
}

#[test]
fn with_an_ordering_layer_a_send_ahead_of_its_receive_wqe_is_refused_and_resent() {
    let mut p = ordered_pair();
    p.write(100, Verb::Send);
    p.write(100, Verb::Send);
    let (a, b) = (p.send(0).unwrap(), p.send(0).unwrap());
    // Only the first message has a receive WQE; the second arrives first and cannot be placed.
    let lkey = p.keys.2;
    p.qps.get_mut(1).rq.push_back(RecvWr { id: 9, addr: 1 << 16, len: 4096, lkey });
    p.out.actions.clear();
    p.deliver(1, b);
    let nak = p.control()[0];
    assert_eq!((p.pool.get(nak).roce.syndrome, p.pool.get(nak).roce.va), (Syndrome::NakSequence, super::recovery::NO_SACK));
    p.deliver(1, a);
    assert_eq!(p.nics[1].cq.pop_front().map(|c| c.wr_id), Some(9));
    assert!(p.nics[1].cq.is_empty());
}

/// A pair whose NICs have the Eunomia ordering layer (defaults, no hold of the last WRITE
/// packet) and go-back-N.
fn eunomia_pair() -> Pair {
    let mut p = Pair::new(Recovery::GoBackN);
    let o = crate::nic::ordering::OrderingSpec { hold_last_write: false, ..toml::from_str("").unwrap() };
    p.spec.ordering = Some(o);
    for n in &mut p.nics {
        n.ordering = Some(crate::nic::ordering::NicOrdering::new(&o));
    }
    p
}

/// Delivers every packet queue pair 1 (the responder) can send to host 0; returns their PSNs.
fn answer(p: &mut Pair) -> Vec<u64> {
    let mut psns = Vec::new();
    while let Some(id) = p.send(1) {
        psns.push(p.pool.get(id).seq);
        p.deliver(0, id);
    }
    psns
}

/// Delivers the control packets (ACKs) the last calls queued at host 1 to host 0.
fn deliver_acks(p: &mut Pair) {
    for id in p.control() {
        p.deliver(0, id);
    }
}

#[test]
fn with_an_ordering_layer_a_read_answered_before_the_write_ahead_of_it_does_not_acknowledge_the_write() {
    // WRITE (PSN 0) then READ (PSN 1); the READ request overtakes the WRITE and is answered at
    // once. Its response says nothing of the WRITE: the WRITE completes only on its own ACK
    // (before, the response acknowledged PSN 0 and the WRITE completed with its data nowhere).
    let mut p = eunomia_pair();
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 5 + 1) as u8).collect();
    p.nics[1].memory.write(1 << 16, &data);
    p.write(1000, Verb::Write);
    p.write(1000, Verb::Read);
    let (w, r) = (p.send(0).unwrap(), p.send(0).unwrap());
    assert_eq!((p.pool.get(w).seq, p.pool.get(r).seq), (0, 1));
    p.deliver(1, r);
    p.out.actions.clear();
    assert_eq!(answer(&mut p), vec![1], "the READ is answered ahead of the WRITE");
    assert!(p.nics[0].cq.is_empty(), "nothing completes while the WRITE is unacknowledged");
    assert_eq!(p.qps.get(0).snd_una, 0);
    p.deliver(1, w);
    deliver_acks(&mut p);
    let c: Vec<_> = p.nics[0].cq.drain(..).map(|c| (c.kind, c.status)).collect();
    assert_eq!(c, vec![(CompletionKind::Write, Status::Success), (CompletionKind::Read, Status::Success)]);
    assert_eq!(p.nics[0].memory.slice(0, 1000), &data[..]);
    assert_eq!(p.qps.get(1).msn, 2, "the held READ counts once when the WRITE passes it");
}

#[test]
fn with_an_ordering_layer_a_read_response_tracked_beyond_a_write_completes_its_read() {
    // READ A (PSN 0), WRITE W (PSN 1), READ B (PSN 2). B's request and response overtake
    // everything; then A, W and A's response come in order. A's response moves the stream to
    // W's PSN, which has no response: the layer passes it and B's tracked response, and B
    // completes with no timeout (before, B waited for one, and its resent response was taken
    // for a duplicate of itself).
    let mut p = eunomia_pair();
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 9 + 2) as u8).collect();
    p.nics[1].memory.write(1 << 16, &data);
    p.write(1000, Verb::Read);
    p.write(1000, Verb::Write);
    p.write(1000, Verb::Read);
    let ids: Vec<PacketId> = std::iter::from_fn(|| p.send(0)).collect();
    assert_eq!(ids.iter().map(|&i| p.pool.get(i).seq).collect::<Vec<_>>(), vec![0, 1, 2]);
    p.deliver(1, ids[2]);
    p.out.actions.clear();
    assert_eq!(answer(&mut p), vec![2]);
    assert!(p.nics[0].cq.is_empty());
    p.deliver(1, ids[0]);
    p.deliver(1, ids[1]);
    let acks = p.control();
    assert_eq!(answer(&mut p), vec![0]);
    let c: Vec<_> = p.nics[0].cq.drain(..).map(|c| c.kind).collect();
    assert_eq!(c, vec![CompletionKind::Read], "A completes; B waits for the WRITE's ACK, not for a resend");
    for id in acks {
        p.deliver(0, id);
    }
    let c: Vec<_> = p.nics[0].cq.drain(..).map(|c| (c.kind, c.status)).collect();
    assert_eq!(c, vec![(CompletionKind::Write, Status::Success), (CompletionKind::Read, Status::Success)]);
    let qp = p.qps.get(0);
    assert_eq!((qp.snd_una, qp.rto_at, qp.rsp.epsn), (3, Time::MAX, 3));
    assert_eq!(p.nics[0].ordering.as_ref().unwrap().bytes().0, 0, "the last response's bit freed the bitmap");
}

/// The `ns3` profile's IRN timeouts, laid on `p`'s spec (`pfc`: the switches run PFC).
fn ns3_irn_timeouts(p: &mut Pair, pfc: bool) {
    let mut s = NicSpec { profile: crate::nic::NicProfile::Ns3, recovery: Recovery::SelectiveRepeat, ..NicSpec::default() };
    s.apply_profile(None, pfc);
    (p.spec.rto, p.spec.rto_few, p.spec.rto_inert) = (s.rto, s.rto_few, s.rto_inert);
}

#[test]
fn irns_rto_low_covers_four_packets_in_flight_as_ns3s_getrto() {
    // `RdmaQueuePair::GetRto` takes RTO_high once m_max_seq − m_highest_ack > 3 MTU, where
    // m_max_seq is the first byte of the last packet sent and m_highest_ack the cumulative
    // ACK: with 4 packets out that is 3 MTU, still RTO_low (100 µs); the 5th brings RTO_high.
    let mut p = Pair::new(Recovery::SelectiveRepeat);
    ns3_irn_timeouts(&mut p, false);
    p.write(5000, Verb::Write);
    let first = p.send(0).unwrap();
    let armed = p.qps.get(0).rto_at;
    assert_eq!(armed, p.now + Time::from_us(100));
    p.pool.free(first);
    for _ in 0..3 {
        let id = p.send(0).unwrap();
        p.pool.free(id);
    }
    assert_eq!(p.qps.get(0).inflight_packets(), 4);
    assert_eq!(p.qps.get(0).rto_at, armed, "4 packets out: still RTO_low");
    let id = p.send(0).unwrap();
    p.pool.free(id);
    assert_eq!(p.qps.get(0).rto_at, p.now + Time::from_us(320), "the 5th: RTO_high");
}

#[test]
fn irn_under_pfc_lets_a_timeout_pass_as_ns3s_handletimeout() {
    // ConWeave's fork: "IRN: disable timeouts when PFC is enabled" (`RdmaHw::HandleTimeout`
    // returns; the next send or ACK arms the timer again).
    for pfc in [true, false] {
        let mut p = Pair::new(Recovery::SelectiveRepeat);
        ns3_irn_timeouts(&mut p, pfc);
        p.write(1000, Verb::Write);
        let lost = p.send(0).unwrap();
        p.pool.free(lost);
        p.now = p.qps.get(0).rto_at;
        requester::on_timer(&mut p.ctx(), 0);
        let resent = p.send(0).is_some();
        assert_eq!((p.nics[0].timeouts, resent), if pfc { (0, false) } else { (1, true) }, "PFC {pfc}");
    }
}
