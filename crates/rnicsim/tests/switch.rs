//! The switch's seams: a load balancer installed through the library sees the ingress port, the
//! candidates and the queues, keeps its own timer and may deflect a packet off its shortest
//! path; packets may carry one of the k shortest paths and switches follow it.

use rnicsim::fabric::lb::{LbContext, LoadBalancer};
use rnicsim::nic::verbs::{Access, SendWr, Status, Verb};
use rnicsim::scenario::LoadedScenario;
use rnicsim::units::Time;
use rnicsim::wire::packet::Packet;
use rnicsim::world::World;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn build(toml: &str, dir: &Path) -> World {
    let loaded = LoadedScenario::from_str(toml, "test.toml", dir).unwrap_or_else(|e| panic!("{e}"));
    World::build(&loaded).unwrap_or_else(|e| panic!("{e}"))
}

/// The global port of `node` whose link leads to `to`.
fn port_to(w: &World, node: u32, to: u32) -> u32 {
    (0..w.ports.len() as u32).find(|&p| w.ports[p as usize].node == node && w.ports[w.ports[p as usize].peer as usize].node == to).expect("a link")
}

/// One WRITE of `len` bytes from host 0 to host 1; returns its completion status.
fn write(w: &mut World, len: u64, q: Option<(u32, u32)>) -> Status {
    let src = w.register_mr(0, 0, len, Access::LOCAL_WRITE).unwrap();
    let dst = w.register_mr(1, 0, len, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
    let (qa, _) = match q {
        Some(q) => q,
        None => w.connect(0, 1).unwrap(),
    };
    let (h0, h1) = (w.host_nodes()[0], w.host_nodes()[1]);
    assert_eq!((h0, h1), (0, 1));
    w.post_send(qa, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len, lkey: src.lkey, remote_addr: 0, rkey: dst.rkey }).unwrap();
    w.run_until(Time::from_ms(1));
    let cq = w.poll_cq(0).unwrap();
    assert_eq!(cq.len(), 1);
    cq[0].status
}

/// What the test policy saw.
#[derive(Default)]
struct Seen {
    ingress: Vec<u32>,
    candidates: Vec<usize>,
    queued_seen: bool,
    timer_fired: u32,
}

/// Sends every packet for host 1 through the switch port that is neither a candidate nor the
/// ingress (a deflection), and ticks a timer every 10 µs.
struct Deflect {
    seen: Arc<Mutex<Seen>>,
    next: Time,
}

impl LoadBalancer for Deflect {
    fn choose(&mut self, pkt: &Packet, ctx: &LbContext) -> u32 {
        let mut seen = self.seen.lock().unwrap();
        seen.ingress.push(ctx.ingress);
        seen.candidates.push(ctx.candidates.len());
        seen.queued_seen |= ctx.ports().all(|p| ctx.queued(p) < u64::MAX);
        if pkt.dst != 1 {
            return ctx.candidates[0];
        }
        ctx.ports().find(|&p| p != ctx.ingress && ctx.faces_switch(p) && ctx.is_up(p) && !ctx.candidates.contains(&p)).expect("a way round")
    }
    fn sees_single_paths(&self) -> bool {
        true
    }
    fn uses_timer(&self) -> bool {
        true
    }
    fn next_timer(&self) -> Option<Time> {
        Some(self.next)
    }
    fn on_timer(&mut self, now: Time) {
        self.seen.lock().unwrap().timer_fired += 1;
        self.next = now + Time::from_us(10);
    }
}

#[test]
fn a_load_balancer_can_deflect_and_keep_a_timer() {
    // Hosts 0 and 1 on switches 2 and 3, which are joined directly and through switch 4.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("triangle.txt"),
        "5 3 5\n2 3 4\n0 2 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n4 3 100Gbps 1000ns 0\n",
    )
    .unwrap();
    let toml = r#"
        duration = "1ms"
        [topology.file]
        path = "triangle.txt"
        [nic.cc.none]
    "#;
    // Without the policy, the data goes the direct way.
    let mut w = build(toml, dir.path());
    assert_eq!(write(&mut w, 100_000, None), Status::Success);
    let (direct, round) = (port_to(&w, 2, 3), port_to(&w, 2, 4));
    assert!(w.ports[direct as usize].counters.tx_packets >= 100);
    assert_eq!(w.ports[round as usize].counters.tx_packets, 0);

    let mut w = build(toml, dir.path());
    let seen = Arc::new(Mutex::new(Seen::default()));
    w.set_load_balancer(2, Box::new(Deflect { seen: seen.clone(), next: Time::from_us(10) })).unwrap();
    assert!(w.set_load_balancer(0, Box::new(Deflect { seen: seen.clone(), next: Time::ZERO })).is_err(), "node 0 is a host");
    assert_eq!(write(&mut w, 100_000, None), Status::Success);
    let (direct, round) = (port_to(&w, 2, 3), port_to(&w, 2, 4));
    assert_eq!(w.ports[direct as usize].counters.tx_packets, 0, "every data packet deflected");
    assert!(w.ports[round as usize].counters.tx_packets >= 100);
    assert!(w.ports[port_to(&w, 4, 3) as usize].counters.tx_packets >= 100, "switch 4 routes them on to host 1's switch");
    let seen = seen.lock().unwrap();
    let from_host = port_to(&w, 2, 0);
    assert!(seen.ingress.iter().filter(|&&i| i == from_host).count() >= 100, "the ingress port is the one from host 0");
    assert!(seen.candidates.iter().all(|&c| c == 1));
    assert!(seen.queued_seen);
    // The timer ticks every 10 µs over the 1 ms run.
    assert!((99..=100).contains(&seen.timer_fired), "{}", seen.timer_fired);
}

