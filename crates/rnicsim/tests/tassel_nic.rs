//! Tassel and SE-PIEO as the NIC's QP scheduler, checked through the shipped Fig. 12/14/17/18
//! reproduction scenarios: every published value they list must come out within its tolerance,
//! except the one our RoCE headers make impossible (checked separately below).

use rnicsim::output::Summary;

mod common;

fn run(name: &str) -> Summary {
    common::run_shipped(&format!("tassel/{name}"))
}

fn assert_within(s: &Summary, except: &[&str]) {
    assert!(!s.paper.is_empty());
    for c in &s.paper {
        if except.contains(&c.metric.as_str()) {
            continue;
        }
        assert!(c.within, "{}: {} paper {} ours {:?} (±{})", s.name, c.metric, c.paper, c.ours, c.tolerance);
    }
}

fn metric(s: &Summary, test: &str, f: fn(&rnicsim::output::summary::PerftestSummary) -> f64) -> f64 {
    f(s.perftest.iter().find(|p| p.name == test).unwrap_or_else(|| panic!("no perftest {test}")))
}

#[test]
fn fig17_single_flow_limits_from_100kbps_to_100gbps_within_1_percent() {
    assert_within(&run("fig17_low.toml"), &[]);
    assert_within(&run("fig17_high.toml"), &[]);
}

#[test]
fn fig18_groups_get_their_limits_and_phi_2_halves_them() {
    let s = run("fig18.toml");
    assert_within(&s, &[]);
    // Φ = 2: every group of (b) gets half its limit, so b3 / a3 is (3·200/21/2) / (3·4) exactly as configured.
    let ratio = metric(&s, "b6", |p| p.wire_gbps) / metric(&s, "b1", |p| p.wire_gbps);
    assert!((ratio - 6.0).abs() < 0.1, "shares stay proportional to the limits: {ratio}");
}

#[test]
fn fig14_commodity_collapses_beyond_1k_rate_limited_qps_and_tassel_does_not() {
    let c = run("fig14_commodity.toml");
    assert_within(&c, &[]);
    let g = |s: &Summary, n: &str| metric(s, n, |p| p.wire_gbps);
    assert!(g(&c, "1024 QPs") > 99.0, "within the context cache: line rate");
    assert!(g(&c, "4096 QPs") < 90.0 && g(&c, "16384 QPs") < g(&c, "4096 QPs"), "falls with more QPs");
    let t = run("fig14_tassel.toml");
    assert_within(&t, &[]);
}

#[test]
fn fig12_tassel_saturates_the_wire_and_se_pieo_is_bound_by_its_clock() {
    let se = run("fig12_se_pieo.toml");
    assert_within(&se, &[]);
    let t = run("fig12_tassel.toml");
    // 64 B messages are 142 B on the wire with RoCEv2 headers: 100 Gbps carries at most 88 Mpps,
    // short of the paper's 125 Mpps (its prototype counts bare packets). Tassel reaches that bound.
    assert_within(&t, &["perftest/64B/mpps"]);
    let wire_max = 100e9 / (142.0 * 8.0) / 1e6;
    assert!(metric(&t, "64B", |p| p.mpps) > 0.99 * wire_max);
    assert!(metric(&t, "64B", |p| p.mpps) > 2.5 * metric(&se, "64B", |p| p.mpps), "Tassel far above SE-PIEO");
}

