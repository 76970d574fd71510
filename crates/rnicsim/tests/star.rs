//! The StaR stack (StaR §III): every verb through a stateless connection, with memory contents
//! checked, with and without loss; the stateless NIC keeps nothing; an analytic completion
//! time; the whitelist stops forged and out-of-range packets; auto-negotiation; the library's
//! retry limit.

use rnicsim::nic::qp::Owner;
use rnicsim::nic::star::StarRole;
use rnicsim::nic::verbs::{Access, Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use rnicsim::scenario::LoadedScenario;
use rnicsim::units::{BitsPerSec, Time};
use rnicsim::wire::star::{StarHeader, StarType, FRAME_OVERHEAD};
use rnicsim::world::World;
use std::path::Path;

fn build(toml: &str) -> World {
    let loaded = LoadedScenario::from_str(toml, "star.toml", Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap_or_else(|e| panic!("{e}"));
    World::build(&loaded).unwrap_or_else(|e| panic!("{e}"))
}

fn world(loss: f64, seed: u64, extra: &str) -> World {
    build(&format!(
        r#"
        duration = "1s"
        seed = {seed}
        [topology.star]
        hosts = 3
        [links]
        rate = "100Gbps"
        delay = "1us"
        loss = {loss}
        [nic]
        memory = "bytes"
        memory_size = "1MiB"
        mtu = 1000
        [nic.star]
        rto = "20us"
        wqep_timeout = "20us"
        retry_count = 40
        wqep_retries = 40
        {extra}
        "#
    ))
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed)).collect()
}

/// Node 0 is stateless, node 1 stateful. Each side has a source region at 0 (readable and
/// writable from afar) and a landing region at 512 KiB.
struct Pair {
    w: World,
    s: u32,
    c: u32,
    s_src: (u32, u32),
    c_src: (u32, u32),
    s_dst: (u32, u32),
    c_dst: (u32, u32),
}

const LAND: u64 = 512 * 1024;

fn pair(loss: f64, seed: u64) -> Pair {
    pair_with(loss, seed, "")
}

/// [`pair`] in a world with `extra` scenario text.
fn pair_with(loss: f64, seed: u64, extra: &str) -> Pair {
    let mut w = world(loss, seed, extra);
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let keys = |mr: rnicsim::nic::verbs::MemoryRegion| (mr.lkey, mr.rkey);
    let s_src = keys(w.register_mr(0, 0, 256 * 1024, all).unwrap());
    let s_dst = keys(w.register_mr(0, LAND, 256 * 1024, all).unwrap());
    let c_src = keys(w.register_mr(1, 0, 256 * 1024, all).unwrap());
    let c_dst = keys(w.register_mr(1, LAND, 256 * 1024, all).unwrap());
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    assert!(w.is_stateless(s) && !w.is_stateless(c));
    Pair { w, s, c, s_src, c_src, s_dst, c_dst }
}

fn wait_for(w: &mut World, node: u32, n: usize) -> Vec<Completion> {
    let mut got = Vec::new();
    for _ in 0..2000 {
        let t = w.now + Time::from_us(50);
        w.run_until(t);
        got.extend(w.poll_cq(node).unwrap());
        if got.len() >= n {
            break;
        }
    }
    got
}

/// Every verb, initiated from each side, moving `len` bytes; checks completions and memory.
fn all_verbs(loss: f64, seed: u64, len: u64) -> World {
    let mut p = pair(loss, seed);
    let w = &mut p.w;
    let (s_data, c_data) = (pattern(len as usize, 1), pattern(len as usize, 2));
    w.fill_memory(0, 0, &s_data).unwrap();
    w.fill_memory(1, 0, &c_data).unwrap();
    let wr = |id, verb, lkey, local_addr, rkey, remote_addr| SendWr { id, verb, local_addr, len, lkey, remote_addr, rkey };
    // The stateless side WRITEs into the stateful side, READs from it, and SENDs to it.
    w.post_send(p.s, wr(1, Verb::Write, p.s_src.0, 0, p.c_dst.1, LAND)).unwrap();
    w.post_send(p.s, wr(2, Verb::Read, p.s_dst.0, LAND, p.c_src.1, 0)).unwrap();
    w.post_recv(p.c, RecvWr { id: 30, addr: LAND + 64 * 1024, len, lkey: p.c_dst.0 }).unwrap();
    w.post_send(p.s, wr(3, Verb::SendImm(77), p.s_src.0, 0, 0, 0)).unwrap();
    let cs = wait_for(w, 0, 3);
    let cc = wait_for(w, 1, 1);
    let ids: Vec<_> = cs.iter().map(|c| (c.wr_id, c.kind, c.status, c.bytes)).collect();
    assert_eq!(ids, vec![(1, CompletionKind::Write, Status::Success, len), (2, CompletionKind::Read, Status::Success, len), (3, CompletionKind::Send, Status::Success, len)], "loss {loss} seed {seed}");
    assert_eq!(cc.iter().map(|c| (c.wr_id, c.kind, c.bytes, c.imm)).collect::<Vec<_>>(), vec![(30, CompletionKind::Recv, len, Some(77))]);
    assert!(w.memory(1, LAND, len).unwrap() == &s_data[..], "stateless WRITE, loss {loss} seed {seed}");
    assert!(w.memory(0, LAND, len).unwrap() == &c_data[..], "stateless READ, loss {loss} seed {seed}");
    assert!(w.memory(1, LAND + 64 * 1024, len).unwrap() == &s_data[..], "stateless SEND, loss {loss} seed {seed}");
    // The stateful side WRITEs into the stateless side, READs from it, and SENDs to it.
    let c2 = pattern(len as usize, 9);
    w.fill_memory(1, 0, &c2).unwrap();
    w.post_recv(p.s, RecvWr { id: 40, addr: LAND + 128 * 1024, len, lkey: p.s_dst.0 }).unwrap();
    w.post_send(p.c, wr(4, Verb::Write, p.c_src.0, 0, p.s_dst.1, LAND + 32 * 1024)).unwrap();
    w.post_send(p.c, wr(5, Verb::Read, p.c_dst.0, LAND + 192 * 1024, p.s_src.1, 0)).unwrap();
    w.post_send(p.c, wr(6, Verb::Send, p.c_src.0, 0, 0, 0)).unwrap();
    let cc = wait_for(w, 1, 3);
    let cs = wait_for(w, 0, 1);
    assert_eq!(cc.iter().map(|c| (c.wr_id, c.kind, c.status)).collect::<Vec<_>>(), vec![(4, CompletionKind::Write, Status::Success), (5, CompletionKind::Read, Status::Success), (6, CompletionKind::Send, Status::Success)]);
    assert_eq!(cs.iter().map(|c| (c.wr_id, c.kind, c.bytes)).collect::<Vec<_>>(), vec![(40, CompletionKind::Recv, len)]);
    assert!(w.memory(0, LAND + 32 * 1024, len).unwrap() == &c2[..], "stateful WRITE, loss {loss} seed {seed}");
    assert!(w.memory(1, LAND + 192 * 1024, len).unwrap() == &s_data[..], "stateful READ, loss {loss} seed {seed}");
    assert!(w.memory(0, LAND + 128 * 1024, len).unwrap() == &c2[..], "stateful SEND, loss {loss} seed {seed}");
    p.w
}

#[test]
fn every_verb_completes_through_star_and_the_stateless_nic_holds_nothing() {
    for len in [32u64, 4500] {
        let w = all_verbs(0.0, 1, len);
        let s = &w.nics[0];
        assert_eq!((s.active_qps, s.peak_qps, s.star.stateful, s.star.peak_stateful), (0, 0, 0, 0), "no connection state on the stateless NIC");
        assert_eq!(s.star.stateless, 1);
        assert_eq!(w.nics[1].star.stateful, 1);
        assert_eq!(s.star.counters.stateful_rx, 0);
        assert_eq!(w.nics[1].star.counters.resent, 0);
        assert!(w.nics[1].star.counters.checked > 0 && w.nics[1].star.counters.refused == 0);
    }
}

