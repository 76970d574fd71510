//! Tassel and the monolithic baseline against hand-computed schedules and analytic rates.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;

/// Per-flow FIFOs of packet lengths (the QPs' WQEs).
#[derive(Default, Clone)]
struct Queues(Vec<VecDeque<u32>>);

impl Queues {
    fn new(flows: usize) -> Queues {
        Queues(vec![VecDeque::new(); flows])
    }
    fn post(&mut self, flow: u32, lens: impl IntoIterator<Item = u32>) {
        self.0[flow as usize].extend(lens);
    }
}

impl WqeSource for Queues {
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>) {
        out.extend(self.0[flow as usize].iter().skip(skip as usize).take(max as usize));
    }
    fn consume(&mut self, flow: u32) {
        self.0[flow as usize].pop_front().expect("consumed a packet that was posted");
    }
}

/// Either scheduler, driven the same way.
trait Sched {
    fn poll(&mut self, now: u64, src: &mut Queues) -> Decision;
    fn wake(&mut self, flow: u32, now: u64, src: &mut Queues);
    fn set_rate(&mut self, flow: u32, bps: u64, now: u64);
}
impl Sched for Tassel {
    fn poll(&mut self, now: u64, src: &mut Queues) -> Decision {
        Tassel::poll(self, now, src)
    }
    fn wake(&mut self, flow: u32, now: u64, _: &mut Queues) {
        Tassel::wake(self, flow, now)
    }
    fn set_rate(&mut self, flow: u32, bps: u64, now: u64) {
        Tassel::set_rate(self, flow, bps, now)
    }
}
impl Sched for Monolithic {
    fn poll(&mut self, now: u64, src: &mut Queues) -> Decision {
        Monolithic::poll(self, now, src)
    }
    fn wake(&mut self, flow: u32, now: u64, src: &mut Queues) {
        Monolithic::wake(self, flow, now, src)
    }
    fn set_rate(&mut self, flow: u32, bps: u64, now: u64) {
        Monolithic::set_rate(self, flow, bps, now)
    }
}

/// Sends as (real time, flow, len) until `end` or until nothing is left.
fn drive(s: &mut impl Sched, src: &mut Queues, start: u64, end: u64, mut on_send: impl FnMut(u64, u32, u32)) -> u64 {
    let mut now = start;
    loop {
        match s.poll(now, src) {
            Decision::Send { flow, len } => on_send(now, flow, len),
            Decision::Idle { until: Some(t) } => {
                assert!(t > now, "idle until {t} at {now}: no progress");
                if t > end {
                    return now;
                }
                now = t;
            }
            Decision::Idle { until: None } => return now,
        }
    }
}

fn cfg() -> Config {
    Config::default()
}

const GBPS: u64 = 1_000_000_000;

#[test]
fn wf2q_plus_order_on_a_hand_built_case() {
    // Flow 0 at 50 Gbps, flow 1 at 25 Gbps, 1000 B packets on a 100 Gbps link (80 ns each).
    // Flow 0: S = 0, 160, 320, 480 ns; F = S + 160. Flow 1: S = 0, 320; F = S + 320.
    // t=0: both eligible, F 160 < 320 → flow 0. t=80: flow 1 (S 0). t=160: flow 0 (S 160).
    // t=240: nothing eligible. t=320: flow 0 (F 480) before flow 1 (F 640); t=400: flow 1.
    let expect = [(0, 0), (80, 1), (160, 0), (320, 0), (400, 1), (480, 0)];
    for which in 0..2 {
        let mut q = Queues::new(2);
        q.post(0, [1000; 4]);
        q.post(1, [1000; 2]);
        let mut log = Vec::new();
        let mut run = |s: &mut dyn FnMut(&mut Queues, &mut Vec<(u64, u32)>)| s(&mut q, &mut log);
        if which == 0 {
            let mut t = Tassel::new(cfg(), 2);
            run(&mut |q, log| {
                t.set_rate(0, 50 * GBPS, 0);
                t.set_rate(1, 25 * GBPS, 0);
                t.wake(0, 0);
                t.wake(1, 0);
                drive(&mut t, q, 0, u64::MAX, |now, f, _| log.push((now / 1000, f)));
            });
        } else {
            let mut m = Monolithic::new(cfg(), 2);
            run(&mut |q, log| {
                m.set_rate(0, 50 * GBPS, 0);
                m.set_rate(1, 25 * GBPS, 0);
                m.wake(0, 0, q);
                m.wake(1, 0, q);
                drive(&mut m, q, 0, u64::MAX, |now, f, _| log.push((now / 1000, f)));
            });
        }
        assert_eq!(log, expect, "scheduler {which}");
    }
}