fn leaf_spine_ksp(k: u32) -> String {
    format!(
        r#"
        duration = "1ms"
        [topology.leaf_spine]
        leaves = 2
        spines = 4
        hosts_per_leaf = 2
        [routing]
        k_shortest_paths = {k}
        [nic.cc.none]
        "#
    )
}

#[test]
fn a_queue_pair_on_a_chosen_path_crosses_its_spine() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Hosts 0 and 1 share leaf 4; host 2 is on leaf 5 (spines are nodes 6..=9).
    let mut w = build(&leaf_spine_ksp(4), dir);
    assert!(w.paths_between(0, 1).unwrap().is_empty(), "hosts on one switch need no path");
    let paths = w.paths_between(0, 2).unwrap();
    assert_eq!(paths.len(), 4, "one path through each spine");
    let spines: Vec<u32> = paths.iter().map(|&p| w.ports[w.ports[w.path_ports(p)[0] as usize].peer as usize].node).collect();
    let mut sorted = spines.clone();
    sorted.sort();
    assert_eq!(sorted, vec![6, 7, 8, 9]);
    for &p in &paths {
        assert_eq!(w.path_ports(p).len(), 2, "leaf to spine, spine to leaf");
    }
    // Put a connection on each path in turn (a fresh world each time, so the connection's
    // 5-tuple is the same and ECMP alone would pick one spine) and move data host 0 → host 2.
    for (i, &spine) in spines.iter().enumerate() {
        let mut w = build(&leaf_spine_ksp(4), dir);
        let paths = w.paths_between(0, 2).unwrap();
        let src = w.register_mr(0, 0, 50_000, Access::LOCAL_WRITE).unwrap();
        let dst = w.register_mr(2, 0, 50_000, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
        let (qa, _) = w.connect(0, 2).unwrap();
        w.set_path(qa, paths[i]).unwrap();
        assert!(w.set_path(qa, 1000).is_err());
        w.post_send(qa, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len: 50_000, lkey: src.lkey, remote_addr: 0, rkey: dst.rkey }).unwrap();
        w.run_until(Time::from_ms(1));
        assert_eq!(w.poll_cq(0).unwrap()[0].status, Status::Success);
        for s in 6..=9u32 {
            let carried = w.ports[port_to(&w, s, 5) as usize].counters.tx_packets;
            if s == spine {
                assert!(carried >= 50, "spine {s} carried {carried}");
            } else {
                assert_eq!(carried, 0, "spine {s} is off path {i}");
            }
        }
    }
}

#[test]
fn k_shortest_path_routing_runs_a_jellyfish_workload() {
    // A 16-switch Jellyfish: the same flows complete with per-hop ECMP and with each
    // connection pinned to one of its 8 shortest switch paths, and the paths are used: some
    // connections take longer paths, so packets cross more links per delivery.
    let run = |ksp: &str| {
        let toml = format!(
            r#"
            duration = "2ms"
            seed = 3
            [topology.jellyfish]
            switches = 16
            degree = 4
            hosts_per_switch = 2
            [routing]
            {ksp}
            [nic]
            mtu = 1000
            [nic.cc.dcqcn]
            [[flows]]
            cdf = "../../data/cdf/AliStorage2019.txt"
            load = 0.2
            pattern = "permutation"
            stop = "1ms"
            "#
        );
        let mut w = build(&toml, Path::new(env!("CARGO_MANIFEST_DIR")));
        w.run(|_| true);
        let done = w.apps.flows.records.iter().filter(|f| f.status == Some(Status::Success)).count();
        (done, w.apps.flows.records.len(), w.stats.packet_hops as f64 / w.stats.packets_delivered as f64)
    };
    let (done_ecmp, n_ecmp, hops_ecmp) = run("");
    let (done_ksp, n_ksp, hops_ksp) = run("k_shortest_paths = 8");
    assert_eq!(n_ecmp, n_ksp);
    assert!(done_ecmp * 10 >= n_ecmp * 9 && done_ksp * 10 >= n_ksp * 9, "{done_ecmp}/{n_ecmp}, {done_ksp}/{n_ksp}");
    assert!(hops_ksp > hops_ecmp * 1.02, "hops per delivery: ksp {hops_ksp:.3}, ecmp {hops_ecmp:.3}");
}

/// Sends every packet back out of the port it came in by.
struct Bounce;

impl LoadBalancer for Bounce {
    fn choose(&mut self, _: &Packet, ctx: &LbContext) -> u32 {
        ctx.ingress
    }
    fn sees_single_paths(&self) -> bool {
        true
    }
}