#[test]
fn every_verb_completes_through_star_under_random_loss() {
    for seed in 1..=12 {
        let w = all_verbs(0.03, seed, 3000);
        let resent = w.nics[1].star.counters.resent + w.nics[0].star.counters.wqep_reposts;
        assert!(resent > 0, "seed {seed}: 3% loss and nothing sent again?");
        assert_eq!(w.nics[0].active_qps + w.nics[0].star.stateful, 0);
    }
}

#[test]
fn large_transfers_flow_through_the_send_window_under_loss() {
    // 200 KB each way, three times the 64 KiB window of unacknowledged chunks, 2% loss.
    let len = 200_000u64;
    for seed in 1..=3 {
        let mut p = pair(0.02, seed);
        let w = &mut p.w;
        let (a, b) = (pattern(len as usize, 11), pattern(len as usize, 12));
        w.fill_memory(0, 0, &a).unwrap();
        w.fill_memory(1, 0, &b).unwrap();
        w.post_send(p.s, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len, lkey: p.s_src.0, remote_addr: LAND, rkey: p.c_dst.1 }).unwrap();
        w.post_send(p.c, SendWr { id: 2, verb: Verb::Write, local_addr: 0, len, lkey: p.c_src.0, remote_addr: LAND, rkey: p.s_dst.1 }).unwrap();
        let cs = wait_for(w, 0, 1);
        let cc = wait_for(w, 1, 1);
        assert_eq!((cs[0].status, cc[0].status), (Status::Success, Status::Success), "seed {seed}");
        assert!(w.memory(1, LAND, len).unwrap() == &a[..], "stateless WRITE, seed {seed}");
        assert!(w.memory(0, LAND, len).unwrap() == &b[..], "stateful WRITE, seed {seed}");
    }
}

#[test]
fn a_failed_wqep_puts_the_stateless_queue_pair_in_error() {
    // The stateful side goes away after the state migration: the next WQEP runs out of
    // retries, it fails, the one behind it too, and new posts are refused.
    let mut w = world(0.0, 1, "");
    w.register_mr(0, 0, 4096, Access::LOCAL_WRITE).unwrap();
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.run_until(Time::from_us(20));
    w.destroy_qp(c);
    let send = SendWr { id: 5, verb: Verb::Send, local_addr: 0, len: 8, lkey: 0, remote_addr: 0, rkey: 0 };
    w.post_send(s, send).unwrap();
    w.post_send(s, SendWr { id: 6, ..send }).unwrap();
    let c = wait_for(&mut w, 0, 2);
    assert_eq!(c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(5, Status::RetryExceeded), (6, Status::RetryExceeded)]);
    assert_eq!(w.post_send(s, SendWr { id: 7, ..send }), Err(rnicsim::nic::verbs::PostError::BadState));
    // A buffer outside the library's regions fails at once, on a fresh connection.
    let (s2, _) = w.connect_star(0, 2, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.post_send(s2, SendWr { id: 8, local_addr: 8192, ..send }).unwrap();
    let c = wait_for(&mut w, 0, 1);
    assert_eq!((c[0].wr_id, c[0].status), (8, Status::LocalProtection));
}

#[test]
fn a_stateless_wqe_fails_when_its_peer_is_cut_off_after_confirming_it() {
    // The stateless host's link goes down for good at 30 µs, after the stateful side confirmed
    // the WRITE's WQEP (EA at about 25 µs) and while it fetches the data. The stateful side
    // resends each GD 40 times, fails the WRITE, then resends its CQEP 40 times and gives up:
    // the connection enters the error state, its own receive is flushed and new posts are
    // refused. The library, hearing nothing, probes at EA + rto × 41 = EA + 820 µs and fails
    // the WRITE after 40 unanswered probes 20 µs apart: at about EA + 1640 µs. (The WRITE
    // never completed before: the library waited for a CQEP that could not come.)
    let mut w = world(0.0, 1, "[[link_events]]\nat = \"30us\"\nbetween = [0, 3]\nstate = \"down\"");
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let s_mr = w.register_mr(0, 0, 256 * 1024, all).unwrap();
    let c_mr = w.register_mr(1, 0, 512 * 1024, all).unwrap();
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.post_recv(c, RecvWr { id: 30, addr: 0, len: 64, lkey: c_mr.lkey }).unwrap();
    w.run_until(Time::from_us(20));
    w.post_send(s, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len: 200 * 1024, lkey: s_mr.lkey, remote_addr: 0, rkey: c_mr.rkey }).unwrap();
    w.run_until(Time::from_us(30));
    let cs = wait_for(&mut w, 0, 1);
    assert_eq!(cs.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::RetryExceeded)]);
    let at = cs[0].at;
    assert!(at > Time::from_us(22 + 1640) && at < Time::from_us(27 + 1640), "failed at {at:?}");
    let cc = wait_for(&mut w, 1, 1);
    assert_eq!(cc.iter().map(|c| (c.wr_id, c.kind, c.status)).collect::<Vec<_>>(), vec![(30, CompletionKind::Recv, Status::Flushed)]);
    let send = SendWr { id: 2, verb: Verb::Send, local_addr: 0, len: 8, lkey: c_mr.lkey, remote_addr: 0, rkey: 0 };
    assert_eq!(w.post_send(c, send), Err(rnicsim::nic::verbs::PostError::BadState), "the stateful end is in the error state");
    assert_eq!(w.post_send(s, send), Err(rnicsim::nic::verbs::PostError::BadState), "so is the stateless one");
}

#[test]
fn a_send_out_of_resends_fails_the_connection_on_both_sides() {
    // rto 50 µs, 2 resends: the stateful side's two SENDs leave at about 22 µs into an outage
    // of the stateless host's link (20–140 µs), are resent at about 73 and 124 µs (lost too)
    // and run out at about 175 µs, the link back. As an RC queue pair, the connection fails:
    // the first SEND ends RetryExceeded, the second Flushed, later posts are refused; the
    // stateless side's two receives those SENDs took complete Flushed (by CQEP), and its queue
    // pair is in the error state too. (Before, the connection ran on: a later SEND could
    // succeed while the receives of the failed ones never completed.)
    let mut w = build(
        "duration = \"1s\"\n[topology.star]\nhosts = 3\n[links]\nrate = \"100Gbps\"\ndelay = \"1us\"\n[nic]\nmemory = \"bytes\"\nmemory_size = \"1MiB\"\nmtu = 1000\n[nic.star]\nrto = \"50us\"\nretry_count = 2\n[routing]\nrecompute_delay = \"1us\"\n[[link_events]]\nat = \"20us\"\nbetween = [0, 3]\nstate = \"down\"\n[[link_events]]\nat = \"140us\"\nbetween = [0, 3]\nstate = \"up\"\n",
    );
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let s_mr = w.register_mr(0, 0, 4096, all).unwrap();
    let c_mr = w.register_mr(1, 0, 4096, all).unwrap();
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    for id in [40, 41] {
        w.post_recv(s, RecvWr { id, addr: 0, len: 1000, lkey: s_mr.lkey }).unwrap();
    }
    w.run_until(Time::from_us(20));
    let send = SendWr { id: 1, verb: Verb::Send, local_addr: 0, len: 1000, lkey: c_mr.lkey, remote_addr: 0, rkey: 0 };
    w.post_send(c, send).unwrap();
    w.post_send(c, SendWr { id: 2, ..send }).unwrap();
    let cc = wait_for(&mut w, 1, 2);
    assert_eq!(cc.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::RetryExceeded), (2, Status::Flushed)]);
    assert!(cc[0].at > Time::from_us(170) && cc[0].at < Time::from_us(185), "{:?}", cc[0].at);
    let cs = wait_for(&mut w, 0, 2);
    assert_eq!(cs.iter().map(|c| (c.wr_id, c.kind, c.status)).collect::<Vec<_>>(), vec![(40, CompletionKind::Recv, Status::Flushed), (41, CompletionKind::Recv, Status::Flushed)]);
    assert_eq!(w.post_send(c, SendWr { id: 3, ..send }), Err(rnicsim::nic::verbs::PostError::BadState));
    assert_eq!(w.post_recv(s, RecvWr { id: 42, addr: 0, len: 8, lkey: s_mr.lkey }), Err(rnicsim::nic::verbs::PostError::BadState));
}