/// Achieved rate of one flow sending `n` packets of `len` bytes at `bps`.
fn single_flow_rate(s: &mut impl Sched, bps: u64, len: u32, n: usize) -> (f64, Vec<u64>) {
    let mut q = Queues::new(1);
    q.post(0, std::iter::repeat_n(len, n));
    s.set_rate(0, bps, 0);
    s.wake(0, 0, &mut q);
    let mut times = Vec::new();
    drive(s, &mut q, 0, u64::MAX, |now, _, _| times.push(now));
    assert_eq!(times.len(), n);
    let span = (times[n - 1] - times[0]) as f64 / PS_PER_SEC as f64;
    ((n - 1) as f64 * len as f64 * 8.0 / span, times)
}

#[test]
fn one_flow_gets_its_limit_from_100kbps_to_100gbps() {
    for bps in [100_000, 1_000_000, 10_000_000, 200_000_000, GBPS, 10 * GBPS, 25 * GBPS, 40 * GBPS, 99 * GBPS, 100 * GBPS] {
        let (rate, _) = single_flow_rate(&mut Tassel::new(cfg(), 1), bps, 1000, 300);
        assert!((rate / bps as f64 - 1.0).abs() < 0.01, "limit {bps}: achieved {rate}");
        let (rate, _) = single_flow_rate(&mut Monolithic::new(cfg(), 1), bps, 1000, 300);
        assert!((rate / bps as f64 - 1.0).abs() < 0.01, "baseline, limit {bps}: achieved {rate}");
    }
}

#[test]
fn a_limit_between_whole_kbps_runs_at_the_nearest() {
    // Rates are kept in whole Kbps: 2999 bps runs as 3 Kbps (it ran as 2 when truncated).
    for which in 0..2 {
        let (rate, _) = if which == 0 { single_flow_rate(&mut Tassel::new(cfg(), 1), 2999, 1000, 5) } else { single_flow_rate(&mut Monolithic::new(cfg(), 1), 2999, 1000, 5) };
        assert!((rate / 3000.0 - 1.0).abs() < 1e-6, "scheduler {which}: {rate} bps");
    }
}

#[test]
fn gaps_are_exactly_l_over_r_without_bursts() {
    let (_, times) = single_flow_rate(&mut Tassel::new(cfg(), 1), 10 * GBPS, 1000, 100);
    for w in times.windows(2) {
        assert_eq!(w[1] - w[0], 800_000, "1000 B at 10 Gbps is 800 ns apart");
    }
}

#[test]
fn oversubscription_by_two_halves_every_flow() {
    // Limits 20, 40, 60, 80 Gbps: Σ = 200 Gbps on a 100 Gbps link, Φ = 2.
    let limits = [20, 40, 60, 80];
    let mut t = Tassel::new(cfg(), 4);
    let mut q = Queues::new(4);
    for (f, g) in limits.iter().enumerate() {
        q.post(f as u32, std::iter::repeat_n(1000, 20_000));
        t.set_rate(f as u32, g * GBPS, 0);
        t.wake(f as u32, 0);
    }
    assert!((t.phi() - 2.0).abs() < 1e-9);
    let end = 200_000_000; // 200 µs
    let mut bytes = [0u64; 4];
    drive(&mut t, &mut q, 0, end, |now, f, len| {
        if now >= 20_000_000 {
            bytes[f as usize] += len as u64;
        }
    });
    for (f, g) in limits.iter().enumerate() {
        let gbps = bytes[f] as f64 * 8.0 / 180e-6 / 1e9;
        let want = *g as f64 / 2.0;
        assert!((gbps / want - 1.0).abs() < 0.02, "flow {f}: {gbps} Gbps, want {want}");
    }
}