#[test]
fn hosts_do_not_forward() {
    let dir = tempfile::tempdir().unwrap();
    // Host 0 — host 1 — switch 3 — host 2, with host 2 beyond host 1, is refused where host 1
    // gets its second link: a host's NIC has one port.
    std::fs::write(dir.path().join("chain.txt"), "4 1 3\n3\n0 1 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n3 2 100Gbps 1000ns 0\n").unwrap();
    let traffic = |a: u32, b: u32| format!("duration = \"20us\"\n[topology.file]\npath = \"chain.txt\"\n[[traffic]]\npattern = {{ pairs = {{ pairs = [[{a}, {b}]] }} }}\nload = 0.5\n");
    let e = LoadedScenario::from_str(&traffic(0, 2), "t.toml", dir.path()).and_then(|l| World::build(&l).map(|_| ())).err().expect("host 1 has two links");
    assert!(e.file.ends_with("chain.txt") && e.line == Some(4) && e.message.contains("host 1 already has a link"), "{e}");
    // Hosts 0 and 1 back to back, host 2 on switch 3: host 2 is beyond host 1 for host 0.
    std::fs::write(dir.path().join("chain.txt"), "4 1 2\n3\n0 1 100Gbps 1000ns 0\n3 2 100Gbps 1000ns 0\n").unwrap();
    let loaded = LoadedScenario::from_str(&traffic(0, 2), "t.toml", dir.path()).unwrap();
    let e = World::build(&loaded).err().expect("0 → 2 crosses host 1");
    assert_eq!(e.key.as_deref(), Some("traffic[0].pattern.pairs.pairs[0]"), "{e}");
    assert!(e.message.contains("hosts do not forward"), "{e}");
    // Neighbours are fine.
    let mut w = build(&traffic(0, 1), dir.path());
    w.run(|_| true);
    assert!(w.apps.sources.stats[0].rx_packets > 0);
    // A packet that reaches the wrong host anyway (a policy at host 0's switch bounces it back
    // to its sender) is dropped and counted, not delivered.
    std::fs::write(dir.path().join("triangle.txt"), "5 3 5\n2 3 4\n0 2 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n4 3 100Gbps 1000ns 0\n").unwrap();
    let mut w = build(&traffic(0, 1).replace("chain.txt", "triangle.txt"), dir.path());
    w.set_load_balancer(2, Box::new(Bounce)).unwrap();
    w.run(|_| true);
    assert_eq!(w.apps.sources.stats[0].rx_packets, 0);
    // All but the packets still in flight at the end (two 1 µs links and the queues).
    let sent = w.apps.sources.list[0].sent_packets;
    assert!(w.stats.drops_misdelivered <= sent && w.stats.drops_misdelivered + 20 >= sent, "{} of {sent}", w.stats.drops_misdelivered);
}