#[test]
fn a_confirmed_wqe_waiting_on_a_live_peer_is_probed_and_still_completes() {
    // The library probes a confirmed, uncompleted WQE every rto × (retry_count + 1) = 820 µs.
    // A SEND waits 2 ms for the stateful side's receive: probed at about 845 and 1665 µs, each
    // probe confirmed; the SEND completes, once, when the receive is posted.
    let mut w = world(0.0, 1, "");
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let s_mr = w.register_mr(0, 0, 4096, all).unwrap();
    let c_mr = w.register_mr(1, 0, 4096, all).unwrap();
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.run_until(Time::from_us(20));
    w.post_send(s, SendWr { id: 1, verb: Verb::Send, local_addr: 0, len: 64, lkey: s_mr.lkey, remote_addr: 0, rkey: 0 }).unwrap();
    w.run_until(Time::from_us(2020));
    assert!(w.poll_cq(0).unwrap().is_empty());
    let probes = w.nics[0].star.counters.wqep_reposts;
    assert_eq!(probes, 2);
    w.post_recv(c, RecvWr { id: 30, addr: 0, len: 64, lkey: c_mr.lkey }).unwrap();
    let cs = wait_for(&mut w, 0, 1);
    assert_eq!(cs.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::Success)]);
    w.run_until(w.now + Time::from_us(500));
    assert!(w.poll_cq(0).unwrap().is_empty(), "completed once");
    assert_eq!(w.nics[0].star.counters.wqep_reposts, probes, "no probe once completed");
}

#[test]
fn a_stateful_send_waiting_for_a_receive_probes_its_peer_and_fails_only_if_it_is_silent() {
    // A SEND of the stateful side waits for a receive WQE of the stateless side. After the
    // connection's whole resend budget, rto × (retry_count + 1) = 820 us, it probes the peer
    // with an empty GD. A live peer answers and the SEND waits on, completing once the receive
    // comes; a silent one (its link down since 30 us) leaves the probe unanswered through its
    // 40 resends 20 us apart, and the SEND fails RetryExceeded at about 40 + 820 + 820 us, as
    // an RC SEND whose responder is gone. (It waited for ever: found by exploring.)
    for cut in [false, true] {
        let extra = if cut { "[[link_events]]\nat = \"30us\"\nbetween = [0, 3]\nstate = \"down\"" } else { "" };
        let mut w = world(0.0, 1, extra);
        let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
        let s_mr = w.register_mr(0, 0, 4096, all).unwrap();
        let c_mr = w.register_mr(1, 0, 4096, all).unwrap();
        let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
        w.run_until(Time::from_us(40));
        w.post_send(c, SendWr { id: 1, verb: Verb::Send, local_addr: 0, len: 64, lkey: c_mr.lkey, remote_addr: 0, rkey: 0 }).unwrap();
        w.run_until(Time::from_us(1600));
        assert!(w.poll_cq(1).unwrap().is_empty(), "cut {cut}: still waiting at 1.6 ms");
        if cut {
            let cc = wait_for(&mut w, 1, 1);
            assert_eq!(cc.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::RetryExceeded)]);
            assert!(cc[0].at > Time::from_us(1660) && cc[0].at < Time::from_us(1720), "failed at {:?}", cc[0].at);
        } else {
            w.run_until(Time::from_us(2500));
            assert!(w.poll_cq(1).unwrap().is_empty(), "a live peer keeps the SEND waiting");
            w.post_recv(s, RecvWr { id: 30, addr: 0, len: 64, lkey: s_mr.lkey }).unwrap();
            let cc = wait_for(&mut w, 1, 1);
            assert_eq!(cc.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::Success)]);
        }
    }
}

#[test]
fn a_probe_the_whitelist_refuses_fails_the_waiting_send() {
    // The stateless end is destroyed (its rule leaves the stateful NIC's whitelist) while a
    // SEND of the stateful side waits for its receive: the probe due at 40 + 820 us is refused
    // before it leaves, and the SEND fails RemoteAccess then, as a refused chunk's operation
    // does. (Refused, the probe left no trace and its deadline, already past, was armed again
    // at the same instant for ever.)
    let mut w = world(0.0, 1, "");
    let c_mr = w.register_mr(1, 0, 4096, Access::LOCAL_WRITE).unwrap();
    let (s, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.run_until(Time::from_us(40));
    w.post_send(c, SendWr { id: 1, verb: Verb::Send, local_addr: 0, len: 64, lkey: c_mr.lkey, remote_addr: 0, rkey: 0 }).unwrap();
    w.run_until(Time::from_us(100));
    w.destroy_qp(s);
    let cc = wait_for(&mut w, 1, 1);
    assert_eq!(cc.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(1, Status::RemoteAccess)]);
    assert!(cc[0].at > Time::from_us(860) && cc[0].at < Time::from_us(880), "failed at {:?}", cc[0].at);
    assert_eq!(w.nics[1].star.counters.refused, 1);
}

#[test]
fn a_stateful_write_completes_in_the_analytic_time() {
    // No loss: the WRITE's RD leaves after the doorbell, the WQE fetch and the payload read;
    // it crosses two 1 µs links, the stateless side DMA-writes it and answers with an RDA
    // that crosses back; then the stateful side writes the CQE.
    let mut p = pair(0.0, 1);
    p.w.run_until(Time::from_us(20)); // the state migration is done
    let t0 = p.w.now;
    p.w.post_send(p.c, SendWr { id: 9, verb: Verb::Write, local_addr: 0, len: 32, lkey: p.c_src.0, remote_addr: LAND, rkey: p.s_dst.1 }).unwrap();
    let c = wait_for(&mut p.w, 1, 1)[0];
    let l = Time::from_ns(500);
    let pcie = BitsPerSec::gbps(200);
    let line = BitsPerSec::gbps(100);
    // The 8-byte doorbell crosses, the WQE is read (a round trip and its 64 bytes).
    let fetch = pcie.tx_time(8) + l + l + l + pcie.tx_time(64);
    let read = pcie.tx_time(32) + l + l;
    let rd = line.tx_time(32 + FRAME_OVERHEAD as u64);
    let rda = line.tx_time(FRAME_OVERHEAD as u64);
    let place = pcie.tx_time(32) + l;
    let cqe = pcie.tx_time(64) + l;
    let hop = Time::from_us(1);
    let want = t0 + fetch + read + rd + hop + rd + hop + place + rda + hop + rda + hop + cqe;
    assert_eq!(c.at, want, "{:?} vs {:?}", c.at, want);
}

#[test]
fn a_receive_a_stateless_send_consumed_completes_after_the_ea_of_its_cqep() {
    // §III-B: the stateful side tells the stateless side in a CQEP that its SEND landed, and
    // generates its own CQE only once the EA for that CQEP is back. The stateless side's
    // completion comes with the CQEP; the EA then crosses two 1 µs hops to the stateful side.
    let mut p = pair(0.0, 1);
    send_into_receive(&mut p);
    let sent = wait_for(&mut p.w, 0, 1)[0];
    let landed = wait_for(&mut p.w, 1, 1)[0];
    assert_eq!((sent.wr_id, sent.kind, landed.wr_id, landed.kind, landed.bytes), (8, CompletionKind::Send, 7, CompletionKind::Recv, 2000));
    // (It came when the data landed, before the CQEP even left: 2.5 µs before the other.)
    assert!(landed.at > sent.at + Time::from_us(2), "stateful receive at {:?}, stateless send at {:?}", landed.at, sent.at);
    assert!(landed.at < sent.at + Time::from_us(3), "stateful receive at {:?}, stateless send at {:?}", landed.at, sent.at);
}

/// Once the connection's state has migrated (20 µs), the stateful side posts receive 7 and the
/// stateless side SENDs 2,000 bytes (work request 8) into it.
fn send_into_receive(p: &mut Pair) {
    p.w.run_until(Time::from_us(20));
    p.w.post_recv(p.c, RecvWr { id: 7, addr: LAND, len: 4096, lkey: p.c_dst.0 }).unwrap();
    p.w.post_send(p.s, SendWr { id: 8, verb: Verb::Send, local_addr: 0, len: 2000, lkey: p.s_src.0, remote_addr: 0, rkey: 0 }).unwrap();
}