#[test]
fn the_scheduling_latency_is_real_time_under_oversubscription() {
    // 16 flows of 64 B packets, each limited to the line rate (Φ = 16, virtual time at 1/16):
    // batches of 13 (sized for 1024 B) once per 1 µs of real time give 16 × 13 per µs, more
    // than the 195 packets per µs the link carries, so the link stays full and the flows share
    // it equally. Counting the latency in virtual time (16 µs real) gave 13 per flow per 16 µs.
    let mut t = Tassel::new(cfg(), 16);
    let mut q = Queues::new(16);
    for f in 0..16 {
        q.post(f, std::iter::repeat_n(64, 40_000));
        t.set_rate(f, 100 * GBPS, 0);
        t.wake(f, 0);
    }
    let mut bytes = [0u64; 16];
    drive(&mut t, &mut q, 0, 200_000_000, |now, f, len| {
        if now >= 20_000_000 {
            bytes[f as usize] += len as u64;
        }
    });
    let total = bytes.iter().sum::<u64>() as f64 * 8.0 / 180e-6 / 1e9;
    assert!(total > 99.0, "{total} Gbps in all");
    for (f, b) in bytes.iter().enumerate() {
        let gbps = *b as f64 * 8.0 / 180e-6 / 1e9;
        assert!((gbps / 6.25 - 1.0).abs() < 0.02, "flow {f}: {gbps} Gbps");
    }
}

#[test]
fn a_backlogged_flow_refilled_one_packet_at_a_time_keeps_its_share() {
    // Two flows limited to 50 Gbps each, 64 B packets, and a sender that can only decide one
    // packet per 100 ns (10 Mpps, fewer than the batches bring: a decision-bound NIC), so
    // packets wait past their start times.
    // Flow 1 has 8 packets posted and one more with each it sends (a queue pair refilled per
    // completion), so its batches run dry while it still holds packets. Waking it must not
    // restart its WF²Q+ chain at "now" as if it had been idle (it sent 540 packets to 1260).
    let mut t = Tassel::new(cfg(), 2);
    let mut q = Queues::new(2);
    q.post(0, std::iter::repeat_n(64, 100_000));
    q.post(1, std::iter::repeat_n(64, 8));
    for f in 0..2 {
        t.set_rate(f, 50 * GBPS, 0);
        t.wake(f, 0);
    }
    let (mut now, mut sent) = (0u64, [0u64; 2]);
    while now < 200_000_000 {
        match t.poll(now, &mut q) {
            Decision::Send { flow, .. } => {
                if now >= 20_000_000 {
                    sent[flow as usize] += 1;
                }
                if flow == 1 {
                    q.post(1, [64]);
                    t.wake(1, now);
                }
                now += 100_000;
            }
            Decision::Idle { until } => now = until.expect("both flows are backlogged"),
        }
    }
    assert!((sent[1] as f64 / sent[0] as f64 - 1.0).abs() < 0.02, "{sent:?}");
}

#[test]
fn six_groups_each_get_their_limit() {
    // Fig. 18a: 600 flows in six groups with distinct limits, Σ below the link rate.
    let group_mbps = [10u64, 20, 50, 100, 200, 250];
    let flows = 600;
    let mut t = Tassel::new(cfg(), flows);
    let mut q = Queues::new(flows);
    for f in 0..flows as u32 {
        t.set_rate(f, group_mbps[f as usize % 6] * 1_000_000, 0);
        q.post(f, std::iter::repeat_n(1000, 200));
        t.wake(f, 0);
    }
    assert!(t.phi() < 1.0);
    let mut bytes = vec![0u64; flows];
    drive(&mut t, &mut q, 0, 2_000_000_000, |now, f, len| {
        if now >= 400_000_000 {
            bytes[f as usize] += len as u64;
        }
    });
    for g in 0..6 {
        let got: f64 = (0..flows).filter(|f| f % 6 == g).map(|f| bytes[f] as f64 * 8.0 / 1.6e-3 / 1e6).sum::<f64>() / 100.0;
        let want = group_mbps[g] as f64;
        assert!((got / want - 1.0).abs() < 0.02, "group {g}: {got} Mbps per flow, want {want}");
    }
}