/// Hosts 1 and 2 each WRITE `long` bytes to host 0 from time 0, which queues data at the
/// switch's port to host 0; host 3 WRITEs `short` bytes to host 0 at 30 µs. Returns when host
/// 3's WRITE completed after it was posted (every WRITE must succeed).
fn short_behind_long(order: &str, long: u64, short: u64) -> Time {
    let toml = format!(
        r#"
        duration = "2ms"
        [topology.star]
        hosts = 4
        [switch]
        queue_order = "{order}"
        [nic]
        mtu = 1000
        rto = "1ms"
        [nic.cc.none]
        "#
    );
    // SRPT sends a long message's later packets first; go-back-N's receiver drops them and
    // NAKs a gap only once, so the long WRITEs finish by retransmission timeouts (1 ms here:
    // with the 67 ms default they would still be waiting at 2 ms).
    let mut w = build(&toml, Path::new(env!("CARGO_MANIFEST_DIR")));
    let post = Time::from_us(30);
    let dst = w.register_mr(0, 0, 4 * long, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
    let mut qps = Vec::new();
    for (h, len, at) in [(1u32, long, Time::ZERO), (2, long, Time::ZERO), (3, short, post)] {
        let src = w.register_mr(h, 0, len, Access::LOCAL_WRITE).unwrap();
        let (q, _) = w.connect(h, 0).unwrap();
        let wr = SendWr { id: h as u64, verb: Verb::Write, local_addr: 0, len, lkey: src.lkey, remote_addr: h as u64 * long, rkey: dst.rkey };
        w.post_send_at(q, wr, at).unwrap();
        qps.push(q);
    }
    w.run_until(Time::from_ms(2));
    let mut short_done = None;
    for h in 1..=3u32 {
        let cq = w.poll_cq(h).unwrap();
        assert_eq!(cq.len(), 1, "host {h}");
        assert_eq!(cq[0].status, Status::Success);
        if h == 3 {
            short_done = Some(cq[0].at - post);
        }
    }
    short_done.unwrap()
}

#[test]
fn srpt_sends_a_short_message_past_the_queue_of_long_ones() {
    let (long, short) = (1_000_000, 8_000);
    // Alone, 8 packets of 1000 B (plus headers) cross two 100 Gbps links: about 0.7 µs of
    // serialization and the links' delays.
    let mut w = build("duration = \"1ms\"\n[topology.star]\nhosts = 4\n[nic]\nmtu = 1000\n[nic.cc.none]\n", Path::new(env!("CARGO_MANIFEST_DIR")));
    let dst = w.register_mr(0, 0, short, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
    let src = w.register_mr(3, 0, short, Access::LOCAL_WRITE).unwrap();
    let (q, _) = w.connect(3, 0).unwrap();
    w.post_send(q, SendWr { id: 3, verb: Verb::Write, local_addr: 0, len: short, lkey: src.lkey, remote_addr: 0, rkey: dst.rkey }).unwrap();
    w.run_until(Time::from_ms(1));
    let alone = w.poll_cq(3).unwrap()[0].at;
    let fifo = short_behind_long("fifo", long, short);
    let srpt = short_behind_long("srpt", long, short);
    // Two line-rate senders into one port build a queue that grows 100 Gbps × 30 µs = 375 KB
    // by the time the short message comes (less what PFC holds back at the senders): in first-in
    // first-out order it waits for all of it.
    assert!(fifo > alone + Time::from_us(5), "fifo {fifo:?} alone {alone:?}");
    // Shortest remaining first: its packets overtake every queued packet of the long messages,
    // so it waits at most for the one long packet already on the wire (1000 B at 100 Gbps,
    // 80 ns).
    assert!(srpt <= alone + Time::from_ns(200), "srpt {srpt:?} alone {alone:?}");
}

/// Hosts 0 and 1 on leaf 4 WRITE to hosts 2 and 3 on leaf 5 over spines 6 and 7, and back;
/// spine 7's link to leaf 5 runs at 25 Gbps, which leaf 4 cannot see on its own links. A
/// flowlet ends after a 2 µs gap (between messages), and receivers order what flowlets
/// reorder. Returns the bytes each spine sent to leaf 5 and the WRITEs' Gbps.
fn asymmetric(lb: &str) -> ([u64; 2], f64) {
    asymmetric_with(lb, "[nic.ordering]").0
}

fn asymmetric_with(lb: &str, nic: &str) -> (([u64; 2], f64), rnicsim::output::Summary) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("topo.txt"),
        "8 4 8\n4 5 6 7\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n3 5 100Gbps 1000ns 0\n4 6 100Gbps 1000ns 0\n4 7 100Gbps 1000ns 0\n6 5 100Gbps 1000ns 0\n7 5 25Gbps 1000ns 0\n",
    )
    .unwrap();
    let toml = format!(
        r#"
        duration = "2ms"
        [topology.file]
        path = "topo.txt"
        [switch]
        load_balancer = "{lb}"
        flowlet_gap = "2us"
        [nic]
        mtu = 1000
        [nic.cc.none]
        {nic}
        [[perftest]]
        test = "write_bw"
        client = 0
        server = 2
        message = "64KB"
        qps = 8
        depth = 1
        [[perftest]]
        test = "write_bw"
        client = 1
        server = 3
        message = "64KB"
        qps = 8
        depth = 1
        [[perftest]]
        test = "write_bw"
        client = 2
        server = 0
        message = "64KB"
        qps = 8
        depth = 1
        [[perftest]]
        test = "write_bw"
        client = 3
        server = 1
        message = "64KB"
        qps = 8
        depth = 1
        "#
    );
    let mut w = build(&toml, dir.path());
    w.run(|_| true);
    let to_leaf5 = |spine| w.ports[port_to(&w, spine, 5) as usize].counters.tx_bytes;
    let gbps = w.apps.perftests.tests.iter().map(|p| p.completed_gbps(w.end)).sum::<f64>();
    let summary = rnicsim::output::Summary::of(&w, "asymmetric");
    (([to_leaf5(6), to_leaf5(7)], gbps), summary)
}


#[test]
fn conga_steers_flowlets_away_from_a_remote_slow_link() {
    let (ecmp, ecmp_gbps) = asymmetric("ecmp");
    let (letflow, letflow_gbps) = asymmetric("flowlet");
    let (conga, conga_gbps) = asymmetric("conga");
    let slow_share = |b: [u64; 2]| b[1] as f64 / (b[0] + b[1]) as f64;
    // Hashing and random flowlets put about half the flows on the slow path, which then runs
    // full (25 Gbps for 2 ms is 6.25 MB) and, through PFC, holds back the rest. CONGA hears
    // from leaf 5 (on leaf 5's own data packets) that paths through spine 7 are congested
    // and sends fewer flowlets there: the fast spine carries most of the bytes.
    assert!(slow_share(ecmp) > 0.35 && slow_share(letflow) > 0.35, "{ecmp:?} {letflow:?}");
    assert!(slow_share(conga) < 0.25, "{conga:?}");
    assert!(conga_gbps > 1.05 * ecmp_gbps && conga_gbps > 1.5 * letflow_gbps, "CONGA {conga_gbps}, ECMP {ecmp_gbps}, LetFlow {letflow_gbps}");
}