#[test]
fn pfc_pauses_freeze_the_limits_and_keep_their_proportion() {
    // Two queue pairs limited to 20 and 40 Gbps (1000 B messages, 1,078 B on the wire) share a
    // 30 Gbps bottleneck with PFC. While the port is paused the scheduler's timer stands still
    // (§3.5), and unpaused both run at their limits, so the bottleneck is split 1:2: 10 and
    // 20 Gbps. A packet due as a pause began used to be handed out and parked, its slot lost:
    // one slot per pause, about 170 of them here, which left the 20 Gbps queue pair at 9.49.
    for sched in ["tassel", "se_pieo"] {
        let toml = format!(
            "duration = \"2ms\"\n[topology.dumbbell]\nleft = 1\nright = 1\nbottleneck_rate = \"30Gbps\"\n[links]\ndelay = \"100ns\"\n\
             [switch.pfc]\nxoff = \"40KB\"\nxon_offset = \"20KB\"\n[nic]\npriority = 3\n[nic.cc.none]\n[nic.scheduler.{sched}]\n\
             [[perftest]]\nname = \"A\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1000B\"\nrate_limit = \"20Gbps\"\nwarmup = \"500us\"\n\
             [[perftest]]\nname = \"B\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1000B\"\nrate_limit = \"40Gbps\"\nwarmup = \"500us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "pfc.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let s = common::run_summary(&loaded, "pfc");
        let (a, b) = (metric(&s, "A", |p| p.wire_gbps), metric(&s, "B", |p| p.wire_gbps));
        assert!(s.pfc_pauses_sent > 50, "{sched}: the bottleneck pauses the sender ({})", s.pfc_pauses_sent);
        assert!((a - 10.0).abs() < 0.1 && (b - 20.0).abs() < 0.1, "{sched}: {a} and {b} Gbps");
    }
}

#[test]
fn the_nics_window_caps_what_a_self_timing_scheduler_sends() {
    // `nic.cc_window` of 4 KB (4 packets of 1000 B) on one back-to-back queue pair: each window
    // waits for its ACKs, about 2.1 µs, so about 15 Gbps whatever the scheduler. Tassel and
    // SE-PIEO were shown only the congestion-control window and sent at line rate (94 Gbps).
    let gbps = |sched: &str| {
        let toml = format!(
            "duration = \"1ms\"\n[topology.back_to_back]\n[nic]\ncc_window = {{ bytes = \"4KB\", with_rate = false }}\n[nic.cc.none]\n[nic.scheduler.{sched}]\n\
             [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\ndepth = 16\nwarmup = \"200us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "window.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        metric(&common::run_summary(&loaded, "window"), "x", |p| p.gbps)
    };
    let commodity = gbps("commodity");
    assert!(commodity > 10.0 && commodity < 25.0, "commodity {commodity}");
    for sched in ["tassel", "se_pieo"] {
        let g = gbps(sched);
        assert!((g / commodity - 1.0).abs() < 0.02, "{sched} {g} Gbps, commodity {commodity}");
    }
}

#[test]
fn a_limit_counts_the_ordering_layers_header() {
    // 64 B WRITEs limited to 10 Gbps with Eunomia's 5 B header on every packet (147 B on the
    // wire): the limit holds on the wire. Shown lengths without the header, Tassel sent
    // 147/142 of it, 10.35 Gbps. (Batches are sized for 147 B packets: with the default
    // 1024 B, 2 packets per µs would hold it to 2.35 Gbps.)
    let toml = "duration = \"1ms\"\n[topology.back_to_back]\n[nic.cc.none]\n[nic.scheduler.tassel]\ntypical_packet = \"147B\"\n[nic.ordering]\nlayer = \"eunomia\"\n\
                [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64B\"\nrate_limit = \"10Gbps\"\nwarmup = \"200us\"\n";
    let loaded = rnicsim::scenario::LoadedScenario::from_str(toml, "ordering.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let wire = metric(&common::run_summary(&loaded, "ordering"), "x", |p| p.wire_gbps);
    assert!((wire / 10.0 - 1.0).abs() < 0.002, "{wire} Gbps on the wire");
}

#[test]
fn a_queue_pair_gets_one_batch_per_scheduling_latency() {
    // §3.2.1: a flow is scheduled again only once its last batch has arrived. One packet per
    // batch and a 100 µs latency: one 1024 B WRITE (1102 B on the wire) per 100 µs, 88.16 Mbps,
    // whatever the line rate. With the default batching the same queue pair fills the link.
    let gbps = |sched: &str| {
        let toml = format!(
            "duration = \"1ms\"\n[topology.back_to_back]\n[nic]\nmtu = 1024\n[nic.cc.none]\n[nic.scheduler.tassel]\n{sched}\n\
             [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1024B\"\nwarmup = \"200us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "batch.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        metric(&common::run_summary(&loaded, "batch"), "x", |p| p.wire_gbps)
    };
    let one = gbps("max_batch = 1\nlatency = \"100us\"");
    assert!((one / 0.08816 - 1.0).abs() < 0.01, "{one} Gbps");
    let default = gbps("");
    assert!(default > 99.0, "{default} Gbps");
}

#[test]
fn a_shallow_queue_pair_keeps_the_batch_cap() {
    // `max_batch = 4` and a 10 µs latency: at most 4 packets per 10 µs, 4 × 1078 B = 3.4496
    // Gbps on the wire, whatever the depth. A depth-4 queue pair has at most 4 posted, so a
    // fetch after its completions came back short; it was then fetched for again at its next
    // doorbell, and it sent 9.61 Gbps (a completion loop of 3.6 µs) where depth 8 kept 3.45.
    let gbps = |depth: u32| {
        let toml = format!(
            "duration = \"2ms\"\n[topology.back_to_back]\n[nic.cc.none]\n[nic.scheduler.tassel]\nmax_batch = 4\nlatency = \"10us\"\n\
             [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1000B\"\ndepth = {depth}\nrate_limit = \"10Gbps\"\nwarmup = \"500us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "cap.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        metric(&common::run_summary(&loaded, "cap"), "x", |p| p.wire_gbps)
    };
    for depth in [4, 8] {
        let g = gbps(depth);
        assert!((g / 3.4496 - 1.0).abs() < 0.01, "depth {depth}: {g} Gbps");
    }
    // Depth 2: each batch is the 2 posted, one batch per latency.
    let g = gbps(2);
    assert!((g / 1.7248 - 1.0).abs() < 0.01, "depth 2: {g} Gbps");
}

#[test]
fn a_self_timing_scheduler_is_not_shown_a_held_last_write_packet() {
    // Eunomia's hold_last_write keeps a multi-packet WRITE's last packet until the rest are
    // acknowledged. Listed to Tassel anyway, it was picked and could not leave: 612 wasted
    // picks here (1351 and 90.32 against 91.85 Gbps behind a switch).
    let run = |sched: &str| {
        let toml = format!(
            "duration = \"1.2ms\"\n[topology.back_to_back]\n[links]\ndelay = \"100ns\"\n[nic.cc.none]\n[nic.scheduler.{sched}]\n[nic.ordering]\nlayer = \"eunomia\"\n\
             [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\ndepth = 16\nwarmup = \"200us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "hold.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let s = common::run_summary(&loaded, "hold");
        (metric(&s, "x", |p| p.wire_gbps), s.rdma.scheduler_wasted_picks)
    };
    let (commodity, _) = run("commodity");
    let (tassel, wasted) = run("tassel");
    assert_eq!(wasted, 0);
    assert!((tassel / commodity - 1.0).abs() < 0.003, "tassel {tassel}, commodity {commodity}");
}

#[test]
fn scheduler_state_counts_the_queue_pairs_of_its_own_nic() {
    // Host 0 holds 100 queue pairs, host 2 one. Queue pair ids are the whole simulation's, and
    // the scheduler's table was sized by the largest id it saw: the client's 100 were counted
    // with the server's between them (6,400 B, not 3,200), and host 2's one queue pair was
    // charged for all 202. SE-PIEO reported no state and no fetches at all.
    let run = |sched: &str| {
        let toml = format!(
            "duration = \"200us\"\n[topology.star]\nhosts = 4\n[nic.cc.none]\n[nic.scheduler.{sched}]\n\
             [[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1000B\"\nqps = 100\ndepth = 1\nrate_limit = \"50Mbps\"\n\
             [[perftest]]\ntest = \"write_bw\"\nclient = 2\nserver = 3\nmessage = \"1000B\"\nqps = 1\ndepth = 1\nrate_limit = \"50Mbps\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "state.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        common::run_summary(&loaded, "state").rdma
    };
    let t = run("tassel");
    assert_eq!(t.scheduler_state_bytes, 100 * tassel::Tassel::STATE_BYTES_PER_FLOW as u64);
    let m = run("se_pieo");
    assert_eq!(m.scheduler_state_bytes, 100 * tassel::Monolithic::STATE_BYTES_PER_FLOW as u64);
    // SE-PIEO fetches one head per packet sent (and one per wake of an idle flow).
    assert!(m.scheduler_fetches > 0 && m.scheduler_fetches >= t.scheduler_fetches / 2, "{} vs {}", m.scheduler_fetches, t.scheduler_fetches);
}

#[test]
fn a_destroyed_queue_pairs_scheduler_state_goes_to_the_next_one() {
    // A flow workload opens a connection per flow: 25,775 flows in 5 ms on 4 hosts, at most
    // 108 queue pairs on a NIC at once. Each new queue pair number took a new slot for good:
    // 10,711 slots (342,752 B) under Tassel. Now a destroyed queue pair's slot is reused once
    // the scheduler lets go of it, so the table is the NIC's most queue pairs at once.
    let run = |sched: &str| {
        let cdf = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/cdf/GoogleRPC2008.txt");
        let toml = format!("duration = \"5ms\"\n[topology.star]\nhosts = 4\n[links]\ndelay = \"100ns\"\n[nic.cc.none]\n[nic.scheduler.{sched}]\n[[flows]]\ncdf = \"{cdf}\"\nload = 0.3\n");
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "churn.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        common::run_summary(&loaded, "churn").rdma
    };
    for (sched, per) in [("tassel", tassel::Tassel::STATE_BYTES_PER_FLOW), ("se_pieo", tassel::Monolithic::STATE_BYTES_PER_FLOW)] {
        let r = run(sched);
        assert!(r.flows_completed > 10 * r.peak_qps_per_nic as u64, "{sched}: {} flows", r.flows_completed);
        assert!(r.scheduler_state_bytes <= r.peak_qps_per_nic as u64 * per as u64, "{sched}: {} B for at most {} queue pairs", r.scheduler_state_bytes, r.peak_qps_per_nic);
    }
}

#[test]
fn the_load_time_warnings_see_reads_short_last_packets_limits_above_the_link_and_se_pieo_sizes() {
    // Found by exploring: the batch warning skipped READ tests and took every packet as full,
    // a limit above the link was silently the link, and SE-PIEO's `flows` went unchecked.
    // `sched`: the scheduler table's name, then any keys of it.
    let warnings = |sched: &str, test: &str, message: &str, qps: u32, limit: &str| {
        let toml = format!(
            "duration = \"300us\"\n[topology.back_to_back]\n[nic.cc.none]\n[nic.scheduler.{sched}\n\
             [[perftest]]\nname = \"x\"\ntest = \"{test}\"\nclient = 0\nserver = 1\nmessage = \"{message}\"\nqps = {qps}\nrate_limit = \"{limit}\"\nwarmup = \"100us\"\n"
        );
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml, "w.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let w = loaded.warnings.clone();
        let run = move || metric(&common::run_summary(&loaded, "w"), "x", |p| p.wire_gbps);
        (w, run)
    };
    // 256 B READs at 25 Gbps: the responses are batched as WRITEs are (4 per µs of 322 B).
    let (w, _) = warnings("tassel]", "read_bw", "256B", 1, "25Gbps");
    assert!(w.iter().any(|m| m.contains("perftest[0].message") && m.contains("at most 10.304Gbps")), "{w:?}");
    // 1100 B messages at 99 Gbps: 1078 B and 162 B packets, 620 B on average, 13 per µs:
    // 64.48 Gbps, as the run gives.
    let (w, run) = warnings("tassel]", "write_bw", "1100B", 1, "99Gbps");
    assert!(w.iter().any(|m| m.contains("average 620 B") && m.contains("at most 64.48Gbps")), "{w:?}");
    let got = run();
    assert!((got / 64.48 - 1.0).abs() < 0.01, "{got} Gbps");
    // A limit above the link runs as the link.
    let (w, _) = warnings("commodity]", "write_bw", "64KiB", 1, "300Gbps");
    assert!(w.iter().any(|m| m.contains("perftest[0].rate_limit") && m.contains("above the 100Gbps link")), "{w:?}");
    // SE-PIEO built for 1,024 flows under 4,096 queue pairs.
    let (w, _) = warnings("se_pieo]\nflows = 1024", "write_bw", "64KiB", 4096, "10Mbps");
    assert!(w.iter().any(|m| m.contains("se_pieo.flows") && m.contains("4096 queue pairs")), "{w:?}");
    // Two ping-pongs, 0 to 1 and 1 to 0: both ends write, so each host sends on two queue
    // pairs, beyond an SE-PIEO built for one (the client alone was counted).
    let toml = "duration = \"100us\"\n[topology.back_to_back]\n[nic.cc.none]\n[nic.scheduler.se_pieo]\nflows = 1\n[[perftest]]\nname = \"a\"\ntest = \"write_lat\"\nclient = 0\nserver = 1\nmessage = \"64B\"\n[[perftest]]\nname = \"b\"\ntest = \"write_lat\"\nclient = 1\nserver = 0\nmessage = \"64B\"\n";
    let w = rnicsim::scenario::LoadedScenario::from_str(toml, "lat.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}")).warnings;
    assert!(w.iter().any(|m| m.contains("se_pieo.flows") && m.contains("host 0 sends on 2 queue pairs")), "{w:?}");
}

#[test]
fn rates_the_schedulers_cannot_hold_are_refused_or_warned_once() {
    let load = |extra: &str, sched: &str| {
        let toml = format!("duration = \"100us\"\n[topology.back_to_back]\n{extra}[nic.cc.none]\n[nic.scheduler.{sched}\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\nrate_limit = \"5000Tbps\"\n");
        rnicsim::scenario::LoadedScenario::from_str(&toml, "r.toml", std::path::Path::new("."))
    };
    // A 10 Tbps link was scheduled as 4.29 Tbps (rates in whole Kbps, 32 bits), silently.
    let e = load("[links]\nrate = \"10Tbps\"\n", "tassel]").err().expect("refused").to_string();
    assert!(e.contains("links.rate") && e.contains("commodity"), "{e}");
    assert!(load("[links]\nrate = \"10Tbps\"\n", "commodity]").is_ok());
    // A limit above the link runs as the link: one warning, not a second about Kbps rounding
    // of a value that is never used.
    let w = load("", "tassel]").unwrap().warnings;
    assert_eq!(w.iter().filter(|w| w.contains("perftest[0].rate_limit")).count(), 1, "{w:?}");
    // Packets held from one fetch count in 16 bits.
    let e = load("", "tassel]\nmax_batch = 70000").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("max_batch"), "{e}");
    // A topology file's own host links (which ignore links.rate): 5 Tbps ones were accepted
    // and scheduled as 4.29 Tbps; a limit above a host's 25 Gbps link went unwarned (found by
    // a helper).
    let dir = tempfile::tempdir().unwrap();
    let file = |rate: &str, sched: &str, limit: &str| {
        std::fs::write(dir.path().join("t.txt"), format!("3 1 2\n2\n0 2 {rate} 100ns 0\n1 2 {rate} 100ns 0\n")).unwrap();
        let toml = format!("duration = \"100us\"\n[topology.file]\npath = \"t.txt\"\n[nic.cc.none]\n[nic.scheduler.{sched}\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\nrate_limit = \"{limit}\"\n");
        rnicsim::scenario::LoadedScenario::from_str(&toml, "f.toml", dir.path())
    };
    let e = file("5Tbps", "tassel]", "3Tbps").err().expect("refused").to_string();
    assert!(e.contains("topology.file.path") && e.contains("5Tbps (a host link of the topology file)") && e.contains("commodity"), "{e}");
    assert!(file("5Tbps", "commodity]", "3Tbps").is_ok());
    let w = file("25Gbps", "tassel]", "50Gbps").unwrap().warnings;
    assert!(w.iter().any(|w| w.contains("perftest[0].rate_limit") && w.contains("above the 25Gbps link of its sender (host 0)")), "{w:?}");
    assert!(!file("25Gbps", "tassel]", "20Gbps").unwrap().warnings.iter().any(|w| w.contains("rate_limit")));
}

#[test]
fn packets_far_above_typical_packet_are_warned_when_the_fetches_tassel_drops_fill_pcie() {
    // 4096 B MTU (4158 B packets, 4159 B on average with the first's RETH) at a 99 Gbps
    // limit over 100 Gbps PCIe, `typical_packet` at its 1024 B default: Tassel fetches 13
    // packets a 1 µs latency where 3 start, and the ten WQEs it drops cost 5.1 Gbps of PCIe
    // reads beside 97.5 Gbps of payload. The run falls short of its limit, and nothing said
    // why (found by exploring other MTUs).
    let load = |typical: &str, pcie: &str| {
        let toml = format!(
            "duration = \"2ms\"\n[topology.back_to_back]\n[nic]\nmtu = 4096\npcie = {{ bandwidth = \"{pcie}\" }}\n[nic.cc.none]\n[nic.scheduler.tassel]\n{typical}\n\
             [[perftest]]\nname = \"x\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"64KiB\"\ndepth = 16\nrate_limit = \"99Gbps\"\nwarmup = \"500us\"\n"
        );
        rnicsim::scenario::LoadedScenario::from_str(&toml, "w.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
    };
    let warned = |l: &rnicsim::scenario::LoadedScenario| l.warnings.iter().any(|w| w.contains("perftest[0].message") && w.contains("typical_packet near 4159B"));
    let wire = |l: &rnicsim::scenario::LoadedScenario| metric(&common::run_summary(l, "w"), "x", |p| p.wire_gbps);
    let short = load("", "100Gbps");
    assert!(warned(&short), "{:?}", short.warnings);
    let got = wire(&short);
    assert!(got < 97.5, "{got} Gbps");
    // With typical_packet set to the packets' size the batches fit, and the limit is met.
    let fixed = load("typical_packet = \"4158B\"", "100Gbps");
    assert!(!warned(&fixed), "{:?}", fixed.warnings);
    let got = wire(&fixed);
    assert!((got / 99.0 - 1.0).abs() < 0.01, "{got} Gbps");
    // PCIe with room for the dropped fetches: no warning.
    assert!(!warned(&load("", "200Gbps")));
}

#[test]
fn a_slow_queue_pairs_packets_are_fetched_once() {
    // One queue pair limited to 50 Mbps with 1000 B messages: a packet every ~170 µs, far beyond
    // a scheduling latency. Each packet is fetched once, when its start comes round; fetching
    // again at the batch's arrival would only drop it (a second PCIe read per packet sent).
    let toml = "duration = \"3ms\"\n[topology.back_to_back]\n[nic.cc.none]\n[nic.scheduler.tassel]\n\
                [[perftest]]\nname = \"slow\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"1000B\"\ndepth = 2\nrate_limit = \"50Mbps\"\nwarmup = \"500us\"\n";
    let loaded = rnicsim::scenario::LoadedScenario::from_str(toml, "slow.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let s = common::run_summary(&loaded, "slow");
    let wire = metric(&s, "slow", |p| p.wire_gbps);
    // (About 15 packets in the window: a packet more or less is 7%.)
    assert!((wire / 0.05 - 1.0).abs() < 0.1, "{wire} Gbps");
    let rdma = &s.rdma;
    assert_eq!(rdma.scheduler_dropped_fetches, 0, "{rdma:?}");
    assert!(rdma.scheduler_fetches > 0);
}

#[test]
fn a_queue_pair_waiting_for_tassels_next_batch_is_not_a_stall() {
    // Tassel with a 1 ms scheduling latency serves a queue pair a batch per millisecond; between
    // batches nothing arrives, which the stall detector reported as a stalled run (found by a
    // helper). The quiet it allows now covers two batch intervals.
    let toml = |latency: &str| format!("duration = \"2ms\"\n[topology.back_to_back]\n[nic]\ncc = \"none\"\n[nic.scheduler.tassel]\nlatency = \"{latency}\"\ntypical_packet = \"1B\"\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"946B\"\ndepth = 64\nrate_limit = \"25Gbps\"\nwarmup = \"500us\"\n");
    let run = |latency: &str| {
        let loaded = rnicsim::scenario::LoadedScenario::from_str(&toml(latency), "t.toml", std::path::Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
        let mut w = rnicsim::world::World::build(&loaded).unwrap_or_else(|e| panic!("{e}"));
        w.run(|_| true);
        (w.stall().is_some(), w.apps.perftests.tests[0].wire_gbps(w.end))
    };
    let (stalled, gbps) = run("1ms");
    // 64 packets of about 1 KB a millisecond: under 1 Gbps, as the batch warning says.
    assert!(!stalled && gbps > 0.0 && gbps < 1.0, "{stalled} {gbps}");
    // At the default latency it runs at its limit, and is not stalled either.
    let (stalled, gbps) = run("2us");
    assert!(!stalled && (gbps / 25.0 - 1.0).abs() < 0.05, "{stalled} {gbps}");
}