#[test]
fn rate_change_takes_effect_at_the_next_packet() {
    let mut t = Tassel::new(cfg(), 1);
    let mut q = Queues::new(1);
    q.post(0, [1000; 10]);
    t.set_rate(0, GBPS, 0); // 8 µs per packet
    t.wake(0, 0);
    let mut times = Vec::new();
    let stop = drive(&mut t, &mut q, 0, 30_000_000, |now, _, _| times.push(now));
    assert_eq!(times, [0, 8_000_000, 16_000_000, 24_000_000]);
    t.set_rate(0, 2 * GBPS, stop); // 4 µs per packet from the next one on
    drive(&mut t, &mut q, stop, u64::MAX, |now, _, _| times.push(now));
    // Packet 4 starts when packet 3 finishes at the old rate (32 µs); afterwards 4 µs gaps.
    assert_eq!(&times[4..], [32_000_000, 36_000_000, 40_000_000, 44_000_000, 48_000_000, 52_000_000]);
}

#[test]
fn pfc_pause_stops_the_timer() {
    let mut t = Tassel::new(cfg(), 1);
    let mut q = Queues::new(1);
    q.post(0, [1000; 3]);
    t.set_rate(0, 10 * GBPS, 0);
    t.wake(0, 0);
    assert_eq!(t.poll(0, &mut q), Decision::Send { flow: 0, len: 1000 });
    t.set_paused(true, 100_000);
    assert_eq!(t.poll(5_000_000, &mut q), Decision::Idle { until: None });
    t.set_paused(false, 5_000_000);
    // 700 ns of virtual time remained before packet 2: it leaves 700 ns after the resume
    // (the scheduler may wake earlier to fetch the flow's next batch one latency ahead).
    let mut sends = Vec::new();
    drive(&mut t, &mut q, 5_000_000, u64::MAX, |now, _, _| sends.push(now));
    assert_eq!(sends, [5_700_000, 6_500_000]);
}

#[test]
fn a_packet_due_as_the_port_pauses_waits_for_the_resume_and_keeps_its_slot() {
    // 10 Gbps, 1000 B: a packet every 800 ns. The port pauses at 800 ns, the moment packet 2
    // is due: it is not handed out (it could not leave a paused port, and its flow would lose
    // the slot), and goes at the resume, its 800 ns spacing to packet 3 kept. SE-PIEO alike.
    let mut t = Tassel::new(cfg(), 1);
    let mut m = Monolithic::new(cfg(), 1);
    let (mut q, mut qm) = (Queues::new(1), Queues::new(1));
    q.post(0, [1000; 3]);
    qm.post(0, [1000; 3]);
    t.set_rate(0, 10 * GBPS, 0);
    t.wake(0, 0);
    m.set_rate(0, 10 * GBPS, 0);
    m.wake(0, 0, &mut qm);
    assert_eq!(t.poll(0, &mut q), Decision::Send { flow: 0, len: 1000 });
    assert_eq!(m.poll(0, &mut qm), Decision::Send { flow: 0, len: 1000 });
    t.set_paused(true, 800_000);
    m.set_paused(true, 800_000);
    assert_eq!(t.poll(800_000, &mut q), Decision::Idle { until: None });
    assert_eq!(m.poll(800_000, &mut qm), Decision::Idle { until: None });
    t.set_paused(false, 5_000_000);
    m.set_paused(false, 5_000_000);
    let mut sends = Vec::new();
    drive(&mut t, &mut q, 5_000_000, u64::MAX, |now, _, _| sends.push(now));
    assert_eq!(sends, [5_000_000, 5_800_000]);
    let mut sends = Vec::new();
    let mut now = 5_000_000;
    loop {
        match m.poll(now, &mut qm) {
            Decision::Send { .. } => sends.push(now),
            Decision::Idle { until: Some(u) } => now = u,
            Decision::Idle { until: None } => break,
        }
    }
    assert_eq!(sends, [5_000_000, 5_800_000]);
}