#[test]
fn conweave_reroutes_from_a_slow_path_and_reorders_at_the_destination_tor() {
    // No ordering layer at the NICs: ConWeave's destination ToR puts rerouted packets back in
    // order, so go-back-N receivers can take them.
    let ((ecmp, ecmp_gbps), _) = asymmetric_with("ecmp", "");
    let ((cw, cw_gbps), s) = asymmetric_with("conweave", "");
    let lb = s.load_balancing.expect("ConWeave's counters in the summary");
    // Flows whose RTT_REPLY misses its deadline on the slow path move; the rerouted packets
    // that overtake the old path's last one wait at leaf 5 until it comes (mostly) or until
    // its predicted arrival.
    assert!(lb.reroutes > 10 && lb.control_packets > 100, "{lb:?}");
    assert!(lb.held_packets > 100 && lb.released_by_tail > lb.released_by_timeout, "{lb:?}");
    let fast = |b: [u64; 2]| b[0] as f64;
    assert!(fast(cw) > 1.5 * fast(ecmp) && cw_gbps > 1.1 * ecmp_gbps, "ConWeave {cw:?} {cw_gbps}, ECMP {ecmp:?} {ecmp_gbps}");
    // Few packets reach a receiver out of order: go-back-N resends under 3% of what was sent.
    let sent = s.packets_sent as f64;
    assert!((s.rdma.retransmits as f64) < 0.03 * sent, "{} retransmits of {sent}", s.rdma.retransmits);
}

#[test]
fn per_packet_path_choice_spreads_one_connection_over_its_k_paths() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Host 0 (leaf 4) WRITEs 2 MB to host 2 (leaf 5) at 100 Gbps over four 25 Gbps uplinks:
    // each uplink's share of the bytes and the deepest queue among them.
    let uplinks = |choice: &str| {
        let toml = leaf_spine_ksp(4)
            .replace("hosts_per_leaf = 2", "hosts_per_leaf = 2\nuplink_rate = \"25Gbps\"")
            .replace("k_shortest_paths = 4", &format!("k_shortest_paths = 4\npath_choice = \"{choice}\""))
            + "[nic.ordering]\n";
        let mut w = build(&toml, dir);
        let src = w.register_mr(0, 0, 2_000_000, Access::LOCAL_WRITE).unwrap();
        let dst = w.register_mr(2, 0, 2_000_000, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
        let (qa, _) = w.connect(0, 2).unwrap();
        w.post_send(qa, SendWr { id: 1, verb: Verb::Write, local_addr: 0, len: 2_000_000, lkey: src.lkey, remote_addr: 0, rkey: dst.rkey }).unwrap();
        w.run_until(Time::from_ms(1));
        assert_eq!(w.poll_cq(0).unwrap()[0].status, Status::Success);
        let ports: Vec<u32> = (6..=9u32).map(|s| port_to(&w, 4, s)).collect();
        let total: f64 = ports.iter().map(|&p| w.ports[p as usize].counters.tx_bytes as f64).sum();
        let shares: Vec<f64> = ports.iter().map(|&p| w.ports[p as usize].counters.tx_bytes as f64 / total).collect();
        (shares, ports.iter().map(|&p| w.ports[p as usize].counters.max_queue_bytes).max().unwrap())
    };
    // One connection, one path.
    let (conn, _) = uplinks("connection");
    assert_eq!(conn.iter().filter(|&&s| s > 0.99).count(), 1, "{conn:?}");
    // Per packet, at random: about a quarter each (2,000 packets: a share's sd is about 1%).
    let (random, random_q) = uplinks("packet");
    assert!(random.iter().all(|s| (s - 0.25).abs() < 0.05), "{random:?}");
    // Power of two over paths: the less queued first port of two random paths, so the four
    // queues stay closer together and the deepest is shallower than at random.
    let (po2, po2_q) = uplinks("packet_power_of_two");
    assert!(po2.iter().all(|s| (s - 0.25).abs() < 0.02), "{po2:?}");
    assert!(2 * po2_q < random_q, "deepest uplink queue: {po2_q} B with two choices, {random_q} B at random");
    // A choice among carried paths needs them.
    let bad = leaf_spine_ksp(4).replace("k_shortest_paths = 4", "path_choice = \"packet\"");
    let e = LoadedScenario::from_str(&bad, "t.toml", dir).err().expect("refused").to_string();
    assert!(e.contains("routing.path_choice") && e.contains("k_shortest_paths"), "{e}");
}