/// Runs until `node`'s completion queue yields something, in steps of 100 ns.
fn first_completion(w: &mut World, node: u32) -> Completion {
    loop {
        let t = w.now + Time::from_ns(100);
        w.run_until(t);
        if let Some(c) = w.poll_cq(node).unwrap().first() {
            return *c;
        }
    }
}

#[test]
fn a_receive_held_for_its_ea_completes_once_when_the_connection_ends_first() {
    // The stateless side's SEND has completed (its CQEP arrived) and the EA is on its way
    // when both ends are destroyed: the held receive is flushed, once (it was never delivered).
    let mut p = pair(0.0, 1);
    send_into_receive(&mut p);
    assert_eq!(first_completion(&mut p.w, 0).status, Status::Success);
    assert!(p.w.poll_cq(1).unwrap().is_empty(), "the EA is still in flight");
    p.w.destroy_qp(p.c);
    p.w.destroy_qp(p.s);
    let got = wait_for(&mut p.w, 1, 2);
    assert_eq!(got.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(7, Status::Flushed)]);

    // The same SEND, and the stateful host's link cut once the stateless side has its Success,
    // so that the EA is lost and the connection fails: the receive completes as the data
    // landed (Success, 2000 bytes), not Flushed against a SEND that succeeded.
    let run = |cut: Option<Time>| {
        // (Node 3 is the switch.)
        let ev = cut.map(|c| format!("[[link_events]]\nat = \"{}ns\"\nbetween = [1, 3]\nstate = \"down\"", c.0 / 1000)).unwrap_or_default();
        let mut p = pair_with(0.0, 1, &ev);
        send_into_receive(&mut p);
        let sent = first_completion(&mut p.w, 0);
        (sent, wait_for(&mut p.w, 1, 1))
    };
    let (sent, _) = run(None);
    let (sent_cut, landed) = run(Some(sent.at + Time::from_ns(100)));
    assert_eq!((sent_cut.wr_id, sent_cut.status), (8, Status::Success));
    assert_eq!(landed.iter().map(|c| (c.wr_id, c.status, c.bytes)).collect::<Vec<_>>(), vec![(7, Status::Success, 2000)]);
}

#[test]
fn the_whitelist_keeps_forged_and_out_of_range_packets_from_the_stateless_memory() {
    let mut p = pair(0.0, 1);
    let w = &mut p.w;
    w.run_until(Time::from_us(20));
    let before = w.memory(0, 0, 1024 * 1024).unwrap().to_vec();
    w.fill_memory(1, 0, &pattern(4096, 5)).unwrap();
    // A WRITE with a forged rkey, one past its region, and a READ the region allows but the
    // write right does not cover.
    let ro = w.register_mr(0, 300 * 1024, 4096, Access::REMOTE_READ).unwrap();
    let bad = [
        SendWr { id: 1, verb: Verb::Write, local_addr: 0, len: 64, lkey: p.c_src.0, remote_addr: LAND, rkey: p.s_dst.1 ^ 1 },
        SendWr { id: 2, verb: Verb::Write, local_addr: 0, len: 64, lkey: p.c_src.0, remote_addr: LAND + 256 * 1024 - 32, rkey: p.s_dst.1 },
        SendWr { id: 3, verb: Verb::Write, local_addr: 0, len: 64, lkey: p.c_src.0, remote_addr: 300 * 1024, rkey: ro.rkey },
        // Three packets' worth that runs 1500 bytes past the region's end: its first 1000
        // bytes were in range and reached the stateless memory before the second was refused.
        SendWr { id: 4, verb: Verb::Write, local_addr: 0, len: 3000, lkey: p.c_src.0, remote_addr: LAND + 256 * 1024 - 1500, rkey: p.s_dst.1 },
        // The same as a READ: its first GD reached the stateless host and was answered.
        SendWr { id: 5, verb: Verb::Read, local_addr: LAND, len: 3000, lkey: p.c_dst.0, remote_addr: 256 * 1024 - 1500, rkey: p.s_src.1 },
    ];
    for wr in bad {
        w.post_send(p.c, wr).unwrap();
    }
    let got = wait_for(w, 1, 5);
    assert!(got.iter().all(|c| c.status == Status::RemoteAccess), "{got:?}");
    // Forged packets built straight at the NIC: from the stateful host outside the region,
    // and from a host with no rule for this server at all.
    // (The check reads the range the header carries: what it checks is what would land.)
    let rd = StarHeader { ptype: StarType::Rd, addr: 1024 * 1024 - 8, len: 16, ack: true, ..Default::default() };
    assert!(!w.star_forge(1, 0, p.c, rd, (p.s_src.1, true), Some(0)).unwrap());
    let inside = StarHeader { addr: 8, ..rd };
    assert!(!w.star_forge(2, 0, p.c, inside, (p.s_src.1, true), Some(0)).unwrap(), "host 2 has no rule for host 0");
    let gd = StarHeader { ptype: StarType::Gd, addr: LAND, len: 64, ..Default::default() };
    assert!(!w.star_forge(1, 0, p.c, gd, (p.s_dst.1 ^ 4, true), None).unwrap());
    let t = w.now + Time::from_us(100);
    w.run_until(t);
    assert!(w.memory(0, 0, 1024 * 1024).unwrap() == &before[..], "something reached the stateless host's memory");
    assert_eq!(w.nics[1].star.counters.refused, 7);
    assert_eq!(w.nics[2].star.counters.refused, 1);
    assert_eq!(w.nics[0].star.counters.stateless_rx, 1, "only the migration's EA reached host 0");
    let s = rnicsim::nic::star::StarSummary::of(&w.nics, w.nic_spec.star.unwrap_or_default().security).expect("a StaR connection");
    let ful = s.per_nic.iter().find(|n| n.name == "host 1").expect("the stateful NIC");
    assert_eq!(ful.whitelist_rules, Some(w.nics[1].star.whitelist.rules()), "{ful:?}");
    assert!(ful.whitelist_rules > Some(0), "{ful:?}");
}

