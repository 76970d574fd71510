//! The NIC's connection-state cache (`[nic.state_cache]`, StaR §II-B): throughput against the
//! analytic miss bound, the knee at the cache's capacity, the receive buffer's drop and pause
//! modes, and the shipped Fig. 1 reproduction.

use rnicsim::output::Summary;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::World;
use std::path::Path;

mod common;

fn run(toml: &str) -> Summary {
    common::run_summary(&LoadedScenario::from_str(toml, "state_cache.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "state_cache")
}

/// Host 0 READs 32 bytes from host 1 over `qps` connections, one READ outstanding on each,
/// through NICs holding `entries` connections (256 B each) with `slots` fetch slots of 1 µs.
fn reads(qps: u32, entries: u64, slots: u32) -> Summary {
    run(&format!(
        r#"
        duration = "300us"
        [topology.star]
        hosts = 2
        [links]
        rate = "100Gbps"
        delay = "100ns"
        [nic.state_cache]
        capacity = "{}B"
        fetch_slots = {slots}
        miss_latency = "1us"
        [[perftest]]
        test = "read_bw"
        client = 0
        server = 1
        message = "32B"
        qps = {qps}
        depth = 1
        warmup = "100us"
    "#,
        entries * 256
    ))
}

fn mops(s: &Summary) -> f64 {
    s.perftest[0].mops
}

#[test]
fn beyond_the_cache_each_read_waits_for_a_fetch_slot() {
    // 256 connections visited in turn through a 64-entry LRU cache: every READ request misses
    // at the reader (its response, a round trip later, finds the state just fetched) and every
    // request misses at the responder, so each NIC completes one READ per fetch: at most
    // `slots` per microsecond, and exactly that with fetches always waiting.
    for slots in [2u32, 4] {
        let s = reads(256, 64, slots);
        let want = slots as f64; // Mops: slots / 1 µs
        assert!((mops(&s) - want).abs() < 0.03 * want, "{slots} slots: {} Mops, want {want}", mops(&s));
        let c = s.state_cache.as_ref().expect("state_cache in the summary");
        assert_eq!(c.entries, 64);
        let reader = c.per_nic.iter().find(|n| n.name == "host 0").unwrap();
        assert!(reader.counters.stalls > 0 && reader.counters.evictions > 0);
        assert!((reader.counters.hit_rate - 0.5).abs() < 0.02, "requests miss, responses hit: {}", reader.counters.hit_rate);
    }
}

#[test]
fn within_the_cache_reads_run_at_their_round_trip() {
    let s = reads(48, 64, 2);
    let c = s.state_cache.as_ref().unwrap();
    assert_eq!(c.total.misses, 96, "each connection's state is fetched once per NIC");
    assert!(mops(&s) > 5.0 * 2.0, "{} Mops: latency-bound, far above the miss bound", mops(&s));
}

#[test]
fn the_knee_follows_the_capacity() {
    // The same 96 connections: a 64-entry cache is miss-bound, a 128-entry one is not.
    let small = reads(96, 64, 2);
    let large = reads(96, 128, 2);
    assert!(mops(&small) < 2.1, "{}", mops(&small));
    assert!(mops(&large) > 4.0 * mops(&small), "{} vs {}", mops(&large), mops(&small));
    assert!(large.state_cache.as_ref().unwrap().total.hit_rate > 0.95);
}

/// Hosts 0, 1 and 2 WRITE 4 KB messages to host 3, each over 86 connections; every NIC holds
/// 64 and fetches one at a time, so each sender manages one packet per microsecond (a miss per
/// packet) and host 3 receives three times what it can look up: packets pile up in its 64 KiB
/// buffer.
fn writes(when_full: &str) -> Summary {
    writes_with(when_full, "", "")
}

/// [`writes`] with more `[nic]` keys and more lines at the scenario's end.
fn writes_with(when_full: &str, nic: &str, more: &str) -> Summary {
    let tests: String = (0..3).map(|c| format!("[[perftest]]\ntest = \"write_bw\"\nclient = {c}\nserver = 3\nmessage = \"4KiB\"\nqps = 86\ndepth = 1\n")).collect();
    run(&format!(
        r#"
        duration = "400us"
        [topology.star]
        hosts = 4
        [links]
        rate = "100Gbps"
        delay = "100ns"
        [switch.pfc]
        enabled = true
        [nic]
        mtu = 4096
        {nic}
        [nic.state_cache]
        capacity = "16KiB"
        fetch_slots = 1
        rx_buffer = "64KiB"
        when_full = "{when_full}"
        {tests}
        {more}
    "#
    ))
}

#[test]
fn a_full_receive_buffer_drops_or_pauses() {
    let drop = writes("drop");
    let dc = &drop.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 3").unwrap().counters;
    assert!(dc.rx_drops > 0, "drops {}", dc.rx_drops);
    assert!(dc.rx_peak_bytes <= 64 * 1024);
    assert_eq!(dc.pauses_sent, 0);

    let pause = writes("pause");
    let pc = &pause.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 3").unwrap().counters;
    assert_eq!(pc.rx_drops, 0, "PAUSE keeps the buffer from overflowing");
    assert!(pc.pauses_sent > 0 && pause.pfc_frames_received > 0);
    assert_eq!(pause.rdma.retransmits, 0);
    assert!(pc.rx_peak_bytes > 32 * 1024, "the buffer reached its high mark: {}", pc.rx_peak_bytes);
    // Lossless, the receiver is bound by one fetch per microsecond: 4 KB per µs ≈ 32.8 Gbps
    // (in drop mode, connections whose last packet was dropped wait for their timeout, and
    // the rest fit the cache better).
    let total: f64 = pause.perftest.iter().map(|p| p.gbps).sum();
    assert!(total > 30.0 && total < 33.5, "{total}");
    // Its receive pipeline (a responder looks nothing else up) makes at most one fetch a
    // microsecond and stalls at most the whole run: the counters are those of the lookups made
    // by the end. (Arrivals during a stall were counted when they came, with their lookups
    // still ahead: 1,011 misses and 1,005 us of stall in 1 ms.)
    assert!(pc.misses <= 401 && pc.misses > 380, "{} fetches in 400 us", pc.misses);
    assert!(pc.stall_us <= 400.0, "{} us stalled in 400 us", pc.stall_us);
}

#[test]
fn a_link_that_flaps_leaves_no_pause_asserted_that_the_switch_forgot() {
    // The receiver's link fails for 2 µs while its buffer holds the switch paused. The switch
    // forgets the PAUSE it obeyed; the NIC must forget it sent one and assert it afresh on
    // the link back up (it counted the pause as held and sent none until its refresh, ~168 µs
    // later, while the switch sent freely into the full buffer: 301 drops).
    let flap = "[routing]\nrecompute_delay = \"1us\"\n\
        [[link_events]]\nat = \"200us\"\nbetween = [3, 4]\nstate = \"down\"\n\
        [[link_events]]\nat = \"202us\"\nbetween = [3, 4]\nstate = \"up\"\n";
    let s = writes_with("pause", "rto = \"30us\"", flap);
    let c = &s.state_cache.as_ref().unwrap().per_nic.iter().find(|n| n.name == "host 3").unwrap().counters;
    assert!(s.rdma.retransmits > 0, "the flap lost packets in flight");
    assert_eq!(c.rx_drops, 0, "pause mode drops nothing");
    assert!(c.rx_peak_bytes <= 64 * 1024);
}

#[test]
fn bad_keys_name_the_key() {
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[nic.state_cache]\ncapacity = \"1KiB\"\nfetch_slots = 0\n";
    let e = LoadedScenario::from_str(toml, "bad.toml", Path::new(".")).err().expect("refused").to_string();
    assert!(e.contains("nic.state_cache.fetch_slots") && e.contains("bad.toml"), "{e}");
    // So many fetch slots that keeping them would take 34 GB per NIC (the fuzz test found it).
    let e = LoadedScenario::from_str(&toml.replace("fetch_slots = 0", "fetch_slots = 4294967295"), "bad.toml", Path::new(".")).err().expect("refused").to_string();
    assert!(e.contains("nic.state_cache.fetch_slots") && e.contains("at most 65536"), "{e}");
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[nic.state_cache]\ncapacity = \"1KiB\"\nreplacement = \"mru\"\n";
    let e = LoadedScenario::from_str(toml, "bad.toml", Path::new(".")).err().expect("refused").to_string();
    assert!(e.contains("replacement"), "{e}");
}

#[test]
fn shipped_fig1_peaks_at_the_capacity_and_falls_past_it() {
    for name in ["fig1_lru.toml", "fig1_random.toml"] {
        let s = common::run_shipped(&format!("star/{name}"));
        assert_eq!(s.paper.len(), 3);
        for c in &s.paper {
            assert!(c.within, "{name}: {} = {:?}", c.source, c.ours);
        }
        let curve = &s.figures[0].series[0];
        assert_eq!(curve.x.len(), 8);
        let peak = curve.y.iter().cloned().fold(0.0, f64::max);
        assert_eq!(curve.x[curve.y.iter().position(|&y| y == peak).unwrap()], 450.0, "{name}: {:?}", curve.y);
    }
}

#[test]
fn the_queue_sampler_records_each_cache_over_time() {
    let toml = r#"
        duration = "200us"
        [topology.star]
        hosts = 2
        [links]
        rate = "100Gbps"
        [nic.state_cache]
        capacity = "16KiB"
        fetch_slots = 2
        [outputs]
        queue_interval = "50us"
        [[perftest]]
        test = "read_bw"
        client = 0
        server = 1
        message = "32B"
        qps = 128
        depth = 1
    "#;
    let loaded = LoadedScenario::from_str(toml, "ts.toml", Path::new(".")).unwrap();
    let mut w = World::build(&loaded).unwrap();
    w.run(|_| true);
    let log = &w.record.state_cache;
    // Samples at 0, 50, 100, 150 and 200 µs, one row per NIC.
    assert_eq!(log.time.len(), 10, "{:?}", log.time);
    for node in [0, 1] {
        let rows: Vec<usize> = (0..log.time.len()).filter(|&i| log.node[i] == node).collect();
        assert!(rows.windows(2).all(|p| log.lookups[p[0]] <= log.lookups[p[1]] && log.misses[p[0]] <= log.misses[p[1]]));
        let last = *rows.last().unwrap();
        assert!(log.misses[last] > 0 && log.hits[last] + log.misses[last] <= log.lookups[last]);
    }
}

#[test]
fn a_packet_arriving_as_its_connections_state_lands_does_not_overtake_the_one_that_waited() {
    // One WRITE stream at 100 Gbps of 1024 B packets (1,086 B on the wire: 86.88 ns apart)
    // into a NIC caching one connection: the first packet misses, and when the fetch takes
    // exactly one packet time the second arrives in the instant the state lands. It must be
    // delivered after the first (before, it went first: a sequence error, go-back-N, 86
    // packets resent with nothing lost).
    let at = |latency: &str| {
        run(&format!(
            "duration = \"50us\"\n[topology.back_to_back]\n[links]\nrate = \"100Gbps\"\ndelay = \"1us\"\n[nic]\nmtu = 1024\n[nic.cc.none]\n[nic.state_cache]\ncapacity = \"256B\"\nmiss_latency = \"{latency}\"\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\ndepth = 4\n"
        ))
    };
    let (exact, later) = (at("86880ps"), at("86881ps"));
    assert_eq!((exact.rdma.retransmits, later.rdma.retransmits), (0, 0));
    assert!((exact.perftest[0].gbps - later.perftest[0].gbps).abs() < 0.1, "{} {}", exact.perftest[0].gbps, later.perftest[0].gbps);
}