#[test]
fn each_source_switch_draws_its_packet_paths_from_its_own_stream() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Three leaves (nodes 6, 7, 8; spines 9..=12). Host 0 (leaf 6) WRITEs 1 MB to host 2
    // (leaf 7), its packets sprayed over the four paths; with `other`, host 4 (leaf 8) WRITEs
    // 1 MB to host 3 (leaf 7) at the same time. Leaf 6's uplinks carry host 0's data alone in
    // both runs, so the bytes on each say which paths leaf 6 drew: another switch's traffic
    // must not move them (it did while every switch shared one stream).
    let leaf6_uplinks = |other: bool| {
        let toml = leaf_spine_ksp(4).replace("leaves = 2", "leaves = 3").replace("k_shortest_paths = 4", "k_shortest_paths = 4\npath_choice = \"packet\"") + "[nic.ordering]\n";
        let mut w = build(&toml, dir);
        let mut pairs = vec![(0, 2)];
        if other {
            pairs.push((4, 3));
        }
        for (i, &(a, b)) in pairs.iter().enumerate() {
            let src = w.register_mr(a, 0, 1_000_000, Access::LOCAL_WRITE).unwrap();
            let dst = w.register_mr(b, 0, 1_000_000, Access::LOCAL_WRITE | Access::REMOTE_WRITE).unwrap();
            let (qa, _) = w.connect(a, b).unwrap();
            w.post_send(qa, SendWr { id: i as u64, verb: Verb::Write, local_addr: 0, len: 1_000_000, lkey: src.lkey, remote_addr: 0, rkey: dst.rkey }).unwrap();
        }
        w.run_until(Time::from_ms(1));
        for &(a, _) in &pairs {
            assert_eq!(w.poll_cq(a).unwrap()[0].status, Status::Success);
        }
        (9..=12u32).map(|s| w.ports[port_to(&w, 6, s) as usize].counters.tx_bytes).collect::<Vec<_>>()
    };
    let alone = leaf6_uplinks(false);
    assert!(alone.iter().all(|&b| b > 100_000), "sprayed over all four: {alone:?}");
    assert_eq!(leaf6_uplinks(true), alone);
}

#[test]
fn queue_pairs_on_k_shortest_paths_move_off_a_failed_link() {
    // A ring of four switches, host 0 on switch 2 and host 1 on switch 4: two equal paths,
    // 2-3-4 and 2-5-4. Eight 2 MB flows, four each way, on the two k-shortest paths; the 3-4
    // link fails at 50 µs and routes are recomputed 10 µs later. The queue pairs whose path
    // crossed it take the other path then, and every flow finishes: the packets lost are
    // those of the first 10 µs (and a timeout's worth of resends). Pinned to their paths, they
    // followed them into the dead link for the rest of the run: 31,411 packets lost, 3 flows
    // failed and 2 unfinished at 2 ms.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ring.txt"), "6 4 6\n2 3 4 5\n0 2 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n3 4 100Gbps 1000ns 0\n4 5 100Gbps 1000ns 0\n5 2 100Gbps 1000ns 0\n").unwrap();
    let mut flows = String::from("8\n");
    for i in 0..8 {
        flows += &format!("{} {} 3 100 2000000 0.000001\n", i / 4, 1 - i / 4);
    }
    std::fs::write(dir.path().join("flows.txt"), flows).unwrap();
    // The same with the source switch choosing a path per packet (`path_choice = "packet"`): it
    // stops choosing the dead one once routes are recomputed.
    for choice in ["connection", "packet"] {
        let toml = format!(
            r#"
            duration = "2ms"
            [topology.file]
            path = "ring.txt"
            [routing]
            k_shortest_paths = 2
            path_choice = "{choice}"
            recompute_delay = "10us"
            [nic]
            rto = "100us"
            [nic.cc.dcqcn]
            [[flows]]
            file = "flows.txt"
            [[link_events]]
            at = "50us"
            between = [3, 4]
            state = "down"
            "#
        );
        let mut w = build(&toml, dir.path());
        w.run(|_| true);
        let r = &w.apps.flows.records;
        assert!(r.iter().all(|f| f.status == Some(Status::Success)), "{choice}: {:?}", r.iter().map(|f| f.status).collect::<Vec<_>>());
        let lost: u64 = w.ports.iter().map(|p| p.counters.drops_link_down).sum();
        assert!(lost < 2_000, "{choice}: {lost} packets lost on the dead link");
    }
}