#[test]
fn a_stateless_hosts_memory_windows_are_whitelisted_while_bound() {
    // Host 0 (stateless) binds one window before the connection exists and one after; both
    // reach the stateful NIC's whitelist, grant only their range and right, and stop when
    // invalidated.
    let mut w = world(0.0, 1, "");
    let mr = w.register_mr(0, 256 * 1024, 64 * 1024, Access::ALL).unwrap();
    let src = w.register_mr(1, 0, 4096, Access::ALL).unwrap();
    let early = w.bind_mw(0, mr.lkey, 256 * 1024, 128, Access::REMOTE_WRITE).unwrap();
    let (_, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    let rules = w.nics[1].star.whitelist.rules();
    let late = w.bind_mw(0, mr.lkey, 300 * 1024, 128, Access::REMOTE_WRITE | Access::REMOTE_READ).unwrap();
    assert_eq!(w.nics[1].star.whitelist.rules(), rules + 1, "a window bound later is pushed to the stateful side");
    w.fill_memory(1, 0, &pattern(4096, 8)).unwrap();
    let mut id = 0;
    let mut op = |w: &mut World, verb: Verb, remote_addr: u64, rkey: u32| {
        id += 1;
        w.post_send(c, SendWr { id, verb, local_addr: if verb == Verb::Read { 2048 } else { 0 }, len: 64, lkey: src.lkey, remote_addr, rkey }).unwrap();
        wait_for(w, 1, 1)[0].status
    };
    assert_eq!(op(&mut w, Verb::Write, 256 * 1024 + 64, early.rkey), Status::Success);
    assert_eq!(op(&mut w, Verb::Write, 300 * 1024, late.rkey), Status::Success);
    assert_eq!(op(&mut w, Verb::Read, 300 * 1024, late.rkey), Status::Success);
    assert!(w.memory(1, 2048, 64).unwrap() == &pattern(4096, 8)[..64], "the READ through the window brought the WRITE's bytes back");
    let refused = w.nics[1].star.counters.refused;
    assert_eq!(op(&mut w, Verb::Write, 256 * 1024 + 65, early.rkey), Status::RemoteAccess, "one byte past the window");
    assert_eq!(op(&mut w, Verb::Read, 256 * 1024, early.rkey), Status::RemoteAccess, "the early window grants no read");
    w.invalidate_mw(0, early.rkey).unwrap();
    assert_eq!(w.nics[1].star.whitelist.rules(), rules, "the invalidated window's rule is gone");
    assert_eq!(op(&mut w, Verb::Write, 256 * 1024, early.rkey), Status::RemoteAccess, "invalidated");
    assert_eq!(w.nics[1].star.counters.refused, refused + 3, "each refusal was the whitelist's");
    assert!(w.memory(0, 256 * 1024, 64).unwrap().iter().all(|&b| b == 0), "nothing refused reached the stateless memory");
    assert!(w.memory(0, 256 * 1024 + 64, 64).unwrap() == &pattern(4096, 8)[..64]);
}

#[test]
fn without_the_security_check_a_forged_packet_lands() {
    let mut w = world(0.0, 1, "security = false");
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    w.register_mr(0, 0, 4096, all).unwrap();
    w.register_mr(1, 0, 4096, all).unwrap();
    let (_, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.fill_memory(1, 0, &pattern(16, 3)).unwrap();
    let rd = StarHeader { ptype: StarType::Rd, addr: 512 * 1024, len: 16, ..Default::default() };
    assert!(w.star_forge(1, 0, c, rd, (0, true), Some(0)).unwrap());
    w.run_until(Time::from_us(50));
    assert!(w.memory(0, 512 * 1024, 16).unwrap() == &pattern(16, 3)[..], "the stateless NIC checks nothing itself");
    // Without the module there is no table: the summary reports no rules for it.
    let s = rnicsim::nic::star::StarSummary::of(&w.nics, w.nic_spec.star.unwrap_or_default().security).expect("a StaR connection");
    let ful = s.per_nic.iter().find(|n| n.name == "host 1").expect("the stateful NIC");
    assert_eq!(ful.whitelist_rules, None, "{ful:?}");
}

#[test]
fn auto_negotiation_makes_the_busier_side_stateless() {
    let mut w = world(0.0, 1, "negotiate_threshold = 4");
    let h = Owner::HOST;
    // Below the threshold: normal RDMA connections.
    let mut handles = Vec::new();
    for _ in 0..4 {
        handles.push(w.connect_star(0, 1 + handles.len() as u32 % 2, h, h, StarRole::Auto).unwrap());
    }
    assert!(handles.iter().all(|&(a, b)| !w.is_star(a) && !w.is_star(b)));
    assert_eq!(w.nics[0].active_qps, 4);
    // Host 0 now holds 4 connections, hosts 1 and 2 two each: host 0 becomes stateless,
    // whichever side it is named on.
    let (a, b) = w.connect_star(0, 2, h, h, StarRole::Auto).unwrap();
    assert!(w.is_stateless(a) && w.is_star(b) && !w.is_stateless(b));
    let (a, b) = w.connect_star(1, 0, h, h, StarRole::Auto).unwrap();
    assert!(!w.is_stateless(a) && w.is_stateless(b));
    assert_eq!((w.nics[0].active_qps, w.nics[0].star.stateful, w.nics[0].star.stateless), (4, 0, 2));
    // The stateless side's initial state reaches the other side in a WQEP with the M bit.
    w.run_until(Time::from_us(20));
    assert_eq!(w.nics[1].star.counters.stateful_rx, 1);
    assert_eq!(w.nics[0].star.counters.stateless_rx, 2, "two EAs with the M bit");
}

#[test]
fn the_library_gives_up_after_its_retries() {
    // Every packet lost: the state migration is never acknowledged; after the last retry the
    // WQEs posted meanwhile complete with an error.
    let mut w = world(0.999_999, 1, "");
    w.register_mr(0, 0, 4096, Access::LOCAL_WRITE).unwrap();
    let (s, _) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.post_send(s, SendWr { id: 5, verb: Verb::Send, local_addr: 0, len: 8, lkey: 0, remote_addr: 0, rkey: 0 }).unwrap();
    let c = wait_for(&mut w, 0, 1);
    assert_eq!((c[0].wr_id, c[0].status), (5, Status::RetryExceeded));
    // 40 retries 20 µs apart after the first try.
    assert!(c[0].at >= Time::from_us(41 * 20) && c[0].at < Time::from_us(41 * 20 + 5), "{:?}", c[0].at);
    assert_eq!(w.nics[0].star.counters.wqep_reposts, 40);
}

// ---------------------------------------------------------------------- the [[rpc]] workloads

mod common;

#[test]
fn a_state_cache_that_never_waits_leaves_star_as_it_is_without_one() {
    // One client's 128 StaR connections to a server at 100 Gbps. A cache whose fetches take no
    // time holds nothing up, whatever its size: the calls are those of a NIC without one. The
    // transmit pipeline looked a packet up when its payload had been read, so a hit held every
    // later packet behind that time, and a later lookup found the fetch slot taken until then:
    // 4.48 M calls/s against 5.39, and 66 stalls with no fetch to wait for (found by a helper).
    let run = |cache: &str| {
        let toml = format!("duration = \"4ms\"\n[topology.star]\nhosts = 5\n[links]\nrate = \"100Gbps\"\n{cache}[[rpc]]\nname = \"one\"\nserver = 0\nclients = [1]\nconnections = 128\nstack = \"star\"\nwarmup = \"2ms\"\n");
        let loaded = LoadedScenario::from_str(&toml, "c.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let s = common::run_summary(&loaded, "star-cache");
        let stalls = s.state_cache.as_ref().map(|c| (c.total.stalls, c.total.misses));
        (s.rpc[0].calls, s.rpc[0].latency_mean_us, stalls)
    };
    let (calls, latency, _) = run("");
    assert!(calls > 10_000, "{calls}");
    for cache in ["capacity = \"1MB\"", "capacity = \"16KiB\""] {
        let (c, l, stalls) = run(&format!("[nic.state_cache]\n{cache}\nmiss_latency = \"0ns\"\nfetch_slots = 1\n"));
        assert_eq!((c, l), (calls, latency), "{cache}");
        // Every connection misses once into the large cache; the 64 entries of the small one
        // keep missing, and still nothing waits.
        let (stalls, misses) = stalls.expect("a cache");
        assert_eq!(stalls, 0, "{cache}");
        assert!(if cache.contains("1MB") { misses == 128 } else { misses > 10 * 128 }, "{cache}: {misses}");
    }
}

fn rpc_run(stack: &str, workload: &str, connections: u32, cache: u32, extra: &str) -> rnicsim::output::Summary {
    rpc_run_with(stack, workload, connections, cache, extra, &[])
}

/// [`rpc_run`] with keys overridden (`(key, TOML value)`, as `--set` takes them).
fn rpc_run_with(stack: &str, workload: &str, connections: u32, cache: u32, extra: &str, sets: &[(&str, &str)]) -> rnicsim::output::Summary {
    let toml = format!(
        r#"
        duration = "4ms"
        [topology.star]
        hosts = 5
        [links]
        rate = "10Gbps"
        delay = "1us"
        [switch.pfc]
        enabled = true
        [nic]
        scheduler = {{ packet_round_robin = {{}} }}
        rto = "16ms"
        [nic.cc.none]
        [nic.state_cache]
        capacity = "{}B"
        fetch_slots = 1
        miss_latency = "1us"
        when_full = "pause"
        [nic.star]
        rto = "16ms"
        wqep_timeout = "16ms"
        [[rpc]]
        name = "g"
        server = 0
        clients = [1, 2, 3, 4]
        connections = {connections}
        stack = "{stack}"
        workload = "{workload}"
        warmup = "1ms"
        {extra}
        "#,
        cache * 256
    );
    let loaded = LoadedScenario::from_str(&toml, "rpc.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let sets: Vec<(String, String)> = sets.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    common::run_summary(&loaded.with_overrides(&sets).unwrap_or_else(|e| panic!("{e}")), "rpc")
}

#[test]
fn the_rpc_load_counts_a_header_per_packet_of_a_request() {
    // 4 KB requests in 1 KB packets: the server's inbound wire carries the requests (4 packets
    // each, every one with its headers) and one ACK per reply, so `load` (the requests alone)
    // is just under `wire_load`. Counting one header per request put it 4% lower.
    let s = rpc_run_with("rdma", "rpc", 8, 64, "request = \"4KB\"", &[("nic.mtu", "1024")]);
    let r = &s.rpc[0];
    assert_eq!(r.errors, 0);
    let share = r.load / r.wire_load;
    assert!((0.99..1.0).contains(&share), "load {} of wire_load {}: {share}", r.load, r.wire_load);
}

#[test]
fn a_stateless_queue_pairs_send_and_receive_queues_have_their_own_depths() {
    // The server keeps 3 receives and 1 send outstanding per connection, a client 3 sends and
    // 1 receive: with both queues 3 deep every post fits its own queue, as on an RC queue pair.
    // Counting both queues against one depth refused the server's reply (every call failed).
    for (stack, sets) in [("star", [("nic.sq_depth", "3"), ("nic.rq_depth", "1024")]), ("star", [("nic.sq_depth", "1024"), ("nic.rq_depth", "3")]), ("rdma", [("nic.sq_depth", "3"), ("nic.rq_depth", "3")])] {
        let deep = rpc_run(stack, "rpc", 8, 64, "");
        let tight = rpc_run_with(stack, "rpc", 8, 64, "", &sets);
        let (d, t) = (&deep.rpc[0], &tight.rpc[0]);
        assert_eq!(t.errors, 0, "{stack} {sets:?}");
        assert!(t.calls > 0 && t.calls == d.calls, "{stack} {sets:?}: {} calls, {} with deep queues", t.calls, d.calls);
    }
}

#[test]
fn calls_obey_littles_law_on_every_stack() {
    // A closed loop: each connection has one call at a time, so calls per second times the
    // mean call time is the number of connections.
    for (stack, workload) in [("rdma", "rpc"), ("star", "rpc"), ("scalardma", "rpc"), ("rdma", "parameter_server"), ("star", "parameter_server")] {
        for n in [8u32, 48] {
            let s = rpc_run(stack, workload, n, 64, "");
            let r = &s.rpc[0];
            assert_eq!(r.errors, 0);
            let little = r.mcalls * r.latency_mean_us.unwrap();
            assert!((little - n as f64).abs() < 0.03 * n as f64, "{stack} {workload} {n}: {} Mcalls/s × {} µs = {little}", r.mcalls, r.latency_mean_us.unwrap());
        }
    }
}

#[test]
fn past_its_cache_an_rdma_server_completes_one_call_per_state_fetch_and_star_does_not_care() {
    // 96 connections over a 32-entry cache with one 1 µs fetch at a time: each call's three
    // requests arrive together, so the server misses once per call: one call per microsecond.
    let rdma = rpc_run("rdma", "rpc", 96, 32, "");
    assert!((rdma.rpc[0].mcalls - 1.0).abs() < 0.02, "{}", rdma.rpc[0].mcalls);
    let within = rpc_run("rdma", "rpc", 24, 32, "");
    let misses = within.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 0").unwrap().counters.misses;
    assert_eq!(misses, 24, "within the cache each connection's state is fetched once");
    assert!(within.rpc[0].mcalls > 1.8, "within the cache: latency-bound, {}", within.rpc[0].mcalls);
    // StaR: the stateless server looks nothing up; its clients hold 24 connections each.
    let star = rpc_run("star", "rpc", 96, 32, "");
    let small = rpc_run("star", "rpc", 64, 32, "");
    assert!(star.rpc[0].wire_load > 0.95 && (star.rpc[0].mcalls / small.rpc[0].mcalls - 1.0).abs() < 0.05, "{} vs {}", star.rpc[0].mcalls, small.rpc[0].mcalls);
    let server = star.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 0");
    assert!(server.is_none_or(|n| n.counters.lookups == 0), "the stateless server looked state up");
    let st = star.star.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 0").unwrap();
    assert_eq!((st.stateful, st.peak_stateful, st.stateless), (0, 0, 96));
    // Each call: 3 RD + 3 CQEP + 4 EA + 1 GD + 1 CQEP into the stateless server, 12 packets.
    let per_call = st.counters.stateless_rx as f64 / (star.rpc[0].calls as f64 * 4.0 / 3.0);
    assert!((per_call - 12.0).abs() < 0.5, "{per_call} packets per call");
}

#[test]
fn a_parameter_server_answers_only_when_every_connection_has_asked() {
    // One round at a time: every connection's call takes the same time, the slowest's.
    let s = rpc_run("rdma", "parameter_server", 40, 64, "");
    let r = &s.rpc[0];
    assert!(r.latency_p99_us.unwrap() - r.latency_p50_us.unwrap() < 0.05 * r.latency_p50_us.unwrap(), "{} vs {}", r.latency_p50_us.unwrap(), r.latency_p99_us.unwrap());
    let rpc = rpc_run("rdma", "rpc", 40, 64, "");
    assert!(r.mcalls < rpc.rpc[0].mcalls, "the barrier costs throughput");
}

#[test]
fn scalardma_holds_connections_outside_their_groups_turn() {
    // Two groups of 24 in turns of 20 µs: a call can start only in its group's turn, so with
    // the rest idle half the time, throughput falls below plain RDMA's.
    let plain = rpc_run("rdma", "parameter_server", 48, 64, "");
    let grouped = rpc_run("scalardma", "parameter_server", 48, 64, "group_size = 24\ntimeslot = \"20us\"\nswitch_cost = \"1us\"");
    let one_group = rpc_run("scalardma", "parameter_server", 48, 64, "group_size = 48");
    assert_eq!(one_group.rpc[0].calls, plain.rpc[0].calls, "one group: no middleware at work");
    assert!(grouped.rpc[0].mcalls < 0.8 * plain.rpc[0].mcalls, "{} vs {}", grouped.rpc[0].mcalls, plain.rpc[0].mcalls);
}

#[test]
fn the_shipped_fig10_rpc_fpga_reproduction() {
    let s = common::run_shipped("star/fig10_rpc_fpga.toml");
    let get = |n: &str| s.rpc.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("{n}"));
    assert!(get("StaR 400").wire_load > 0.95, "StaR stays at the link's peak");
    assert!(get("RDMA on FPGA 400").wire_load < 0.5 * get("RDMA on FPGA 120").wire_load, "RDMA on FPGA drops past its cache");
    let server = s.star.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 63").unwrap();
    assert_eq!(server.peak_stateful, 0, "StaR's server holds no connection state");
    assert_eq!(server.stateless, 40);
}

#[test]
fn bad_star_and_rpc_keys_are_named_with_their_line() {
    let base = "duration = \"10us\"\n[topology.star]\nhosts = 3\n";
    let cases = [
        ("[nic.star]\nrto = \"0ns\"\n", "nic.star.rto"),
        ("[[rpc]]\nserver = 0\nclients = [1, 2]\nconnections = 0\n", "rpc[0].connections"),
        ("[[rpc]]\nserver = 0\nclients = [0, 1]\nconnections = 4\n", "rpc[0].clients"),
        ("[[rpc]]\nserver = 0\nclients = [1, 7]\nconnections = 4\n", "rpc[0].clients"),
        ("[[rpc]]\nserver = 0\nclients = [1]\nconnections = 4\ntimeslot = \"1us\"\nswitch_cost = \"2us\"\n", "rpc[0].timeslot"),
        ("[[rpc]]\nserver = 0\nclients = [1]\nconnections = 4\nstack = \"tcp\"\n", "rpc"),
        ("[nic]\nqp_context_bytes = 0\n", "nic.qp_context_bytes"),
        // A state larger than a packet cannot migrate in its one WQEP.
        ("[nic]\nmtu = 1024\nqp_context_bytes = 2048\n[[rpc]]\nserver = 0\nclients = [1]\nconnections = 4\nstack = \"star\"\n", "nic.qp_context_bytes"),
        ("[nic]\nmtu = 1024\n[nic.state_cache]\ncapacity = \"4KiB\"\nrx_buffer = \"500B\"\n", "nic.state_cache.rx_buffer"),
        // Bytes that hold no connection's 256 (0 is allowed: a NIC that keeps none).
        ("[nic.state_cache]\ncapacity = \"100B\"\n", "nic.state_cache.capacity"),
        ("[nic.star]\nwindow = \"0B\"\n", "nic.star.window"),
    ];
    for (extra, key) in cases {
        let text = format!("{base}{extra}");
        let err = LoadedScenario::from_str(&text, "bad.toml", Path::new(".")).and_then(|l| World::build(&l).map(|_| ())).expect_err(extra);
        let msg = err.to_string();
        assert!(msg.contains(key) && msg.contains("bad.toml:"), "{extra}: {msg}");
    }
}

#[test]
fn a_star_connection_cut_off_is_seen_as_stalled() {
    // One StaR rpc connection over a single link that fails for good at 1 ms, with resends
    // timed at 16 ms: nothing is delivered after 1 ms while the stateful side's packets wait
    // for acknowledgements. With stop_on_stall the run ends once the quiet has lasted a tenth
    // of the 5 ms run, at about 1.5 ms (it ran on to 5 ms: StaR's work was not counted as
    // pending, only RoCE queue pairs').
    let text = "duration = \"5ms\"\nstop_on_stall = true\n[topology.back_to_back]\n[links]\nrate = \"10Gbps\"\ndelay = \"1us\"\n[nic]\nmtu = 1024\n[nic.cc.none]\n[nic.star]\nrto = \"16ms\"\nwqep_timeout = \"16ms\"\n[[link_events]]\nat = \"1ms\"\nbetween = [0, 1]\nstate = \"down\"\n[[rpc]]\nserver = 0\nclients = [1]\nconnections = 1\nstack = \"star\"\nwarmup = \"100us\"\n";
    let mut w = build(text);
    assert_eq!(w.run(|_| true), rnicsim::world::RunEnd::Stalled);
    let stall = w.stall().expect("stalled");
    assert!(stall.waiting_star_ends >= 1, "{stall:?}");
    let stopped = stall.stopped_at_ps.expect("stopped");
    // Progress reports, where the detector looks, come every 125 µs of simulated time or so.
    assert!((Time::from_us(1500).0..Time::from_us(1650).0).contains(&stopped), "stopped at {} ps", stopped);
}

#[test]
fn rpc_starts_spread_in_time_break_the_lock_step_and_enough_connections_fill_the_link() {
    // StaR connections from 8 clients into one server over 10 Gbps. Started all at once, the
    // closed loops of equal service times stay in lock step (rounds of all RDs, then all CQEPs,
    // then the server's replies) and the link idles between rounds; each connection's first
    // call at a random time within half the warmup (the default) breaks the lock step. With
    // enough calls in flight the link is full.
    let text = |connections: u32, spread: &str| {
        format!("duration = \"5ms\"\n[topology.star]\nhosts = 9\n[links]\nrate = \"10Gbps\"\ndelay = \"1us\"\n[switch.pfc]\nenabled = true\n[nic]\nmtu = 1024\nscheduler = {{ packet_round_robin = {{}} }}\nrto = \"16ms\"\n[nic.cc.none]\n[nic.star]\nrto = \"200us\"\nwqep_timeout = \"200us\"\n[[rpc]]\nserver = 0\nclients = [1, 2, 3, 4, 5, 6, 7, 8]\nconnections = {connections}\nstack = \"star\"\n{spread}")
    };
    let run = |connections: u32, spread: &str| {
        let loaded = LoadedScenario::from_str(&text(connections, spread), "rpc.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        common::run_summary(&loaded, "rpc").rpc[0].clone()
    };
    // 0.83 against 0.78 M calls/s at 24 connections (a wire load of 0.79 against 0.74).
    let spread = run(24, "");
    let lockstep = run(24, "start_spread = \"0us\"\n");
    assert!(spread.mcalls > 1.04 * lockstep.mcalls, "{spread:?} {lockstep:?}");
    let full = run(128, "");
    assert!(full.wire_load > 0.98, "{full:?}");
}

#[test]
fn the_parameter_server_at_datacenter_scale_runs_on_both_stacks() {
    // datacenter_ps.toml over 1.5 ms (the last 0.5 ms measured): 1512 connections per server on
    // the 128-host leaf-spine. Both stacks answer every round; StaR's server keeps no connection
    // state and fills its link, where RDMA's server misses its 450-entry cache.
    let loaded = LoadedScenario::from_file(&common::root().join("scenarios/star/datacenter_ps.toml")).unwrap();
    let s = common::run_summary(&loaded.with_overrides(&[("duration".into(), "\"1500us\"".into())]).unwrap(), "datacenter_ps");
    let get = |n: &str| s.rpc.iter().find(|r| r.name == n).unwrap_or_else(|| panic!("{n}"));
    for r in &s.rpc {
        assert!(r.calls > 0 && r.errors == 0, "{}: {} calls, {} errors", r.name, r.calls, r.errors);
        assert_eq!(r.connections, 1512);
    }
    assert!(get("StaR").wire_load > 0.9, "StaR's server link is the limit: {}", get("StaR").wire_load);
    let server = s.star.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 64").unwrap();
    assert_eq!(server.peak_stateful, 0, "StaR's server holds no connection state");
    let rdma_server = s.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 0").unwrap();
    assert!(rdma_server.counters.misses > 1000, "RDMA's server outgrows its cache: {} misses", rdma_server.counters.misses);
}

#[test]
fn an_rpc_server_posts_its_next_receive_when_it_sees_the_completion() {
    // One StaR RPC connection (10 Gbps, 1 µs links), the server's port captured. The server
    // reposts a receive for each request that lands; its library packs that WQE into a WQEP
    // after the doorbell and the WQE fetch (1502.88 ns). The receive is posted when the host
    // sees the request's CQE, which the stateless NIC writes as it sends the CQEP's EA: each
    // reposted receive's WQEP leaves at least 1502.88 ns after the EA of the receive it
    // replaces. It left 502.56 ns too early, posted at the CQEP's arrival.
    let dir = tempfile::tempdir().unwrap();
    let mut w = build("duration = \"300us\"\n[topology.star]\nhosts = 2\n[links]\nrate = \"10Gbps\"\ndelay = \"1us\"\n[nic]\nmtu = 1024\n[nic.cc.none]\n[[rpc]]\nserver = 0\nclients = [1]\nconnections = 1\nstack = \"star\"\nwarmup = \"100us\"\n[outputs]\npcap = [[0, 0]]\n");
    w.run(|_| true);
    let file = dir.path().join("capture.pcap");
    rnicsim::wire::pcap::write_pcap(&file, &w.capture).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    // (Nanosecond pcap: a record's header is seconds, nanoseconds, captured and original lengths.)
    let (mut off, mut eas, mut wqeps) = (24, Vec::new(), Vec::new());
    while off + 16 <= bytes.len() {
        let word = |i: usize| u32::from_le_bytes(bytes[off + i..off + i + 4].try_into().unwrap()) as u64;
        let (t, len) = (word(0) * 1_000_000_000 + word(4), word(8) as usize);
        let frame = &bytes[off + 16..off + 16 + len];
        off += 16 + len;
        // From the server (node 0) to the stateful side's port 4794, StaR header after UDP.
        if frame.len() >= 62 && u16::from_be_bytes([frame[36], frame[37]]) == 4794 && frame[28..30] == [0, 1] {
            let h = StarHeader::decode(frame[42..62].try_into().unwrap()).unwrap();
            if h.opt == rnicsim::wire::star::StarOp::Recv {
                match h.ptype {
                    StarType::Ea => eas.push(t),
                    StarType::Wqep => wqeps.push(t),
                    _ => {}
                }
            }
        }
    }
    // The first three WQEPs are the receives posted at the start.
    assert!(eas.len() > 20 && wqeps.len() > 23, "{} EAs, {} WQEPs", eas.len(), wqeps.len());
    for (k, (&ea, &wqep)) in eas.iter().zip(&wqeps[3..]).enumerate() {
        assert!(wqep >= ea + 1502, "receive {k}: its WQEP at {wqep} ns, its CQE seen at {ea} ns");
    }
}

#[test]
fn a_saturated_links_wire_load_is_at_most_one() {
    // Eight clients keep a 10 Gbps server link busy. The load counted a packet whole when its
    // serialization began, so the window took in one still on the wire at its end: 1.0000888.
    for duration in ["3ms", "3.3ms"] {
        let toml = format!(
            "duration = \"{duration}\"\n[topology.star]\nhosts = 9\n[links]\nrate = \"10Gbps\"\ndelay = \"1us\"\n[nic]\nmtu = 1024\n[nic.cc.none]\n\
             [[rpc]]\nname = \"g\"\nserver = 0\nclients = [1, 2, 3, 4, 5, 6, 7, 8]\nconnections = 40\nrequest = \"4500B\"\nstack = \"star\"\nworkload = \"rpc\"\nwarmup = \"1ms\"\n"
        );
        let mut w = build(&toml);
        w.run(|_| true);
        let s = rnicsim::output::Summary::of(&w, "w");
        let load = s.rpc[0].wire_load;
        assert!(load > 0.99 && load <= 1.0, "{duration}: {load}");
    }
}

#[test]
fn a_stateless_server_slower_on_pcie_than_its_link_pauses_its_switch() {
    // 64 StaR connections from four clients each send three 64 KB requests to a server whose
    // PCIe writes 10 Gbps. Its RDs skipped the receive buffer: 5.3 MB reached it in 1 ms
    // (42.5 Gbps), 4 MB of it waiting for PCIe, with no PAUSE. Now the buffer fills and pauses
    // the switch: no more than a millisecond of PCIe (1.25 MB, 1.33 MB with headers) and the
    // 256 KiB buffer come in.
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 5\n[nic]\npcie = { bandwidth = \"10Gbps\" }\n[nic.cc.none]\n[[rpc]]\nserver = 4\nclients = [0, 1, 2, 3]\nconnections = 64\nstack = \"star\"\nrequests = 3\nrequest = \"64KB\"\nreply = \"32B\"\n";
    let loaded = rnicsim::scenario::LoadedScenario::from_str(toml, "star.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let mut w = World::build(&loaded).unwrap_or_else(|e| panic!("{e}"));
    w.run(|_| true);
    let into_server = w.ports[w.ports[w.host_port(4).unwrap() as usize].peer as usize].counters.tx_bytes;
    assert!(into_server < 1_330_000 + 262_144, "{into_server} bytes into a server whose PCIe writes 1.25 MB/ms");
    let nic = &w.nics[4];
    assert!(nic.rx.pauses_sent > 0 && nic.rx.peak <= 256 * 1024 && nic.rx.drops == 0, "{} pauses, peak {}, {} drops", nic.rx.pauses_sent, nic.rx.peak, nic.rx.drops);
}

#[test]
fn an_rpc_window_of_few_calls_per_connection_is_warned_of_at_its_warmup() {
    // Eight StaR connections calling with 100 KB requests and replies over 10 Gbps: a call
    // takes about 2.2 ms, so a 4 ms window holds under two per connection, and the call each
    // has in flight at the window's start counts whole (the load read 1.02 of the link over
    // 8 ms). The run warns at `rpc[0].warmup`'s line; a window of 12 or more calls per
    // connection does not.
    let text = |duration: &str, request: &str| {
        format!(
            "name = \"st\"\nduration = \"{duration}\"\n[topology.star]\nhosts = 5\n[links]\nrate = \"10Gbps\"\ndelay = \"1us\"\n[nic]\nmtu = 1024\n[nic.cc.none]\n\
             [nic.star]\nrto = \"16ms\"\nwqep_timeout = \"16ms\"\n\
             [[rpc]]\nname = \"r\"\nserver = 0\nclients = [1, 2, 3, 4]\nconnections = 8\nstack = \"star\"\nworkload = \"rpc\"\nwarmup = \"1ms\"\nrequest = \"{request}\"\nreply = \"{request}\"\n"
        )
    };
    let warnings = |toml: String| {
        let loaded = LoadedScenario::from_str(&toml, "st.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let tmp = tempfile::tempdir().unwrap();
        let dir = rnicsim::output::RunDir::create(&tmp.path().join("run"), false).unwrap();
        let mut w = World::build(&loaded).unwrap_or_else(|e| panic!("{e}"));
        w.run(|_| true);
        let s = rnicsim::write_outputs(&dir, &loaded, &mut w, Vec::new()).unwrap();
        (s.rpc[0].calls, s.warnings)
    };
    let (calls, few) = warnings(text("5ms", "100KB"));
    assert!(calls < 8 * 10, "{calls}");
    let line = text("5ms", "100KB").lines().position(|l| l.starts_with("warmup")).unwrap() + 1;
    assert!(few.iter().any(|w| w.starts_with(&format!("st.toml:{line}:")) && w.contains("rpc `r`") && w.contains("calls per connection")), "{few:?}");
    let (calls, many) = warnings(text("3ms", "32B"));
    assert!(calls >= 8 * 12, "{calls}");
    assert!(!many.iter().any(|w| w.contains("calls per connection")), "{many:?}");
}

#[test]
fn an_rpc_entrys_values_are_refused_as_the_scenario_loads_before_any_warning_is_drawn_from_them() {
    // 2000 requests per call, or no connection: refused when the text is loaded (a scenario
    // whose values are wrong is never built), so that no load warning is drawn from them first
    // (a StaR server's setup time from 2000 requests per connection, "4 clients for 0
    // connections"). They were refused only when the world was built, after the warnings.
    for (set, key, why) in [("requests = 2000\nconnections = 8", "requests", "between 1 and 64"), ("connections = 0", "connections", "between 1 and 500000")] {
        let toml = format!("duration = \"1ms\"\n[topology.star]\nhosts = 5\n[[rpc]]\nserver = 0\nclients = [1, 2, 3, 4]\nstack = \"star\"\n{set}\n");
        let e = LoadedScenario::from_str(&toml, "rpc.toml", Path::new(".")).err().unwrap_or_else(|| panic!("{set}: loaded")).to_string();
        assert!(e.contains(&format!("rpc[0].{key}")) && e.contains(why), "{e}");
    }
}

#[test]
fn a_resend_the_whitelist_refuses_fails_the_operation() {
    // A WRITE through a window: its RD is lost on a failed link, and the stateless host
    // invalidates the window before the resend. The resend was refused and dropped, and the
    // WRITE (with everything behind it) never completed; it fails as a first send's refusal.
    let links = "\n[[link_events]]\nat = \"100us\"\nbetween = [0, 3]\nstate = \"down\"\n[[link_events]]\nat = \"150us\"\nbetween = [0, 3]\nstate = \"up\"\n";
    let mut w = world(0.0, 1, links);
    let mr = w.register_mr(0, 256 * 1024, 64 * 1024, Access::ALL).unwrap();
    let src = w.register_mr(1, 0, 4096, Access::ALL).unwrap();
    let window = w.bind_mw(0, mr.lkey, 256 * 1024, 128, Access::REMOTE_WRITE).unwrap();
    let (_, c) = w.connect_star(0, 1, Owner::HOST, Owner::HOST, StarRole::FirstStateless).unwrap();
    w.fill_memory(1, 0, &pattern(64, 5)).unwrap();
    w.run_until(Time(100_500_000));
    w.post_send(c, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len: 64, lkey: src.lkey, remote_addr: 256 * 1024, rkey: window.rkey }).unwrap();
    w.run_until(Time(110_000_000));
    w.invalidate_mw(0, window.rkey).unwrap();
    let refused = w.nics[1].star.counters.refused;
    let done = wait_for(&mut w, 1, 1);
    assert_eq!(done.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), [(1, Status::RemoteAccess)]);
    assert_eq!(w.nics[1].star.counters.refused, refused + 1);
    assert!(w.memory(0, 256 * 1024, 64).unwrap().iter().all(|&b| b == 0), "nothing reached the stateless memory");
}

#[test]
fn a_star_table_without_star_connections_is_warned() {
    let toml = |stack: &str| {
        format!(
            "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[nic.star]\nrto = \"16ms\"\n\
             [[rpc]]\nname = \"r\"\nserver = 0\nclients = [1]\nconnections = 2\nstack = \"{stack}\"\nworkload = \"rpc\"\nrequest = \"1KB\"\nreply = \"1KB\"\n"
        )
    };
    let said = |stack: &str| LoadedScenario::from_str(&toml(stack), "s.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")).warnings.into_iter().filter(|w| w.contains("nic.star") && w.contains("no connection is stateless")).count();
    assert_eq!((said("rdma"), said("star"), said("star_auto")), (1, 0, 0));
}