#[test]
fn adaptive_batch_counts_the_packets_starting_within_a_latency() {
    // 25 Gbps, 1024 B, 1 µs: 3.05 packets' worth, so 4 starts (§3.2.1, Fig. 8 rounds to 3).
    assert_eq!(adaptive_batch(25 * GBPS, 1_000_000, 1024, 64), 4);
    assert_eq!(adaptive_batch(25 * GBPS, 1_000_000, 1024, 3), 3);
    assert_eq!(adaptive_batch(16_384_000_000, 1_000_000, 1024, 64), 2);
    assert_eq!(adaptive_batch(100_000, 1_000_000, 1024, 64), 1);
}

#[test]
fn a_flow_gets_at_most_one_batch_per_scheduling_latency() {
    // §3.2.1: with N = 1 a 25 Gbps flow of 1024 B packets sends one packet per 1 µs latency,
    // 8.192 Gbps ("only 8.2 Gbps"); with N = 3, 3 per µs, 24.576 Gbps; with the adaptive
    // N = 4 it reaches its limit. A 100 µs latency with N = 1: 1024 B per 100 µs.
    for (max_batch, latency, want) in [(1, 1_000_000, 8.192e9), (3, 1_000_000, 24.576e9), (64, 1_000_000, 25e9), (1, 100_000_000, 81.92e6)] {
        let c = Config { max_batch, scheduling_latency_ps: latency, ..cfg() };
        let (rate, times) = single_flow_rate(&mut Tassel::new(c, 1), 25 * GBPS, 1024, 61);
        assert!((rate / want - 1.0).abs() < 0.005, "max_batch {max_batch}, latency {latency} ps: {rate} bps, want {want}");
        if max_batch == 1 {
            for w in times.windows(2) {
                assert_eq!(w[1] - w[0], latency, "one packet per latency");
            }
        }
    }
}

#[test]
fn a_flow_posting_fewer_than_a_batch_per_doorbell_still_gets_at_most_n_per_latency() {
    // N = 4 per 10 µs latency at a 10 Gbps limit: at most 4 packets per 10 µs. The queue pair
    // posts 2 at a time, the next 2 as soon as these leave (a
    // short completion loop), so every fetch comes back short of N. Before, a short fetch left
    // the flow unscheduled, its next doorbell fetched again at once, and it ran at its 10 Gbps
    // limit.
    let c = Config { max_batch: 4, scheduling_latency_ps: 10_000_000, ..cfg() };
    let mut t = Tassel::new(c, 1);
    let mut q = Queues::new(1);
    t.set_rate(0, 10 * GBPS, 0);
    q.post(0, [1024, 1024]);
    t.wake(0, 0);
    let (mut now, mut times) = (0u64, Vec::new());
    while times.len() < 200 {
        match t.poll(now, &mut q) {
            Decision::Send { .. } => {
                times.push(now);
                if q.0[0].is_empty() {
                    q.post(0, [1024, 1024]);
                    t.wake(0, now);
                }
            }
            Decision::Idle { until } => now = until.expect("the flow always has packets posted"),
        }
    }
    for w in times.windows(5) {
        assert!(w[4] - w[0] >= 10_000_000, "5 packets within one latency: {w:?}");
    }
    // Each decision fetches the 2 posted (the next 2 are posted only after these leave), and
    // the next decision waits for that batch to arrive: 2 per latency, 1.6384 Gbps.
    let rate = 199.0 * 1024.0 * 8.0 / ((times[199] - times[0]) as f64 * 1e-12);
    assert!((rate / 1.6384e9 - 1.0).abs() < 0.01, "{rate}");
}