#[test]
fn the_source_switch_steers_carried_paths_off_its_own_failed_port_at_once() {
    // Switches 2 and 3 joined directly and through 4 and through 5; host 0 on 2, host 1 on 3.
    // A link of switch 2 fails at 50 µs and routes learn of it only 50 µs later. With local
    // failover (the default) switch 2 knows its own port is down at once, so only the packets
    // already on the link or queued for it are lost (raw traffic sends a packet every 160 ns:
    // about six on a 1 µs link).
    // Per-packet choice used to keep drawing the dead path (105 of ~312 packets lost), and a
    // connection's path kept leading into it whether local failover was on or off.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("ksp.txt"),
        "6 4 7\n2 3 4 5\n0 2 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n4 3 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n5 3 100Gbps 1000ns 0\n",
    )
    .unwrap();
    // 100 KB WRITEs from host 0 to host 1 starting every 4 µs, each queue pair on one of the
    // three paths: some connection is on each path through the run.
    let mut flows = String::from("48\n");
    for i in 0..48 {
        flows += &format!("0 1 3 100 100000 {:.6}\n", 1e-6 + i as f64 * 4e-6);
    }
    std::fs::write(dir.path().join("flows.txt"), flows).unwrap();
    // Switch 2's ports after the run: (peer node, bytes sent, packets lost to a failed link).
    let switch_2_ports = |choice: &str, link: Option<[u32; 2]>, failover: bool| {
        let traffic = if choice == "connection" {
            "[nic]\nrto = \"100us\"\n[[flows]]\nfile = \"flows.txt\"".to_string()
        } else {
            "[[traffic]]\npattern = { pairs = { pairs = [[0, 1]] } }\nload = 0.5\npacket_size = \"1000B\"".to_string()
        };
        let toml = format!(
            r#"
            duration = "200us"
            [topology.file]
            path = "ksp.txt"
            [routing]
            k_shortest_paths = 3
            path_choice = "{choice}"
            recompute_delay = "50us"
            local_failover = {failover}
            {}
            {traffic}
            "#,
            link.map_or(String::new(), |[a, b]| format!("[[link_events]]\nat = \"50us\"\nbetween = [{a}, {b}]\nstate = \"down\""))
        );
        let mut w = build(&toml, dir.path());
        w.run(|_| true);
        w.ports.iter().filter(|p| p.node == 2).map(|p| (w.ports[p.peer as usize].node, p.counters.tx_bytes, p.counters.drops_link_down)).collect::<Vec<_>>()
    };
    // Lost at switch 2's own ports (a connection's ACKs also come back on its path, and
    // switch 4 has no other route to host 0 until routes are recomputed).
    let lost = |choice: &str, link: [u32; 2], failover: bool| switch_2_ports(choice, Some(link), failover).iter().map(|p| p.2).sum::<u64>();
    // Which connections the NIC serves when is the scheduler's: fail the two-hop path's first
    // link that carries the most when nothing fails.
    let busiest = switch_2_ports("connection", None, false).into_iter().filter(|p| p.0 == 4 || p.0 == 5).max_by_key(|p| p.1).expect("switch 2 has switch links");
    assert!(busiest.1 > 100_000, "{busiest:?}");
    let busiest = busiest.0;
    // The direct link is the routes' only next hop from 2 to 3: a connection's packets that
    // met it down used to fall back on the routes and were lost there until the recompute
    // (601 of a 4 MB WRITE's packets); they now take one of the two-hop paths from switch 2.
    let cases: [(&str, [u32; 2]); 6] = [
        ("packet", [2, 4]),
        ("packet", [2, 3]),
        ("packet_power_of_two", [2, 4]),
        ("packet_power_of_two", [2, 3]),
        ("connection", [2, busiest]),
        ("connection", [2, 3]),
    ];
    for (choice, link) in cases {
        let (on, off) = (lost(choice, link, true), lost(choice, link, false));
        assert!(on <= 16, "{choice} {link:?}: {on} lost with local failover");
        // Without it the dead path keeps its share until routes are recomputed.
        assert!(off > 50, "{choice} {link:?}: {off} lost without local failover");
    }
}

#[test]
fn a_detour_does_not_lead_back_to_the_switch_the_packet_came_from() {
    // Host 0 on switch 2, host 1 on switch 6; paths 2-7-6, 2-4-6 and 2-3-5-6. Links 2-4 and
    // 3-5 fail at 50 µs, and routes learn of it only 300 µs later. A packet on 2-3-5-6 meets
    // the dead 3-5 at switch 3; its detours from there all go back through 2, where a detour
    // on 2-4-6 met the dead 2-4 and went back to 3, and so on until its time to live ran out
    // (79 of 250 packets, counted nowhere). Now switch 3 takes no detour back to 2: the packet
    // follows 3's routes, or is lost at the dead link, and every packet is accounted for.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("loop.txt"),
        "8 6 9\n2 3 4 5 6 7\n0 2 100Gbps 1000ns 0\n1 6 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n2 7 100Gbps 1000ns 0\n7 6 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n4 6 100Gbps 1000ns 0\n3 5 100Gbps 1000ns 0\n5 6 100Gbps 1000ns 0\n",
    )
    .unwrap();
    let toml = r#"
        duration = "400us"
        [topology.file]
        path = "loop.txt"
        [routing]
        k_shortest_paths = 3
        path_choice = "packet"
        recompute_delay = "300us"
        [[traffic]]
        pattern = { pairs = { pairs = [[0, 1]] } }
        load = 0.05
        packet_size = "1000B"
        [[link_events]]
        at = "50us"
        between = [2, 4]
        state = "down"
        [[link_events]]
        at = "50us"
        between = [3, 5]
        state = "down"
    "#;
    let mut w = build(toml, dir.path());
    w.run(|_| true);
    let lost: u64 = w.ports.iter().map(|p| p.counters.drops_link_down).sum();
    let st = &w.stats;
    assert_eq!(st.drops_ttl, 0);
    assert!(st.packets_sent > 200, "{}", st.packets_sent);
    // (A packet or two still on its way at the end.)
    let accounted = st.packets_delivered + lost + st.drops_unroutable;
    assert!(accounted <= st.packets_sent && accounted + 3 >= st.packets_sent, "{} sent, {} delivered, {lost} lost, {} unroutable", st.packets_sent, st.packets_delivered, st.drops_unroutable);
    // Links 2-3 carry no packet to and fro: one crossing for each packet sent that way.
    let crossings: u64 = w.ports.iter().filter(|p| p.node == 3 && w.ports[p.peer as usize].node == 2).map(|p| p.counters.tx_packets).sum();
    assert!(crossings < 20, "{crossings} packets went back from 3 to 2");
}

#[test]
fn a_failure_the_switch_does_not_notice_drains_the_port_at_its_rate_and_no_faster() {
    // Two leaves of four hosts under four spines, uplinks of 50 Gbps; hosts 0-3 send raw
    // 1000 B packets to 4-7 at 90 Gbps each, more than the uplinks carry. Leaf 8's link to
    // spine 10 fails at 50 µs with local failover off (a failure the switch does not notice),
    // and routes learn of it 50 µs later. Meanwhile the port goes on sending into the dead link
    // at its 50 Gbps (312 packets in 50 µs), besides losing what was queued and on the wire at
    // the failure. Spraying, which reads no queue, loses that much; the balancers that pick
    // the shortest queue lose no more. The port used to refuse packets on admission, so its
    // queue stayed empty and they sent it most of the leaf's traffic: DRILL lost 2,499 packets
    // there against spraying's 822, power of two 1,385.
    let lost = |lb: &str| {
        let toml = format!(
            r#"
            duration = "150us"
            [topology.leaf_spine]
            leaves = 2
            spines = 4
            hosts_per_leaf = 4
            uplink_rate = "50Gbps"
            [switch]
            load_balancer = "{lb}"
            [switch.pfc]
            enabled = false
            [routing]
            local_failover = false
            recompute_delay = "50us"
            [[traffic]]
            pattern = {{ pairs = {{ pairs = [[0, 4], [1, 5], [2, 6], [3, 7]] }} }}
            load = 0.9
            packet_size = "1000B"
            [[link_events]]
            at = "50us"
            between = [8, 10]
            state = "down"
            "#
        );
        let mut w = build(&toml, Path::new("."));
        w.run(|_| true);
        w.ports[port_to(&w, 8, 10) as usize].counters.drops_link_down
    };
    let spray = lost("spray");
    assert!(spray > 312, "{spray}: the port went on sending");
    for lb in ["drill", "power_of_two"] {
        let l = lost(lb);
        assert!(l * 10 <= spray * 11, "{lb}: {l} lost into the dead link, spraying {spray}");
    }
}

#[test]
fn per_packet_power_of_two_compares_two_different_paths() {
    // Two paths from switch 2 to switch 3: through 4 at 100 Gbps and through 5 at 25 Gbps;
    // host 0 sends to host 1 at 90 Gbps, each packet on the less loaded of two paths. Drawing
    // two different paths, every packet compares both, so the slow path's queue never holds
    // more than a packet or two. Drawing the same path twice half the time (as it did) placed
    // those packets at random and the slow queue reached 11 KB.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("asym.txt"),
        "6 4 6\n2 3 4 5\n0 2 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n4 3 100Gbps 1000ns 0\n2 5 25Gbps 1000ns 0\n5 3 25Gbps 1000ns 0\n",
    )
    .unwrap();
    let toml = r#"
        duration = "200us"
        [topology.file]
        path = "asym.txt"
        [switch.pfc]
        enabled = false
        [routing]
        k_shortest_paths = 2
        path_choice = "packet_power_of_two"
        [[traffic]]
        pattern = { pairs = { pairs = [[0, 1]] } }
        load = 0.9
        packet_size = "1000B"
        "#;
    let mut w = build(toml, dir.path());
    w.run(|_| true);
    let slow = port_to(&w, 2, 5);
    let fast = port_to(&w, 2, 4);
    let (qs, ns, nf) = (w.ports[slow as usize].counters.max_queue_bytes, w.ports[slow as usize].counters.tx_packets, w.ports[fast as usize].counters.tx_packets);
    assert!(ns > 100 && nf > ns, "both paths used, the fast one more: {nf} / {ns}");
    assert!(qs <= 2 * 1100, "slow path queue {qs} B");
}

#[test]
fn a_static_xoff_that_many_ingresses_stay_under_drops_nothing_lossless() {
    // A 32-to-1 incast of raw traffic at line rate into a 33-port switch of 2 MB, PFC with a
    // static XOFF of 60 KB. 32 ingresses under 60 KB each hold up to 1.92 MB, and the headroom
    // for what is in flight after a PAUSE is 28 KB a port (924 KB in all): the shared pool
    // fills with no ingress at XOFF. Each ingress now pauses once the pool is spent and its
    // in-flight bytes land in the headroom; they took the whole buffer before, and 30,935
    // packets of the lossless class were dropped (20 KB, under the pool, dropped none).
    for xoff in ["60KB", "20KB"] {
        let w = {
            let mut w = build(
                &format!(
                    "duration = \"500us\"\n[topology.star]\nhosts = 33\n[links]\ndelay = \"1us\"\n[switch]\nbuffer = \"2MB\"\n[switch.pfc]\nxoff = \"{xoff}\"\n\
                     [[traffic]]\npattern = {{ incast = {{ receiver = 32 }} }}\nload = 1.0\n"
                ),
                Path::new("."),
            );
            w.run(|_| true);
            w
        };
        let s = rnicsim::output::Summary::of(&w, "xoff");
        assert_eq!(s.drops_buffer, 0, "xoff {xoff}");
        assert!(s.pfc_pauses_sent > 0, "xoff {xoff}");
    }
}