#[test]
fn state_per_flow_fits_the_budget() {
    assert!(Tassel::STATE_BYTES_PER_FLOW <= 32, "{} bytes", Tassel::STATE_BYTES_PER_FLOW);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random flows, rates, sizes and wake times: every packet is sent once, in order per flow,
    /// and never before its WF²Q+ start time — in virtual time, a flow woken at V has sent its
    /// j-th packet no earlier than V + Σ_{k<j} L_k / R.
    #[test]
    fn never_early_never_lost(
        flows in proptest::collection::vec((1u64..100, proptest::collection::vec(64u32..4096, 1..30), 0u64..5_000_000), 1..12)
    ) {
        let n = flows.len();
        let mut t = Tassel::new(cfg(), n);
        let mut q = Queues::new(n);
        let mut wakes: Vec<(u64, u32)> = flows.iter().enumerate().map(|(f, fl)| (fl.2, f as u32)).collect();
        wakes.sort();
        let mut woken_at = vec![0u64; n];
        let mut sent: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut earliest = vec![0u64; n];
        for (f, fl) in flows.iter().enumerate() {
            t.set_rate(f as u32, fl.0 * GBPS, 0);
        }
        let mut now = 0;
        for (i, &(at, f)) in wakes.iter().enumerate() {
            let next_wake = wakes.get(i + 1).map_or(u64::MAX, |w| w.0);
            q.post(f, flows[f as usize].1.iter().copied());
            t.wake(f, at.max(now));
            woken_at[f as usize] = t.virtual_now();
            earliest[f as usize] = woken_at[f as usize];
            now = at.max(now);
            loop {
                match t.poll(now, &mut q) {
                    Decision::Send { flow, len } => {
                        let v = t.virtual_now();
                        let fi = flow as usize;
                        prop_assert!(v + 1 >= earliest[fi], "flow {} packet {} at virtual {} before its start {}", flow, sent[fi].len(), v, earliest[fi]);
                        earliest[fi] += tx_ps(len, (flows[fi].0 * 1_000_000) as u32);
                        sent[fi].push(len);
                    }
                    Decision::Idle { until: Some(u) } if u < next_wake => now = u,
                    Decision::Idle { .. } => break,
                }
            }
        }
        for (f, fl) in flows.iter().enumerate() {
            prop_assert_eq!(&sent[f], &fl.1, "flow {} lost or reordered packets", f);
        }
        prop_assert_eq!(t.imminent(), 0);
    }

    /// Rate changes and pauses at random moments never lose, duplicate or reorder a packet.
    #[test]
    fn rate_changes_and_pauses_lose_nothing(
        events in proptest::collection::vec((0u64..2_000_000, 0u32..4, 1u64..100, any::<bool>()), 0..40)
    ) {
        let mut t = Tassel::new(cfg(), 4);
        let mut q = Queues::new(4);
        for f in 0..4 {
            q.post(f, (0..40).map(|k| 64 + 37 * k + f * 11));
            t.wake(f, 0);
        }
        let mut events = events;
        events.sort();
        let mut sent: Vec<Vec<u32>> = vec![Vec::new(); 4];
        let mut now = 0;
        let mut ev = events.into_iter().peekable();
        let mut paused = false;
        loop {
            while let Some(&(at, f, g, pause)) = ev.peek() {
                if at > now { break; }
                ev.next();
                t.set_rate(f, g * GBPS, now);
                if pause != paused { paused = pause; t.set_paused(paused, now); }
            }
            match t.poll(now, &mut q) {
                Decision::Send { flow, len } => sent[flow as usize].push(len),
                Decision::Idle { until } => {
                    let next_ev = ev.peek().map(|e| e.0);
                    match (until, next_ev) {
                        (Some(u), Some(e)) => now = u.min(e).max(now + 1),
                        (Some(u), None) => now = u,
                        (None, Some(e)) => now = e.max(now + 1),
                        (None, None) => {
                            if paused { paused = false; t.set_paused(false, now); } else { break; }
                        }
                    }
                }
            }
        }
        for f in 0..4u32 {
            let want: Vec<u32> = (0..40).map(|k| 64 + 37 * k + f * 11).collect();
            prop_assert_eq!(&sent[f as usize], &want);
        }
    }
}
