//! Running ns-3 (HPCC/ConWeave) experiments unchanged: config.txt translation and import.

use rnicsim::output::fct_compare::{compare, parse_fct, FctLine};
use rnicsim::scenario::ns3::{is_ns3_config, translate};
use rnicsim::scenario::LoadedScenario;
use rnicsim::units::Time;
use rnicsim::world::World;
use std::path::{Path, PathBuf};

mod common;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ns3")
}

fn run(loaded: &LoadedScenario) -> World {
    let mut w = World::build(loaded).unwrap_or_else(|e| panic!("{e}"));
    w.run(|_| true);
    w
}

#[test]
fn config_txt_gives_the_same_flows_as_the_equivalent_toml() {
    let dir = data();
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    assert!(is_ns3_config(&text));
    let t = translate(&text, "config.txt", &dir).unwrap();
    let from_config = LoadedScenario::from_str(&t.toml, "config.txt", &dir).unwrap_or_else(|e| panic!("{e}\n{}", t.toml));
    let from_toml = LoadedScenario::from_file(&dir.join("equivalent.toml")).unwrap();
    let (a, b) = (run(&from_config), run(&from_toml));
    // Without SIMULATOR_STOP_TIME (ConWeave's configs) the run ends when its listed flows have,
    // its duration being a limit 10 s on: progress counts the flows finished, none of 4 before
    // the run and all 4 after (a bar over the duration sat at its start for the whole run).
    assert_eq!(a.progress().flows, None, "SIMULATOR_STOP_TIME: the run goes on to it");
    let t = translate(&text.replace("SIMULATOR_STOP_TIME 2.002", "FLOWGEN_STOP_TIME 2.001"), "config.txt", &dir).unwrap();
    let until_done = LoadedScenario::from_str(&t.toml, "config.txt", &dir).unwrap();
    assert_eq!(World::build(&until_done).unwrap().progress().flows, Some((0, 4)));
    assert_eq!(run(&until_done).progress().flows, Some((4, 4)));
    let key = |w: &World| w.apps.flows.records.iter().map(|r| (r.src, r.dst, r.size, r.start, r.finish, r.udp_sport, r.udp_dport)).collect::<Vec<_>>();
    assert_eq!(key(&a).len(), 4);
    assert!(a.apps.flows.records.iter().all(|r| r.fct().is_some()), "every flow completes");
    assert_eq!(key(&a), key(&b));
    // Ports as HPCC's third.cc numbers them: per (source, destination) pair from 10000 in start
    // order (0→2, 1→3, 0→3, 3→0: each pair's first), the file's port; ConWeave's fork counts
    // per source (0→3 is host 0's second flow).
    let ports = |w: &World| w.apps.flows.records.iter().map(|r| (r.udp_sport, r.udp_dport)).collect::<Vec<_>>();
    assert_eq!(ports(&a), [(10000, 100), (10000, 100), (10000, 100), (10000, 100)]);
    let t = translate(&format!("{text}\nCONWEAVE_TX_EXPIRY_TIME 1000\n"), "config.txt", &dir).unwrap();
    let conweave_loaded = LoadedScenario::from_str(&t.toml, "config.txt", &dir).unwrap();
    let conweave = run(&conweave_loaded);
    assert_eq!(ports(&conweave), [(10000, 100), (10000, 100), (10001, 100), (10000, 100)]);
    assert_eq!(from_config.scenario.switch.ecmp_hash, rnicsim::fabric::lb::EcmpHash::Ns3);
    // HPCC's RdmaHw NACKs a gap again after 500 µs (ConWeave's fork after 4); its ACKs travel in
    // their data's class (an ACK's `pg` is the data's: 2 for a class-2 flow), and ACK_HIGH_PRIO 1
    // only lets them leave the NIC past a PAUSE of that class. ConWeave's go in class 0.
    let nic = |l: &LoadedScenario| (l.scenario.nic.nak_interval, l.scenario.nic.ack_class(2), l.scenario.nic.ack_unpaused);
    let us = |n| Some(rnicsim::units::Time::from_us(n));
    assert_eq!(nic(&from_config), (us(500), 2, false));
    assert_eq!(nic(&conweave_loaded), (us(4), 0, false));
    let high = translate(&text.replace("ACK_HIGH_PRIO 0", "ACK_HIGH_PRIO 1"), "config.txt", &dir).unwrap();
    let high = LoadedScenario::from_str(&high.toml, "config.txt", &dir).unwrap();
    assert_eq!(nic(&high), (us(500), 2, true));
    // The run folder's scenario.toml keeps it (the ns3 profile's class 0 would take its place).
    let again = LoadedScenario::from_str(&high.resolved_toml(), "scenario.toml", &dir).unwrap();
    assert_eq!(nic(&again), (us(500), 2, true));
    // HPCC's rate floor when MIN_RATE is not given: both programs' 100 Mb/s.
    assert!(text.contains("MIN_RATE 100Mb/s\n"));
    let hpcc_cc = translate(&text.replace("CC_MODE 1", "CC_MODE 3").replace("MIN_RATE 100Mb/s\n", ""), "config.txt", &dir).unwrap();
    let l = LoadedScenario::from_str(&hpcc_cc.toml, "config.txt", &dir).unwrap();
    assert!(matches!(l.scenario.nic.cc, rnicsim::nic::cc::CcSpec::Hpcc(p) if p.min_rate == Some(rnicsim::units::BitsPerSec(100_000_000))));
    // Keys that only configure ns-3's tracing or what has no equivalent yet are listed.
    let w = t.warnings.join("\n");
    assert!(w.contains("TRACE_FILE") && w.contains("L2_CHUNK_SIZE"), "{w}");
    // GLOBAL_T and INT_MULTI have their equivalents (HPCC's `fabric_rtt`, the window's
    // `per_pair`, and HPCC's `int_multi`); FAST_REACT 1 and RATE_BOUND 1 are how we run, and
    // MULTI_RATE is HPCC's alone (this config is DCQCN's).
    for key in ["GLOBAL_T", "INT_MULTI", "FAST_REACT", "RATE_BOUND", "MULTI_RATE", "SAMPLE_FEEDBACK"] {
        assert!(!w.contains(key), "{key}: {w}");
    }
    // L2_BACK_TO_ZERO 0 is go-back-N from the lost packet, as here: nothing to warn of.
    assert!(!w.contains("L2_BACK_TO_ZERO"), "{w}");
    // BUFFER_SIZE is in MiB (`ConfigBufferSize(buffer_size * 1024 * 1024)`).
    assert_eq!(from_config.scenario.switch.buffer.0, 32 << 20);
    // HPCC's switch MMU: RESUME 3 KiB under XOFF (`resume_offset`), α 1/8 (`pfc_a_shift` 3) doubled
    // for each halving that brings a port's rate to the NICs', 4 KiB reserves per ingress and
    // per port, PAUSE held until RESUME (neither refreshed nor resent per packet).
    let pfc = &from_config.scenario.switch.pfc;
    assert_eq!((pfc.xon_offset.0, pfc.alpha, pfc.alpha_by_rate, pfc.ingress_reserve.0, pfc.port_reserve.0), (3072, 0.125, true, 4096, 4096));
    assert_eq!((pfc.resend, pfc.pause_time), (rnicsim::scenario::schema::PfcResend::UntilResume, None));
    // ConWeave's: RESUME one byte under XOFF (`GetResumeClasses`: α (free − 16 B), α = 1/16; the
    // 3 KB default gap held a paused host two or three packets longer than ns-3), 2,096 B
    // reserves, a 5 µs PAUSE for every packet over XOFF.
    let pfc = &conweave_loaded.scenario.switch.pfc;
    assert_eq!((pfc.xon_offset.0, pfc.alpha, pfc.alpha_by_rate, pfc.ingress_reserve.0, pfc.port_reserve.0), (1, 0.0625, false, 2096, 8384));
    assert_eq!((pfc.resend, pfc.pause_time), (rnicsim::scenario::schema::PfcResend::EveryPacket, Some(rnicsim::units::Time::from_us(5))));
    // HAS_WIN 1 and VAR_WIN 1 become a rate-scaled window of the largest BDP.
    assert!(!w.contains("HAS_WIN") && !w.contains("VAR_WIN"), "{w}");
    assert_eq!(from_config.scenario.nic.cc_window, Some(rnicsim::nic::CcWindow { bytes: None, with_rate: true, per_pair: false }));
    // The NIC is ns-3's: per-packet round robin, no pipeline, CNP flags on ACKs, polled DCQCN.
    let nic = &from_config.scenario.nic;
    assert_eq!(nic.profile, rnicsim::nic::NicProfile::Ns3);
    assert_eq!(nic.scheduler, rnicsim::nic::sched::SchedulerSpec::PacketRoundRobin {});
    assert_eq!((nic.tx_pipeline.0, nic.cnp, nic.ack_class(nic.priority)), (0, rnicsim::nic::CnpMode::AckFlag, 3), "ACK_HIGH_PRIO 0: ACKs in the data class");
    let rnicsim::nic::cc::CcSpec::Dcqcn(d) = &nic.cc else { panic!("CC_MODE 1 is DCQCN") };
    assert_eq!(d.reaction, rnicsim::nic::cc::dcqcn::Reaction::Polled);
}

/// ns-3's own FCT file of a reference (`ns3_fct.txt.gz`).
fn ns3_fct(dir: &Path) -> Vec<FctLine> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(dir.join("ns3_fct.txt.gz")).unwrap()), &mut text).unwrap();
    parse_fct(&text).unwrap()
}

/// Runs the ns-3 experiment in `scenarios/ns3/<name>` unchanged and compares its slowdowns
/// with ns-3's own FCT file flow by flow: mean within 10% overall and 15% per size bucket, p99
/// within 20% (the parity issue's goals); where ns-3's PFC file is kept, the PFC frames
/// within 25% (averaged over `pfc_seeds` seeds from the config's own, where one run's count
/// swings with the seed; ns-3's count then also lies within theirs); and at least `agree` of
/// the flows with a slowdown within 10% of ns-3's for that same flow (where flows take ns-3's
/// paths; 0 for load balancers that choose at random). Returns the world of the config's seed.
fn matches_ns3(name: &str, agree: f64, pfc_seeds: u64) -> World {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3").join(name);
    // As the fork's run.py writes it: no SIMULATOR_STOP_TIME. The fork then runs until every
    // flow has finished (it looks every 100 µs), at most 10 s past FLOWGEN_STOP_TIME. HPCC's
    // third.cc runs to its SIMULATOR_STOP_TIME.
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    let loaded = common::ns3_config(&text, &dir);
    let conweave = text.contains("CONWEAVE_");
    if conweave {
        assert!(!text.contains("SIMULATOR_STOP_TIME"));
        assert!(loaded.scenario.stop_when_flows_done && loaded.scenario.duration == Time::from_ms(12_005));
    }
    let w = run(&loaded);
    if conweave {
        let last = w.apps.flows.records.iter().filter_map(|r| r.fct().map(|f| r.start + f)).max().unwrap();
        assert!(w.end >= last && w.end <= last + Time::from_us(100) && w.end.0 % Time::from_us(100).0 == 0, "ended at {:?}, last flow done at {last:?}", w.end);
    }
    // Our flows as our FCT file has them, matched with ns-3's file as `rnicsim compare-fct`
    // matches them.
    let ours: Vec<FctLine> = w.apps.flows.records.iter().filter_map(FctLine::of).collect();
    let c = compare(&ours, &ns3_fct(&dir));
    assert_eq!(c.matched, c.lines.1, "{name}: every flow ns-3 finished, finished here and is matched");
    let (a, b, close) = (c.a, c.b, c.within_10pct);
    println!("{name}\nns-3:    {b:.3?}\nrnicsim: {a:.3?}");
    let near = |x: f64, y: f64, tol: f64| (x - y).abs() <= tol * y;
    assert!(near(a.mean, b.mean, 0.10), "{name}: mean {:.3} vs ns-3 {:.3}", a.mean, b.mean);
    assert!(near(a.p99, b.p99, 0.20), "{name}: p99 {:.3} vs ns-3 {:.3}", a.p99, b.p99);
    for i in 0..4 {
        assert!(near(a.by_size[i], b.by_size[i], 0.15), "{name}: bucket {i}: {:.3} vs ns-3 {:.3}", a.by_size[i], b.by_size[i]);
    }
    // ns-3's PFC file has a line per PFC frame a node received.
    if let Ok(gz) = std::fs::File::open(dir.join("ns3_pfc.txt.gz")) {
        let lines = std::io::BufRead::lines(std::io::BufReader::new(flate2::read::GzDecoder::new(gz))).count();
        let mut seeds = vec![w.stats.pfc_frames_received];
        for k in 1..pfc_seeds {
            let mut other = loaded.clone();
            other.scenario.seed += k;
            seeds.push(run(&other).stats.pfc_frames_received);
        }
        let frames = seeds.iter().sum::<u64>() as f64 / seeds.len() as f64;
        println!("PFC frames: ns-3 {lines}, rnicsim {seeds:?}");
        assert!((frames - lines as f64).abs() <= 0.25 * lines as f64, "{name}: {seeds:?} PFC frames vs ns-3's {lines}");
        let (lo, hi) = (*seeds.iter().min().unwrap(), *seeds.iter().max().unwrap());
        assert!(pfc_seeds == 1 || (lo..=hi).contains(&(lines as u64)), "{name}: ns-3's {lines} PFC frames outside our seeds' {seeds:?}");
    }
    println!("flows within 10% of ns-3's slowdown: {:.1}%", 100.0 * close);
    assert!(close >= agree, "{name}: {:.1}% of flows within 10% of ns-3's slowdown", 100.0 * close);
    w
}

#[test]
fn the_reference_experiment_gives_ns3s_slowdowns() {
    // ConWeave's ns-3 fork on a 128-host leaf-spine, FB Hadoop flows at 50% load for 5 ms,
    // DCQCN + PFC, ECMP (`scenarios/ns3/fbhdp50-dcqcn`, its README says how it was made).
    // Flows take ns-3's paths (its ports and switch hash), so most flows agree one by one:
    // with paths of our own, about half did (51%).
    matches_ns3("fbhdp50-dcqcn", 0.65, 1);
}

#[test]
fn the_reference_experiment_on_a_fat_tree_gives_ns3s_slowdowns() {
    // Three tiers (`scenarios/ns3/fbhdp50-fat`): ns-3's paths through edge, aggregation and
    // core switches. Its PAUSE count swings with the ECN marks' seed (seeds 1–5: 1,264, 3,458,
    // 1,277, 1,113 and 1,681 frames; ns-3's 1,821), and with 1 ns shifts of half the flows'
    // starts (1,936 with each start rounded, not cut, to the ns): five seeds are compared.
    matches_ns3("fbhdp50-fat", 0.60, 5);
}

#[test]
fn the_reference_experiment_with_drill_gives_ns3s_slowdowns() {
    // DRILL(2, 1) per packet (`scenarios/ns3/fbhdp50-drill`): its two random samples may fall
    // on the port remembered for the destination, as in the fork's `DoLbDrill`; kept apart from
    // it, the 10–100 KB flows were 17% slower than ns-3's.
    matches_ns3("fbhdp50-drill", 0.60, 1);
}

#[test]
fn drill_sprays_data_but_acks_and_naks_follow_the_flow_hash() {
    // DRILL (`scenarios/ns3/fbhdp50-drill`) reorders every flow's data, so go-back-N NAKs all
    // the time. As ns-3's switch does, ACKs and NAKs take the flow's hash path and stay in
    // order (`switch.control_by_hash`), and a NAK is repeated every 4 µs while the gap stays
    // (`nic.nak_interval`): no flow waits for a retransmission timeout (with DRILL balancing
    // ACKs too, an ACK overtook the NAK before it and 19 flows stalled for one), and the run
    // does not hang on its seed (ns-3: 2.975 and 2.981 with RANDOM_SEED 1 and 2).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3/fbhdp50-drill");
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    let mut means = Vec::new();
    for seed in [1, 2] {
        let loaded = common::ns3_config(&text.replace("RANDOM_SEED 1", &format!("RANDOM_SEED {seed}")), &dir);
        assert!(loaded.scenario.switch.control_by_hash && loaded.scenario.nic.nak_interval == Some(Time::from_us(4)));
        let w = run(&loaded);
        assert_eq!(w.stats.flows_completed, 16245);
        let s = rnicsim::output::Summary::of(&w, "drill");
        let rdma = s.rdma;
        assert_eq!(rdma.timeouts, 0, "seed {seed}");
        assert!(rdma.retransmits > 100_000, "DRILL reorders: {}", rdma.retransmits);
        means.push(rdma.slowdown_mean);
    }
    assert!(means.iter().all(|m| (m - 2.975).abs() <= 0.10 * 2.975), "{means:?} vs ns-3's 2.975");
}

#[test]
fn hpccs_own_simulator_gives_the_same_slowdowns_and_pauses_under_dcqcn() {
    // HPCC's third.cc (alibaba-edu/High-Precision-Congestion-Control 9f4be2a), not ConWeave's
    // fork: a 64-host leaf-spine with an 8 MB buffer, FB Hadoop flows and three 24-to-1
    // incasts, DCQCN without a window (`scenarios/ns3/hpcc-ls64-dcqcn`). Its switch MMU (α 1/8,
    // 4 KiB reserves, RESUME 3 KiB under, PAUSE held to RESUME), ACKs in the data class, source
    // ports per pair: before them the PAUSE frames were 142× ns-3's (220,857 against 1,550)
    // and 39% of flows within 10% of ns-3's slowdown.
    let w = matches_ns3("hpcc-ls64-dcqcn", 0.80, 1);
    assert!(!w.nic_spec.ack_unpaused && w.nic_spec.ack_priority.is_none());
}

#[test]
fn hpccs_own_simulator_gives_the_same_slowdowns_under_hpcc() {
    // The same flows under HPCC (window of a BDP scaled with the rate, INT_MULTI 4).
    matches_ns3("hpcc-ls64-hpcc", 0.80, 1);
}

#[test]
fn the_reference_experiment_with_hpcc_gives_ns3s_slowdowns() {
    // HPCC as its run.py sets it (window of a BDP scaled with the rate, per-ACK reaction),
    // ECMP, PFC (`scenarios/ns3/fbhdp50-hpcc`).
    let w = matches_ns3("fbhdp50-hpcc", 0.80, 1);
    // Only ns-3's HPCC moves a queue pair's next send time when its rate changes (`ChangeRate`).
    assert_eq!(w.nic_spec.pace_retime, rnicsim::nic::PaceRetime::WholeGap);
    for other in ["fbhdp50-dcqcn", "fbhdp50-dctcp", "fbhdp50-timely"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3").join(other);
        let loaded = common::ns3_config(&std::fs::read_to_string(dir.join("config.txt")).unwrap(), &dir);
        assert_eq!(loaded.scenario.nic.pace_retime, rnicsim::nic::PaceRetime::None, "{other}");
    }
}

#[test]
fn the_reference_experiment_with_dctcp_gives_ns3s_slowdowns() {
    // DCTCP as HPCC's run.py sets it (window of a BDP scaled with the rate, marking past
    // 300 KB), ECMP, PFC (`scenarios/ns3/fbhdp50-dctcp`): neither simulator pauses a port.
    let w = matches_ns3("fbhdp50-dctcp", 0.75, 1);
    assert_eq!(w.stats.pfc_frames_sent, 0);
}

#[test]
fn the_reference_experiment_with_timely_gives_ns3s_slowdowns() {
    // TIMELY as HPCC's run.py sets it, with ns-3's update rules (`nic.cc.timely.rules = "ns3"`):
    // with the paper's (an update per 16 KiB acknowledged, the gradient cut capped at β) the
    // flows of 1 MB and more were 44% slower than ns-3's and PFC sent half its frames.
    matches_ns3("fbhdp50-timely", 0.65, 1);
}

#[test]
fn the_reference_experiment_with_irn_gives_ns3s_slowdowns() {
    // Lossy: IRN's selective repeat and BDP cap instead of PFC (`scenarios/ns3/fbhdp50-irn`).
    let w = matches_ns3("fbhdp50-irn", 0.65, 1);
    assert_eq!(w.stats.pfc_frames_sent, 0);
}

#[test]
fn the_reference_experiment_with_conga_gives_ns3s_slowdowns() {
    // The same with LB_MODE 3 (`scenarios/ns3/fbhdp50-conga`).
    matches_ns3("fbhdp50-conga", 0.0, 1);
}

#[test]
fn the_reference_experiment_with_conweave_gives_ns3s_slowdowns_and_reroutes() {
    // The same with LB_MODE 9 and run.py's leaf-spine CONWEAVE_* values
    // (`scenarios/ns3/fbhdp50-conweave`).
    let w = matches_ns3("fbhdp50-conweave", 0.0, 1);
    let lb = rnicsim::output::Summary::of(&w, "conweave").load_balancing.expect("ConWeave's counters");
    // ns-3's own counts (its README): 6,289 reroutes, 182,498 packets put in reorder queues,
    // 4,842 queues flushed (4,841 by their TAIL), 98,438 control packets.
    let near = |x: u64, y: u64, tol: f64| (x as f64 - y as f64).abs() <= tol * y as f64;
    assert!(near(lb.reroutes, 6_289, 0.15) && near(lb.held_packets, 182_498, 0.15) && near(lb.control_packets, 98_438, 0.15), "{lb:?}");
    assert!(lb.released_by_tail > 50 * lb.released_by_timeout.max(1), "{lb:?}");
}

#[test]
fn every_class_a_flow_file_uses_but_0_is_lossless_as_in_ns3s_switches() {
    // ns-3's switches hold every queue but 0 (the ACKs') to PFC. A flow file with data in
    // classes 1, 3 and 0: 1 and 3 become lossless, 0 stays lossy (and is warned), no other
    // class gets headroom. The shipped config's file (all class 3) keeps PFC on 3 alone.
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.txt", "topology.txt"] {
        std::fs::copy(data().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("flow.txt"), "3\n0 2 1 100 200000 2.000000\n1 3 3 100 100000 2.000010\n0 3 0 100 50000 2.000020\n").unwrap();
    let text = std::fs::read_to_string(dir.path().join("config.txt")).unwrap();
    let t = translate(&text, "config.txt", dir.path()).unwrap();
    let loaded = LoadedScenario::from_str(&t.toml, "config.txt", dir.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.scenario.switch.pfc.classes, [1, 3]);
    let lossy: Vec<_> = loaded.warnings.iter().filter(|m| m.contains("lossless")).collect();
    assert!(lossy.len() == 1 && lossy[0].contains("in class 0"), "{lossy:?}");
    // The ns3 profile's retransmission timeouts, the fork's: go-back-N 4 ms; IRN 320 µs, and
    // 100 µs with at most 4 packets in flight (`GetRto`: RTO_high past 3 MTUs from the
    // cumulative ACK to the last packet's first byte).
    assert_eq!((loaded.scenario.nic.rto, loaded.scenario.nic.rto_few), (Time::from_ms(4), None));
    let irn = translate(&format!("{text}\nENABLE_IRN 1\n"), "config.txt", dir.path()).unwrap();
    let irn = LoadedScenario::from_str(&irn.toml, "config.txt", dir.path()).unwrap().scenario.nic;
    assert_eq!((irn.rto, irn.rto_few), (Time::from_us(320), Some(rnicsim::nic::RtoFew { rto: Time::from_us(100), packets: 4 })));
    assert_eq!((irn.rto_for(4), irn.rto_for(5)), (Time::from_us(100), Time::from_us(320)));
    let shipped = translate(&std::fs::read_to_string(data().join("config.txt")).unwrap(), "config.txt", &data()).unwrap();
    let shipped = LoadedScenario::from_str(&shipped.toml, "config.txt", &data()).unwrap();
    assert_eq!(shipped.scenario.switch.pfc.classes, [3]);
    // The profile gives it to a TOML scenario too; the commodity NIC has 67 ms (the
    // InfiniBand local ACK timeout at 14).
    assert_eq!(LoadedScenario::from_file(&data().join("equivalent.toml")).unwrap().scenario.nic.rto, Time::from_ms(4));
    let commodity = LoadedScenario::from_str("duration = \"1ms\"\n[topology.star]\nhosts = 2\n", "s.toml", &data()).unwrap();
    assert_eq!(commodity.scenario.nic.rto, Time(4_096_000 << 14));
}

#[test]
fn a_value_we_cannot_honour_names_key_and_line() {
    let dir = data();
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    for (from, to, key) in [("CC_MODE 1", "CC_MODE 10", "CC_MODE"), ("USE_DYNAMIC_PFC_THRESHOLD 1", "USE_DYNAMIC_PFC_THRESHOLD 0", "USE_DYNAMIC_PFC_THRESHOLD"), ("RATE_AI 50Mb/s", "RATE_AI fast", "RATE_AI")] {
        let bad = text.replace(from, to);
        let line = bad.lines().position(|l| l.starts_with(to)).unwrap() + 1;
        let e = match translate(&bad, "config.txt", &dir) {
            Err(e) => e,
            Ok(_) => panic!("{to} accepted"),
        };
        assert_eq!((e.key.as_deref(), e.line), (Some(key), Some(line)), "{e}");
    }
}

#[test]
fn unknown_keys_are_warnings_not_errors() {
    let dir = data();
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap() + "MY_OWN_KNOB 3\n";
    let t = translate(&text, "config.txt", &dir).unwrap();
    assert!(t.warnings.iter().any(|w| w.contains("unknown keys") && w.contains("MY_OWN_KNOB")));
    assert!(!is_ns3_config("name = \"x\"\nduration = \"1us\""));
}

#[test]
fn errors_name_the_configs_own_line_and_key() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    // A value the translated scenario refuses (an MTU of 10 B) is reported at the config's line.
    let bad = text.replace("PACKET_PAYLOAD_SIZE 1000", "PACKET_PAYLOAD_SIZE 10");
    let path = tmp.path().join("config.txt");
    std::fs::write(&path, &bad).unwrap();
    let e = LoadedScenario::from_file(&path).err().expect("an MTU of 10 B is refused");
    let line = bad.lines().position(|l| l.starts_with("PACKET_PAYLOAD_SIZE")).unwrap() + 1;
    assert_eq!((e.file.as_str(), e.line, e.key.as_deref()), (path.to_str().unwrap(), Some(line), Some("PACKET_PAYLOAD_SIZE")), "{e}");
    // Numbers are read whole: 1.9 is not mode 1, and "abc" is not a probability of 0.
    for (from, to, key) in [("CC_MODE 1", "CC_MODE 1.9", "CC_MODE"), ("L2_ACK_INTERVAL 1", "L2_ACK_INTERVAL 1.5", "L2_ACK_INTERVAL")] {
        let e = translate(&text.replace(from, to), "config.txt", &data()).err().unwrap_or_else(|| panic!("{to} accepted"));
        assert_eq!(e.key.as_deref(), Some(key), "{e}");
    }
    // A value of the config's own key that a congestion control refuses is named at that key's
    // line, not at CC_MODE's (HPCC's additive increase of 0, and its floor above the line: the
    // topology file's 100 Gbps host links, read when the config is loaded).
    let topology = format!("TOPOLOGY_FILE {}", data().join("topology.txt").display());
    for (edits, key) in [(vec![("CC_MODE 1", "CC_MODE 3"), ("RATE_AI 50Mb/s", "RATE_AI 0Mb/s")], "RATE_AI"), (vec![("CC_MODE 1", "CC_MODE 3"), ("MIN_RATE 100Mb/s", "MIN_RATE 200Gb/s"), ("TOPOLOGY_FILE topology.txt", topology.as_str())], "MIN_RATE")] {
        let bad = edits.iter().fold(text.clone(), |t, (from, to)| t.replace(from, to));
        let path = tmp.path().join("config.txt");
        std::fs::write(&path, &bad).unwrap();
        let e = LoadedScenario::from_file(&path).err().unwrap_or_else(|| panic!("{edits:?} accepted"));
        let line = bad.lines().position(|l| l.starts_with(&format!("{key} "))).unwrap() + 1;
        assert_eq!((e.line, e.key.as_deref()), (Some(line), Some(key)), "{e}");
    }
    // PAUSE_TIME 0 is named at its own line (it was named at ENABLE_PFC's); a key given twice
    // at its last line, the one that stands; a number that is not finite is refused.
    // (In HPCC's config too, where any other time has no effect: its NIC takes a PAUSE of 0 µs
    // as a RESUME.)
    for (extra, key) in [("CONWEAVE_TX_EXPIRY_TIME 1000\nPAUSE_TIME 0", "PAUSE_TIME"), ("PAUSE_TIME 0.5", "PAUSE_TIME"), ("PACKET_PAYLOAD_SIZE 10", "PACKET_PAYLOAD_SIZE"), ("BUFFER_SIZE inf", "BUFFER_SIZE")] {
        let bad = format!("{text}\n{extra}\n");
        std::fs::write(&path, &bad).unwrap();
        let e = LoadedScenario::from_file(&path).err().unwrap_or_else(|| panic!("{extra} accepted"));
        assert_eq!((e.line, e.key.as_deref()), (Some(bad.lines().count()), Some(key)), "{extra}: {e}");
    }
    let maps = format!("{text}\nKMAX_MAP 1 100000000000 400\nKMIN_MAP 1 100000000000 100\nPMAX_MAP 1 100000000000 abc\n");
    let e = translate(&maps, "config.txt", &data()).err().expect("PMAX abc");
    assert_eq!(e.key.as_deref(), Some("PMAX_MAP"), "{e}");
}

/// The `fct.txt` lines a translated config writes.
fn fct_lines(text: &str) -> Vec<String> {
    let loaded = common::ns3_config(text, &data());
    let tmp = tempfile::tempdir().unwrap();
    let mut w = World::build(&loaded).unwrap_or_else(|e| panic!("{e}"));
    let out = rnicsim::output::RunDir::create(&tmp.path().join("run"), false).unwrap();
    rnicsim::stream_outputs(&out, &loaded, &mut w).unwrap();
    w.run(|_| true);
    rnicsim::write_outputs(&out, &loaded, &mut w, Vec::new()).unwrap();
    let done = out.commit().unwrap();
    std::fs::read_to_string(done.join("fct.txt")).unwrap().lines().map(String::from).collect()
}

#[test]
fn fct_file_is_written_in_the_dialect_of_the_configs_simulator() {
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    // HPCC's config: endpoints as hex IPv4 addresses (node 0 is 0b000001).
    let hpcc = fct_lines(&text);
    assert_eq!(hpcc.len(), 4);
    let f: Vec<&str> = hpcc[0].split(' ').collect();
    assert_eq!(f.len(), 8);
    assert!(f[0].len() == 8 && f[0].starts_with("0b") && u32::from_str_radix(f[0], 16).is_ok(), "{}", hpcc[0]);
    // A config with ConWeave's keys: the same flows, endpoints as decimal node ids.
    let text: String = text.lines().map(|l| if l.starts_with("ACK_HIGH_PRIO ") { "ACK_HIGH_PRIO 1\n".to_string() } else { format!("{l}\n") }).collect();
    let hpcc = fct_lines(&text);
    let conweave = fct_lines(&format!("{text}\nCONWEAVE_TX_EXPIRY_TIME 1000\n"));
    assert_eq!(conweave.len(), hpcc.len());
    // The same flows (destination port, size, start, ideal); the two simulators number source
    // ports and run their switches' buffers differently, so FCTs, and the order in which the
    // flows finish, may differ.
    let flows = |lines: &[String]| {
        let mut f: Vec<Vec<String>> = lines.iter().map(|l| l.split(' ').enumerate().filter(|(i, _)| [3, 4, 5, 7].contains(i)).map(|(_, x)| x.to_string()).collect()).collect();
        f.sort();
        f
    };
    assert_eq!(flows(&hpcc), flows(&conweave), "same flows");
    for c in &conweave {
        let c: Vec<&str> = c.split(' ').collect();
        let h: Vec<&str> = hpcc.iter().map(|h| h.split(' ').collect::<Vec<_>>()).find(|h| h[4..6] == c[4..6]).expect("the same flow in HPCC's file");
        for i in 0..2 {
            let node: u32 = c[i].parse().unwrap_or_else(|_| panic!("decimal node id: {}", c[i]));
            let ip = u32::from_str_radix(h[i], 16).unwrap();
            assert_eq!(ip, 0x0b00_0001 + (node / 256) * 0x10000 + (node % 256) * 0x100, "{h:?} {c:?}");
        }
    }
}

/// Runs `loaded` into `dir` as `rnicsim run` does.
fn run_into(loaded: &LoadedScenario, dir: &Path) -> PathBuf {
    let mut w = World::build(loaded).unwrap_or_else(|e| panic!("{e}"));
    let out = rnicsim::output::RunDir::create(dir, false).unwrap();
    rnicsim::stream_outputs(&out, loaded, &mut w).unwrap();
    w.run(|_| true);
    rnicsim::write_outputs(&out, loaded, &mut w, Vec::new()).unwrap();
    out.commit().unwrap()
}

#[test]
fn rerunning_a_config_runs_scenario_toml_leaves_the_configs_fct_file_alone() {
    // A config.txt run writes FCT_OUTPUT_FILE beside the config. Its run folder's
    // `scenario.toml`, run again with another seed (or swept), writes its `fct.txt` in its own
    // folder only: it used to name the config's file and overwrite it.
    let tmp = tempfile::tempdir().unwrap();
    for f in ["config.txt", "topology.txt", "flow.txt"] {
        std::fs::copy(data().join(f), tmp.path().join(f)).unwrap();
    }
    let text = std::fs::read_to_string(tmp.path().join("config.txt")).unwrap();
    let t = translate(&text, "config.txt", tmp.path()).unwrap();
    let first = run_into(&LoadedScenario::from_str(&t.toml, "config.txt", tmp.path()).unwrap(), &tmp.path().join("run"));
    let external = std::fs::read(tmp.path().join("fct.txt")).expect("the config's FCT_OUTPUT_FILE");
    assert_eq!(external, std::fs::read(first.join("fct.txt")).unwrap());
    // (A mark in the config's file: a rerun writing the same lines there would go unseen.)
    std::fs::write(tmp.path().join("fct.txt"), "compared with ns-3\n").unwrap();
    let saved = std::fs::read_to_string(first.join("scenario.toml")).unwrap();
    let mut again = LoadedScenario::from_str(&saved, "scenario.toml", &first).unwrap();
    again.scenario.seed = 2;
    let second = run_into(&again, &tmp.path().join("run2"));
    assert!(second.join("fct.txt").is_file() && second.join("pfc.txt").is_file());
    assert_eq!(std::fs::read_to_string(tmp.path().join("fct.txt")).unwrap(), "compared with ns-3\n", "the config's FCT file is left alone");
    let mut names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["config.txt", "fct.txt", "flow.txt", "pfc.txt", "run", "run2", "topology.txt"]);
}

#[test]
fn conweaves_load_balancer_modes_pick_our_balancers() {
    let dir = data();
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    for (mode, lb) in [("0", "ecmp"), ("2", "drill"), ("3", "conga"), ("6", "flowlet"), ("9", "conweave")] {
        let t = translate(&format!("{text}\nLB_MODE {mode}\n"), "config.txt", &dir).unwrap_or_else(|e| panic!("{e}"));
        let loaded = LoadedScenario::from_str(&t.toml, "config.txt", &dir).unwrap();
        let got = serde_json::to_value(loaded.scenario.switch.load_balancer).unwrap();
        assert_eq!(got, lb, "LB_MODE {mode}");
    }
    // ConWeave's timing keys, in microseconds, as its run.py writes them for a leaf-spine.
    let keys = "LB_MODE 9\nCONWEAVE_TX_EXPIRY_TIME 300\nCONWEAVE_REPLY_TIMEOUT_EXTRA 4\nCONWEAVE_PATH_PAUSE_TIME 16\nCONWEAVE_EXTRA_VOQ_FLUSH_TIME 16\nCONWEAVE_DEFAULT_VOQ_WAITING_TIME 200\n";
    let t = translate(&format!("{text}\n{keys}"), "config.txt", &dir).unwrap();
    let cw = LoadedScenario::from_str(&t.toml, "config.txt", &dir).unwrap().scenario.switch.conweave;
    assert_eq!((cw.tx_expiry, cw.reply_timeout_extra, cw.path_pause), (Time::from_us(300), Time::from_us(4), Time::from_us(16)));
    assert_eq!((cw.extra_voq_flush, cw.default_voq_waiting), (Time::from_us(16), Time::from_us(200)));
    // A mode the fork does not define is refused, naming the key and its line.
    let bad = format!("{text}\nLB_MODE 7\n");
    let e = translate(&bad, "config.txt", &dir).err().expect("LB_MODE 7 refused");
    assert_eq!((e.key.as_deref(), e.line), (Some("LB_MODE"), Some(bad.lines().count())), "{e}");
}

#[test]
fn every_shipped_ns3_reference_is_ns3s_own_output() {
    // ns-3 numbers ports from 10000 (source) and 100 (destination), where rnicsim without
    // `ports = "ns3"` draws them: a reference made by the wrong simulator shows at once.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("ns3_fct.txt.gz").exists()).collect();
    dirs.sort();
    assert!(dirs.len() >= 11, "{dirs:?}");
    for d in dirs {
        let lines = ns3_fct(&d);
        // Every flow of its flow file finished (the file's first line counts them).
        let config = std::fs::read_to_string(d.join("config.txt")).unwrap();
        let flow_file = config.lines().find_map(|l| l.strip_prefix("FLOW_FILE ")).unwrap().trim();
        let flows: usize = std::fs::read_to_string(d.join(flow_file)).unwrap().lines().next().unwrap().trim().parse().unwrap();
        assert_eq!(lines.len(), flows, "{}", d.display());
        assert!(lines.iter().all(|l| l.sport >= 10_000 && (100..10_000).contains(&l.dport)), "{}: not ns-3's port numbering", d.display());
    }
}

/// `config.txt` (the test data) with `edits` applied, written to a temporary folder beside
/// copies of its topology and flow files, and loaded as `rnicsim run` loads it.
fn load_edited(edits: &[(&str, &str)], topology: Option<&str>) -> (Result<LoadedScenario, rnicsim::scenario::ScenarioError>, String, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from) || from.is_empty(), "{from} is not in config.txt");
        text = if from.is_empty() { format!("{text}\n{to}\n") } else { text.replace(from, to) };
    }
    let topo = topology.map_or_else(|| std::fs::read_to_string(data().join("topology.txt")).unwrap(), String::from);
    std::fs::write(tmp.path().join("topology.txt"), topo).unwrap();
    std::fs::copy(data().join("flow.txt"), tmp.path().join("flow.txt")).unwrap();
    let text = text.replace("TOPOLOGY_FILE ", &format!("TOPOLOGY_FILE {}/", tmp.path().display())).replace("FLOW_FILE ", &format!("FLOW_FILE {}/", tmp.path().display()));
    let path = tmp.path().join("config.txt");
    std::fs::write(&path, &text).unwrap();
    (LoadedScenario::from_file(&path), text, tmp)
}

fn line_of(text: &str, key: &str) -> Option<usize> {
    text.lines().enumerate().filter(|(_, l)| l.starts_with(&format!("{key} "))).last().map(|(i, _)| i + 1)
}

#[test]
fn ns3_keys_mean_what_the_scratch_programs_make_of_them() {
    // Found by exploring with configs the shipped ones do not cover.
    // HAS_WIN 1 with VAR_WIN 0: HPCC sets only the rate and the window stays at maxBdp
    // (`GetWin`); HPCC's own window (rate × T) would cap the bytes in flight as VAR_WIN 1 does.
    let (l, ..) = load_edited(&[("VAR_WIN 1", "VAR_WIN 0"), ("CC_MODE 1", "CC_MODE 3")], None);
    let s = l.unwrap().scenario;
    let rnicsim::nic::cc::CcSpec::Hpcc(h) = &s.nic.cc else { panic!("CC_MODE 3 is HPCC") };
    assert_eq!(s.nic.cc_window, Some(rnicsim::nic::CcWindow { bytes: None, with_rate: false, per_pair: false }));
    assert!(!h.window, "{h:?}");
    // LINK_DOWN: whole microseconds after the flows' start (2 s, or FLOWGEN_START_TIME), not
    // seconds: 20 µs was read as 20 s and never happened. Routes are recomputed at once, as
    // `TakeDownLink` does.
    let (l, ..) = load_edited(&[("LINK_DOWN 0 0 0", "LINK_DOWN 20 4 5")], None);
    let s = l.unwrap().scenario;
    let e = &s.link_events;
    assert_eq!((e.len(), e[0].at, e[0].between), (1, Time::from_us(2_000_020), [4, 5]));
    assert_eq!(s.routing.recompute_delay, Time::ZERO);
    let (l, ..) = load_edited(&[("LINK_DOWN 0 0 0", "FLOWGEN_START_TIME 1.5\nLINK_DOWN 20 4 5")], None);
    assert_eq!(l.unwrap().scenario.link_events[0].at, Time::from_us(1_500_020));
    let (l, text, _t) = load_edited(&[("LINK_DOWN 0 0 0", "LINK_DOWN 0.5 4 5")], None);
    let e = l.err().expect("a fractional microsecond count is refused");
    assert_eq!((e.line, e.key.as_deref()), (line_of(&text, "LINK_DOWN"), Some("LINK_DOWN")), "{e}");
    // An ECN map error names the map at fault, at its own line.
    for (edit, key) in [
        (("KMAX_MAP 2 25000000000 400 100000000000 1600", "KMAX_MAP 1 25000000000 400"), "KMAX_MAP"),
        (("KMAX_MAP 2 25000000000 400 100000000000 1600", "KMAX_MAP 2 25000000000 abc 100000000000 1600"), "KMAX_MAP"),
        (("PMAX_MAP 2 25000000000 0.2 100000000000 0.2", "PMAX_MAP 2 25000000000 1.5 100000000000 0.2"), "PMAX_MAP"),
    ] {
        let (l, text, _t) = load_edited(&[edit], None);
        let e = l.err().unwrap_or_else(|| panic!("{edit:?} accepted"));
        assert_eq!((e.line, e.key.as_deref()), (line_of(&text, key), Some(key)), "{edit:?}: {e}");
    }
    // Maps without the topology's 100 Gbps: refused, as ns-3 asserts ("must set kmin for each
    // link speed"); before, those ports silently took the default curve.
    let only25 = [
        ("KMAX_MAP 2 25000000000 400 100000000000 1600", "KMAX_MAP 1 25000000000 400"),
        ("KMIN_MAP 2 25000000000 100 100000000000 400", "KMIN_MAP 1 25000000000 100"),
        ("PMAX_MAP 2 25000000000 0.2 100000000000 0.2", "PMAX_MAP 1 25000000000 0.2"),
    ];
    let (l, _, _tmp) = load_edited(&only25, None);
    let l = l.expect("the maps themselves are whole");
    let e = l.topology().err().expect("a link rate without an ECN curve is refused");
    assert!(e.message.contains("100Gbps") && e.key.as_deref().is_some_and(|k| k.ends_with("_MAP") || k == "ENABLE_QCN"), "{e}");
    // A TOML scenario with the commodity NIC keeps the fallback: other rates take kmin/kmax/pmax.
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[switch.ecn]\nper_rate.\"25Gbps\" = { kmin = \"25KB\", kmax = \"100KB\", pmax = 0.2 }\n";
    assert!(LoadedScenario::from_str(toml, "s.toml", Path::new(".")).unwrap().topology().is_ok());
    // HAS_WIN: on unless the config says 0 (both scratch programs' default), and 0 leaves HPCC
    // without a window too (its GetWin is 0; before, HPCC kept its window whatever HAS_WIN said).
    let (l, ..) = load_edited(&[("HAS_WIN 1", "")], None);
    assert_eq!(l.unwrap().scenario.nic.cc_window, Some(rnicsim::nic::CcWindow { bytes: None, with_rate: true, per_pair: false }));
    let (l, ..) = load_edited(&[("HAS_WIN 1", "HAS_WIN 0"), ("CC_MODE 1", "CC_MODE 3")], None);
    let s = l.unwrap().scenario;
    let rnicsim::nic::cc::CcSpec::Hpcc(h) = &s.nic.cc else { panic!("CC_MODE 3 is HPCC") };
    assert!(s.nic.cc_window.is_none() && !h.window);
    let (l, _, _tmp) = load_edited(&[("CC_MODE 1", "CC_MODE 3")], None);
    let l = l.unwrap();
    let rnicsim::nic::cc::CcSpec::Hpcc(h) = &l.scenario.nic.cc else { panic!() };
    assert!(h.window);
    // GLOBAL_T 1: every queue pair's T is the fabric's largest base RTT (`maxRtt`), so a pair
    // on one switch starts from the same window as a pair across two (a BDP of that RTT), and
    // INT_MULTI 1 reads the telemetry in ns-3's units.
    assert!(h.fabric_rtt && h.int_multi == Some(1), "{h:?}");
    let start_window = |l: &LoadedScenario, a: u32, b: u32| {
        let mut w = World::build(l).unwrap();
        let (q, _) = w.connect(a, b).unwrap();
        rnicsim::nic::cc::CongestionControl::window(&w.qps.get(q).cc).unwrap()
    };
    let (near, far) = (start_window(&l, 0, 1), start_window(&l, 0, 2));
    assert_eq!(near, far);
    // HPCC's variants we run one way only are warned of, each on its own line: MULTI_RATE 1
    // (this config's), and SAMPLE_FEEDBACK 1, RATE_BOUND 0 and HAS_WIN 0. FAST_REACT 0 is
    // `fast_react = false` (it was warned of and ran as 1).
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap().replace("CC_MODE 1", "CC_MODE 3");
    let line = |key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let warned = |t: &str| translate(t, "config.txt", &data()).unwrap().warnings.join("\n");
    let w = warned(&text);
    assert!(w.contains(&format!("config.txt:{}: MULTI_RATE 1:", line("MULTI_RATE"))), "{w}");
    assert!(!w.contains("FAST_REACT") && !w.contains("SAMPLE_FEEDBACK") && !w.contains("RATE_BOUND") && !w.contains("HAS_WIN"), "{w}");
    let edited = text.replace("FAST_REACT 1", "FAST_REACT 0").replace("SAMPLE_FEEDBACK 0", "SAMPLE_FEEDBACK 1").replace("RATE_BOUND 1", "RATE_BOUND 0").replace("HAS_WIN 1", "HAS_WIN 0");
    let w = warned(&edited);
    for key in ["SAMPLE_FEEDBACK 1", "RATE_BOUND 0", "HAS_WIN 0"] {
        assert!(w.contains(&format!("config.txt:{}: {key}", line(key.split(' ').next().unwrap()))), "{key}: {w}");
    }
    assert!(!w.contains("FAST_REACT"), "{w}");
    let fast_react = |t: &str| {
        let l = LoadedScenario::from_str(&translate(t, "config.txt", &data()).unwrap().toml, "config.txt", &data()).unwrap();
        let rnicsim::nic::cc::CcSpec::Hpcc(h) = l.scenario.nic.cc else { panic!("HPCC") };
        h.fast_react
    };
    assert!(fast_react(&text) && !fast_react(&edited));
    // DCTCP runs by ns-3's rules (a cut at the first mark, held for a window).
    let l = LoadedScenario::from_str(&translate(&text.replace("CC_MODE 3", "CC_MODE 8"), "config.txt", &data()).unwrap().toml, "config.txt", &data()).unwrap();
    assert!(matches!(l.scenario.nic.cc, rnicsim::nic::cc::CcSpec::Dctcp(p) if p.rules == rnicsim::nic::cc::dctcp::DctcpRules::Ns3));
    // PAUSE_TIME (whole µs, as ns-3's UintegerValue takes it) is the switches' pause; ConWeave's
    // monitor keys, its load label and the unused DATA_RATE and LINK_DELAY are known keys
    // without an equivalent, not unknown ones.
    // In HPCC's config PAUSE_TIME changes nothing (its NIC holds a PAUSE until RESUME), and is
    // said.
    let t = format!("{text}\nPAUSE_TIME 7.9\nVOQ_MON_FILE voq.txt\nUPLINK_MON_FILE up.txt\nSW_MONITORING_INTERVAL 10000\nLOAD 50\nDATA_RATE 100Gbps\nLINK_DELAY 1000ns\n");
    let hpcc = translate(&t, "config.txt", &data()).unwrap();
    let l = LoadedScenario::from_str(&hpcc.toml, "config.txt", &data()).unwrap();
    assert_eq!(l.scenario.switch.pfc.pause_time, None);
    assert!(hpcc.warnings.iter().any(|w| w.contains("PAUSE_TIME has no effect")), "{:?}", hpcc.warnings);
    let tr = translate(&format!("{t}CONWEAVE_TX_EXPIRY_TIME 1000\n"), "config.txt", &data()).unwrap();
    let l = LoadedScenario::from_str(&tr.toml, "config.txt", &data()).unwrap();
    assert_eq!(l.scenario.switch.pfc.pause_time, Some(rnicsim::units::Time::from_us(7)));
    let w = tr.warnings.join("\n");
    assert!(!w.contains("unknown keys") && w.contains("VOQ_MON_FILE") && w.contains("LINK_DELAY"), "{w}");
    // ns-3's INT header's bytes by CC_MODE: HPCC's five hops, TIMELY's timestamp, else none.
    for (mode, bytes) in [(3, 42), (7, 8), (8, 0), (1, 0)] {
        let t = text.replace("CC_MODE 3", &format!("CC_MODE {mode}"));
        let l = LoadedScenario::from_str(&translate(&t, "config.txt", &data()).unwrap().toml, "config.txt", &data()).unwrap();
        assert_eq!(l.scenario.nic.telemetry_bytes, bytes, "CC_MODE {mode}");
    }
    // A key given twice is said, with both lines (ns-3 takes the last, and so do we).
    let twice = format!("{text}\nCC_MODE 1\n");
    let w = warned(&twice);
    assert!(w.contains(&format!("config.txt:{}: CC_MODE is given again (line {} gave it first)", twice.lines().count(), line("CC_MODE"))), "{w}");
    let rnicsim::nic::cc::CcSpec::Dcqcn(_) = LoadedScenario::from_str(&translate(&twice, "config.txt", &data()).unwrap().toml, "config.txt", &data()).unwrap().scenario.nic.cc else { panic!("the last CC_MODE stands") };
    // Of a variant given twice only the last line counts: MULTI_RATE 1 then 0 runs as ns-3's 0.
    let w = warned(&format!("{text}\nMULTI_RATE 1\nMULTI_RATE 0\n"));
    assert!(!w.contains("MULTI_RATE 1:") && w.contains("MULTI_RATE is given again"), "{w}");
    assert!(!fast_react(&format!("{text}\nFAST_REACT 1\nFAST_REACT 0\n")));
    // Under DCQCN only RATE_BOUND matters.
    let w = warned(&edited.replace("CC_MODE 3", "CC_MODE 1"));
    assert!(w.contains("RATE_BOUND 0") && !w.contains("FAST_REACT") && !w.contains("MULTI_RATE") && !w.contains("HAS_WIN 0"), "{w}");
    // GLOBAL_T 0: each pair's own RTT, and the in-flight cap is the pair's own BDP.
    let (l, _, _tmp0) = load_edited(&[("CC_MODE 1", "CC_MODE 3"), ("GLOBAL_T 1", "GLOBAL_T 0")], None);
    let l = l.unwrap();
    let rnicsim::nic::cc::CcSpec::Hpcc(h) = &l.scenario.nic.cc else { panic!() };
    assert!(!h.fabric_rtt && l.scenario.nic.cc_window.is_some_and(|w| w.per_pair));
    let (near0, far0) = (start_window(&l, 0, 1), start_window(&l, 0, 2));
    assert_eq!(far0, far);
    assert!(near0 * 10 < far0 * 7, "one switch's RTT against two's: {near0} vs {far0}");
    // L2_BACK_TO_ZERO 1 (back to the L2 chunk's start) is what is not modelled, not 0.
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    let t = translate(&text.replace("L2_BACK_TO_ZERO 0", "L2_BACK_TO_ZERO 1"), "config.txt", &data()).unwrap();
    assert!(t.warnings.iter().any(|w| w.contains("L2_BACK_TO_ZERO 1") && w.contains("never completes")), "{:?}", t.warnings);
    // L2_ACK_INTERVAL counts bytes: past a flow's first 4 bytes ns-3 ACKs every packet, and so
    // does the translation (it ACKed every 4th packet), with a warning.
    let (l, _, _tmp) = load_edited(&[("L2_ACK_INTERVAL 1", "L2_ACK_INTERVAL 4")], None);
    let l = l.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(l.scenario.nic.ack_interval, 1);
    assert!(l.warnings.iter().any(|w| w.contains("L2_ACK_INTERVAL 4 counts bytes")), "{:?}", l.warnings);
    let (l, _, _tmp) = load_edited(&[], None);
    let l = l.unwrap_or_else(|e| panic!("{e}"));
    assert!(!l.warnings.iter().any(|w| w.contains("L2_ACK_INTERVAL")), "{:?}", l.warnings);
    // A topology file's own error rate wins over ERROR_RATE_PER_LINK (ns-3 takes the file's
    // when above 0); before, the larger of the two.
    let topo = std::fs::read_to_string(data().join("topology.txt")).unwrap().replacen("0 4 100Gbps 1000ns 0", "0 4 100Gbps 1000ns 0.0001", 1);
    let (l, _, _tmp) = load_edited(&[("ERROR_RATE_PER_LINK 0.0000", "ERROR_RATE_PER_LINK 0.01")], Some(&topo));
    let t = l.unwrap().topology().unwrap();
    assert_eq!(t.links.iter().map(|l| l.loss).collect::<Vec<_>>(), [0.0001, 0.01, 0.01, 0.01, 0.01]);
}

#[test]
fn inputs_missing_from_the_working_directory_are_read_beside_the_config() {
    // ns-3 resolves TOPOLOGY_FILE and FLOW_FILE against its working directory; run from
    // elsewhere (`rnicsim validate scenarios/ns3/x/config.txt` from the checkout's root), every
    // shipped config failed at TOPOLOGY_FILE. Not found there, they are read beside the config.
    let exp = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(exp.path().join("topo.txt"), "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n").unwrap();
    std::fs::write(exp.path().join("flow.txt"), "1\n0 1 3 100 1000 2.0\n").unwrap();
    let config = exp.path().join("config.txt");
    let text = "TOPOLOGY_FILE topo.txt\nFLOW_FILE flow.txt\nSIMULATOR_STOP_TIME 2.001\nKMIN_MAP 1 100000000000 100\nKMAX_MAP 1 100000000000 400\nPMAX_MAP 1 100000000000 0.2\n";
    let t = rnicsim::scenario::ns3::translate(text, &config.display().to_string(), elsewhere.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.toml.contains(&exp.path().join("topo.txt").display().to_string()), "{}", t.toml);
    assert!(t.toml.contains(&exp.path().join("flow.txt").display().to_string()), "{}", t.toml);
    assert!(t.warnings.iter().any(|w| w.contains("TOPOLOGY_FILE topo.txt is not in the working directory")), "{:?}", t.warnings);
    // Where the working directory has it, that one is read, as ns-3 would.
    std::fs::write(elsewhere.path().join("topo.txt"), "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n").unwrap();
    let t = rnicsim::scenario::ns3::translate(text, &config.display().to_string(), elsewhere.path()).unwrap();
    assert!(t.toml.contains(&elsewhere.path().join("topo.txt").display().to_string()), "{}", t.toml);
}

#[test]
fn a_link_taken_down_loses_only_what_was_on_it() {
    // A 2 × 2 leaf-spine and one 10 MB flow from host 0 to host 2; LINK_DOWN takes the first
    // leaf's link to the spine the flow hashes onto 100 µs in. ns-3 recomputes its routes at
    // that instant, so the flow moves to the other spine, and the go-back-N NAK of the first
    // gap resends what was lost. With routes recomputed 100 µs later (our TOML default) the
    // packets sent meanwhile were lost too, the NAKs of a stalled flow did not come, and the
    // flow waited for ns-3's 4 ms retransmission timeout: 4.87 ms against 1.37.
    let tmp = tempfile::tempdir().unwrap();
    let topo = "8 4 8\n4 5 6 7\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 5 100Gbps 1000ns 0\n3 5 100Gbps 1000ns 0\n4 6 100Gbps 1000ns 0\n4 7 100Gbps 1000ns 0\n5 6 100Gbps 1000ns 0\n5 7 100Gbps 1000ns 0\n";
    std::fs::write(tmp.path().join("topo.txt"), topo).unwrap();
    std::fs::write(tmp.path().join("flow.txt"), "1\n0 2 3 10000000 2.0\n").unwrap();
    let config = |down: &str| {
        format!(
            "TOPOLOGY_FILE topo.txt\nFLOW_FILE flow.txt\nSIMULATOR_STOP_TIME 2.01\nCC_MODE 1\nENABLE_PFC 1\nENABLE_QCN 1\nUSE_DYNAMIC_PFC_THRESHOLD 1\n\
             PACKET_PAYLOAD_SIZE 1000\nBUFFER_SIZE 9\nKMAX_MAP 1 100000000000 400\nKMIN_MAP 1 100000000000 100\nPMAX_MAP 1 100000000000 0.2\n\
             RATE_AI 40Mb/s\nRATE_HAI 100Mb/s\nMIN_RATE 100Mb/s\n{down}\n"
        )
    };
    let fct = |down: &str| {
        let loaded = common::ns3_config(&config(down), tmp.path());
        let w = run(&loaded);
        let s = rnicsim::output::summary::Summary::of(&w, "ld");
        let f = &w.apps.flows.records;
        assert_eq!(f.len(), 1);
        (f[0].fct().expect("the flow finishes"), s.rdma.timeouts, s.drops_link_down)
    };
    let (alone, ..) = fct("");
    // Which spine the flow's hash picks: take that one down.
    let (with_6, to_6, lost_6) = fct("LINK_DOWN 100 4 6");
    let (with_7, to_7, lost_7) = fct("LINK_DOWN 100 4 7");
    let ((down, timeouts, lost), (_, _, other)) = if lost_6 > 0 { ((with_6, to_6, lost_6), (with_7, to_7, lost_7)) } else { ((with_7, to_7, lost_7), (with_6, to_6, lost_6)) };
    assert!(lost > 0 && other == 0, "{lost_6} {lost_7}");
    assert_eq!(timeouts, 0, "the loss is recovered without a timeout");
    assert!(down < alone + Time::from_us(600), "{down} against {alone} alone");
}

#[test]
fn keys_a_config_leaves_out_take_the_scratch_programs_defaults() {
    // Found by a helper: a config without ALPHA_RESUME_INTERVAL ran with our 1 µs where ns-3
    // takes its program's 55, and so on for the other keys below.
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    let without = |keys: &[&str], extra: &str| {
        let kept: String = text.lines().filter(|l| !keys.iter().any(|k| l.starts_with(&format!("{k} ")))).map(|l| format!("{l}\n")).collect();
        translate(&format!("{kept}{extra}"), "config.txt", &data()).unwrap_or_else(|e| panic!("{e}"))
    };
    let keys = ["ALPHA_RESUME_INTERVAL", "FAST_RECOVERY_TIMES", "BUFFER_SIZE", "ACK_HIGH_PRIO", "RATE_AI", "MULTI_RATE", "CC_MODE"];
    let t = without(&keys, "CC_MODE 3\n");
    let doc: toml::Table = toml::from_str(&t.toml).unwrap();
    let get = |path: &str| path.split('.').try_fold(toml::Value::Table(doc.clone()), |v, k| v.get(k).cloned()).unwrap_or_else(|| panic!("{path} in {}", t.toml));
    // HPCC's third.cc: alpha_resume_interval = 55, fast_recovery_times = 5, buffer_size = 16,
    // ack_high_prio = 0 (ACKs in the data class), multi_rate = true (not modelled: said).
    assert_eq!(get("nic.cc.hpcc.int_multi").as_integer(), Some(1));
    assert_eq!(get("switch.buffer").as_str(), Some("16777216B"));
    assert_eq!(get("nic.ack_priority").as_str(), Some("data"));
    let w = t.warnings.join("\n");
    assert!(w.contains("MULTI_RATE is not in the config, so ns-3 takes its default, 1") && w.contains("RATE_AI (none in ns-3"), "{w}");
    let t = without(&keys, "CC_MODE 1\n");
    let doc: toml::Table = toml::from_str(&t.toml).unwrap();
    let dcqcn = doc["nic"]["cc"]["dcqcn"].as_table().unwrap();
    assert_eq!((dcqcn["alpha_interval"].as_str(), dcqcn["fast_recovery"].as_integer()), (Some("55us"), Some(5)));
    // ConWeave's fork: fast_recovery_times = 1, rp_timer = 300; its ACK priority is its own
    // (no key to take), and its buffer must be given (its default is 0 MiB: refused without).
    let t = without(&[&keys[..], &["RP_TIMER"]].concat(), "CC_MODE 1\nCONWEAVE_TX_EXPIRY_TIME 1000\nBUFFER_SIZE 9\n");
    let doc: toml::Table = toml::from_str(&t.toml).unwrap();
    let dcqcn = doc["nic"]["cc"]["dcqcn"].as_table().unwrap();
    assert_eq!((dcqcn["fast_recovery"].as_integer(), dcqcn["increase_timer"].as_str()), (Some(1), Some("300us")));
    assert!(doc["nic"].get("ack_priority").is_none(), "{}", t.toml);
    let kept: String = text.lines().filter(|l| !l.starts_with("BUFFER_SIZE ")).map(|l| format!("{l}\n")).collect();
    let e = translate(&format!("{kept}CONWEAVE_TX_EXPIRY_TIME 1000\n"), "config.txt", &data()).err().expect("refused").to_string();
    assert!(e.contains("BUFFER_SIZE") && e.contains("default is 0"), "{e}");
    // Every key given: nothing taken from the defaults, nothing said of them.
    let t = without(&[], "");
    assert!(!t.warnings.join("\n").contains("not in the config"), "{:?}", t.warnings);
}

/// A config on `topology` with `flows` (ns-3 flow-file lines after the count), `extra` keys
/// appended, written beside its inputs in a temporary folder and loaded as `rnicsim run` does.
fn small_config(topology: &str, flows: &[&str], extra: &str) -> (LoadedScenario, Vec<String>, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("t.txt"), topology).unwrap();
    std::fs::write(tmp.path().join("f.txt"), format!("{}\n{}\n", flows.len(), flows.join("\n"))).unwrap();
    let text = format!(
        "TOPOLOGY_FILE t.txt\nFLOW_FILE f.txt\nSIMULATOR_STOP_TIME 2.01\nCC_MODE 1\nENABLE_PFC 1\nBUFFER_SIZE 4\nRATE_AI 40Mb/s\nRATE_HAI 100Mb/s\nMIN_RATE 100Mb/s\nEWMA_GAIN 0.00390625\nRP_TIMER 300\nHAS_WIN 1\nVAR_WIN 0\nGLOBAL_T 1\nACK_HIGH_PRIO 1\nENABLE_QCN 0\nPACKET_PAYLOAD_SIZE 1000\nKMAX_MAP 2 25000000000 400 100000000000 400\nKMIN_MAP 2 25000000000 100 100000000000 100\nPMAX_MAP 2 25000000000 0.2 100000000000 0.2\n{extra}\n"
    );
    let warnings = translate(&text, "config.txt", tmp.path()).unwrap().warnings;
    (common::ns3_config(&text, tmp.path()), warnings, tmp)
}

/// Two hosts on switch 3 at 100 Gbps, one on switch 4, the switches joined at 25 Gbps.
const CORE_SLOWER: &str = "5 2 4\n3 4\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n3 4 25Gbps 1000ns 0\n";

#[test]
fn windows_are_bdps_at_the_paths_slowest_link_as_ns3s_pairbdp() {
    // ns-3 (`CalculateRoute`; the pairBdp loop of `third.cc` / `network-load-balance.cc`):
    // pairRtt = 2 × delay + one 1000 B payload per hop, pairBdp = pairRtt × the least link
    // rate on the path, maxBdp the largest. Hosts 0 and 1 (one switch, 100 Gbps): 4,160 ns,
    // 52,000 B; 0 and 2 (across the 25 Gbps link): 6,480 ns, 20,250 B. maxBdp was taken at
    // the hosts' 100 Gbps over the longest RTT (81 KB), and GLOBAL_T 0's pair window too.
    let (l, _, _tmp) = small_config(CORE_SLOWER, &["0 2 3 100 1000000 2.0"], "");
    let mut w = World::build(&l).unwrap();
    assert_eq!(w.nic_spec.cc_window.and_then(|c| c.bytes), Some(rnicsim::units::Bytes(52_000)));
    w.run(|_| true);
    // The first window leaves at 100 Gbps into the 25 Gbps link, which drains a quarter of it
    // meanwhile: the queue peaks at 3/4 of 52 packets, 39 of ns-3's 1,048 B (3/4 of 81
    // before: 66.9 KB).
    let q = w.ports.iter().map(|p| p.counters.max_queue_bytes).max().unwrap();
    assert_eq!(q, 39 * 1048, "bottleneck queue {q} B");
    let (l, _, _tmp) = small_config(CORE_SLOWER, &["0 2 3 100 1000000 2.0"], "GLOBAL_T 0");
    let mut w = World::build(&l).unwrap();
    let (near, _) = w.connect(0, 1).unwrap();
    let (far, _) = w.connect(0, 2).unwrap();
    let window = |q: u32| rnicsim::nic::transport::window_packets(&w.nic_spec, w.nics[0].line_rate, w.qps.get(q));
    // 52,000 B and 20,250 B in 1000 B packets (53 and 82 before).
    assert_eq!((window(near), window(far)), (Some(52), Some(21)));
}

#[test]
fn a_lone_flow_takes_ns3s_fct_and_ideal_to_the_nanosecond() {
    // Hosts 0 and 1 on one switch, 100 Gbps links of 1 µs; one 10,000 B flow (ten 1000 B
    // payloads), nothing else, no marks. Worked by hand from ns-3's rules (HPCC's and
    // ConWeave's `QbbNetDevice::TransmitStart`, `RdmaHw::GetNxtPacket`, `RdmaHw::ReceiveUdp`):
    // - DCQCN: a data packet is 1000 + 48 B, 83 ns on the wire (83.84 truncated); the ten
    //   leave back to back, the last done at 830 ns, through the switch (no queue: it forwards
    //   each as the next arrives) at 1,830 + 83, at the receiver at 2,913; its ACK, 60 B, takes
    //   4 ns a hop: back at 2,913 + 4 + 1,000 + 4 + 1,000 = 4,921 ns.
    // - HPCC: 42 B of INT on data (1,090 B, 87 ns) and ACKs (88 B, 7 ns; ConWeave's 94 B, 7
    //   ns): 10 × 87 + 1,000 + 87 + 1,000 + 7 + 1,000 + 7 + 1,000 = 4,971 ns.
    // - The ideal (`qp_finish`): pairRtt 2 × 2,000 + 2 × 80 = 4,160 ns, plus 10,000 + 10 × 48
    //   B at 100 Gbps, 838 ns: 4,998 ns either way.
    // HPCC's own ns-3 (9f4be2a, built here) printed 4,921 and 4,971 against an ideal of 4,998
    // for this experiment. With RoCEv2's 62 B headers timed to the picosecond we had 4,947 and
    // 4,991, ideal 5,010.
    let topo = "3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1000ns 0\n";
    for (cc, fork, fct) in [("CC_MODE 1", "", 4_921), ("CC_MODE 3", "", 4_971), ("CC_MODE 3", "CONWEAVE_TX_EXPIRY_TIME 1000", 4_971)] {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("t.txt"), topo).unwrap();
        std::fs::write(tmp.path().join("f.txt"), "1\n0 1 3 100 10000 2.0\n").unwrap();
        let text = format!(
            "TOPOLOGY_FILE t.txt\nFLOW_FILE f.txt\nSIMULATOR_STOP_TIME 2.01\n{cc}\nENABLE_PFC 1\nBUFFER_SIZE 4\nRATE_AI 40Mb/s\nRATE_HAI 100Mb/s\nMIN_RATE 100Mb/s\nHAS_WIN 1\nVAR_WIN 1\n\
             GLOBAL_T 1\nACK_HIGH_PRIO 1\nENABLE_QCN 1\nPACKET_PAYLOAD_SIZE 1000\nKMAX_MAP 1 100000000000 400\nKMIN_MAP 1 100000000000 100\nPMAX_MAP 1 100000000000 0.2\n{fork}\n"
        );
        let w = run(&common::ns3_config(&text, tmp.path()));
        let f = &w.apps.flows.records;
        assert_eq!(f.len(), 1);
        // (The `ns3` profile's PCIe moves anything in a picosecond: a few of them show.)
        let got = f[0].fct().expect("the flow finishes");
        assert_eq!((got.0 / 1000, f[0].ideal), (fct, Time::from_ns(4_998)), "{cc} {fork}: {got}");
    }
}

#[test]
fn flows_start_when_ns3_starts_them_to_the_nanosecond() {
    use rnicsim::host::flow_file::parse_flow_file_with_rest;
    use rnicsim::scenario::schema::StartTimes;
    // ns-3 takes a start of 2.000000171 s as the double nearest it, 2.00000017099999…, cut
    // down to whole ns: 2,000,000,170 ns (and 2.000000642 s at 641 ns, as HPCC's ns-3 prints
    // that flow of `hpcc-ls64-dcqcn`). Read as written, rounded, such a flow started 1 ns
    // late, as did about half the flows of every reference.
    let (l, _, _tmp) = small_config(CORE_SLOWER, &["0 1 3 100 1000 2.000000171", "1 0 3 100 1000 2.000000642"], "");
    assert_eq!(l.scenario.flows[0].start_times, StartTimes::Ns3);
    let w = run(&l);
    let starts: Vec<u64> = w.apps.flows.records.iter().map(|r| r.start.0).collect();
    assert_eq!(starts, [2_000_000_170_000, 2_000_000_641_000]);
    // Every start of an HPCC and a ConWeave reference is the one ns-3's own FCT file prints.
    for name in ["hpcc-ls64-dcqcn", "fbhdp50-dcqcn"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3").join(name);
        let text = std::fs::read_to_string(dir.join("flow.txt")).unwrap();
        let theirs: std::collections::BTreeSet<(u32, u32, u64, u64)> = ns3_fct(&dir).iter().map(|f| (f.src, f.dst, f.size, f.start_ns)).collect();
        let same = |starts: StartTimes| {
            let (flows, _) = parse_flow_file_with_rest(&text, starts, rnicsim::scenario::schema::EmptyFlows::Refuse).unwrap();
            flows.iter().filter(|f| theirs.contains(&(f.src, f.dst, f.size, f.start.0 / 1000))).count() as f64 / flows.len() as f64
        };
        assert_eq!(same(StartTimes::Ns3), 1.0, "{name}");
        let exact = same(StartTimes::Exact);
        assert!(exact < 0.6, "{name}: {exact} rounded alike");
    }
}

#[test]
fn data_classes_share_a_switch_port_round_robin_as_ns3s_queues() {
    // Hosts 0 and 1 each send 2 MB to host 2 at once, one flow in class 1, the other in class
    // 3. ns-3's switches serve queue 0 first and the others a packet each in turn
    // (`BEgressQueue::DoDequeueRR`), so the two share host 2's link and finish together, at
    // about twice one flow's time; served by strict priority (as before) the class-1 flow
    // finished at its own ideal, 170 us, and the other at 340 (found by a helper).
    let star = "4 1 3\n3\n0 3 100Gbps 1000ns 0\n1 3 100Gbps 1000ns 0\n2 3 100Gbps 1000ns 0\n";
    let (l, _, _tmp) = small_config(star, &["0 2 1 100 2000000 2.0", "1 2 3 100 2000000 2.0"], "");
    assert_eq!(l.scenario.switch.service, rnicsim::scenario::schema::ServiceKind::RoundRobin);
    let mut w = World::build(&l).unwrap();
    w.run(|_| true);
    let fct: Vec<f64> = w.apps.flows.records.iter().map(|r| r.fct().expect("done").0 as f64 / 1e6).collect();
    assert_eq!(fct.len(), 2);
    let (a, b) = (fct[0].min(fct[1]), fct[0].max(fct[1]));
    assert!(a > 0.9 * b && a > 300.0, "{fct:?} us");
}

#[test]
fn irns_window_is_the_fabrics_maxbdp_as_ns3s_irnbdp() {
    // ConWeave's fork gives every queue pair one IRN window, `IrnBdp` (its topo2bdpMap: 104,000
    // B for this leaf-spine, asserted equal to maxBdp; `RdmaQueuePair::CanIrnTransmit`); we
    // took each pair's own BDP, about half that for two hosts on one leaf.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3/fbhdp50-irn");
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let flows: String = (1..=8).map(|h| format!("{h} 0 3 2000000 2.0\n")).collect();
    std::fs::write(tmp.path().join("in.txt"), format!("8\n{flows}")).unwrap();
    let text = text.replace("FLOW_FILE ../fbhdp50-dcqcn/flow.txt", &format!("FLOW_FILE {}", tmp.path().join("in.txt").display()));
    let l = common::ns3_config(&text, &dir);
    let mut w = World::build(&l).unwrap();
    assert_eq!(w.nic_spec.window, Some(rnicsim::units::Bytes(104_000)));
    w.run(|_| true);
    // Eight same-leaf senders into host 0, 104 packets each in flight: about 8 × 104 packets
    // less the pipe queue at host 0's port (398 KB with the pairs' own BDPs).
    let q = w.ports.iter().map(|p| p.counters.max_queue_bytes).max().unwrap();
    assert!(q > 700_000, "incast queue {q} B");
    // The commodity NIC keeps the pair's own BDP as its default.
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[nic]\nrecovery = \"selective_repeat\"\n";
    let w = World::build(&LoadedScenario::from_str(toml, "s.toml", Path::new(".")).unwrap()).unwrap();
    assert_eq!(w.nic_spec.window, None);
}

#[test]
fn irn_under_pfc_does_not_time_out_as_in_conweaves_fork() {
    // `RdmaHw::HandleTimeout` returns at once for an IRN queue pair when the NIC's QbbEnabled
    // (ENABLE_PFC) is set. 21 senders of 3 MB into host 0 under PFC (no ECN), and a 3-packet
    // flow 100 µs later that waits behind their pauses past IRN's 100 µs RTO_low: 3
    // retransmits and 1 timeout; none in ns-3.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3/fbhdp50-irn");
    let text = std::fs::read_to_string(dir.join("config.txt")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let senders = [16, 32, 48, 64, 80, 96, 112, 17, 33, 49, 65, 81, 97, 113, 18, 34, 50, 66, 82, 98, 114];
    let flows: String = senders.iter().map(|h| format!("{h} 0 3 3000000 2.0\n")).collect();
    std::fs::write(tmp.path().join("in.txt"), format!("{}\n{flows}19 0 3 3000 2.0001\n", senders.len() + 1)).unwrap();
    let text = text.replace("FLOW_FILE ../fbhdp50-dcqcn/flow.txt", &format!("FLOW_FILE {}", tmp.path().join("in.txt").display())).replace("ENABLE_PFC 0", "ENABLE_PFC 1").replace("ENABLE_QCN 1", "ENABLE_QCN 0");
    let l = common::ns3_config(&text, &dir);
    assert!(l.scenario.switch.pfc.enabled && l.scenario.nic.rto_inert);
    // The run folder's scenario.toml keeps it: run again, it behaves the same.
    let again = LoadedScenario::from_str(&l.resolved_toml(), "scenario.toml", &dir).unwrap();
    assert!(again.scenario.nic.rto_inert && again.scenario.nic.rto == l.scenario.nic.rto);
    let w = run(&l);
    let (timeouts, resent): (u64, u64) = (w.nics.iter().map(|n| n.timeouts).sum(), w.nics.iter().map(|n| n.retransmits).sum());
    assert_eq!((timeouts, resent), (0, 0));
    assert_eq!(w.apps.flows.records.iter().filter(|r| r.fct().is_some()).count(), senders.len() + 1);
    // Without PFC, IRN's timeouts stand; and a scenario's own nic.rto is left alone.
    let l = common::ns3_config(&text.replace("ENABLE_PFC 1", "ENABLE_PFC 0"), &dir);
    assert!(!l.scenario.nic.rto_inert);
    let toml = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n[switch.pfc]\nenabled = true\n[nic]\nprofile = \"ns3\"\nrecovery = \"selective_repeat\"\nrto = \"320us\"\n";
    assert!(!LoadedScenario::from_str(toml, "s.toml", Path::new(".")).unwrap().scenario.nic.rto_inert);
}

#[test]
fn simulator_stop_time_is_no_key_of_conweaves_fork() {
    // network-load-balance.cc's reader has no SIMULATOR_STOP_TIME: it skips the key (as any it
    // does not know) and runs until every flow has finished, at most FLOWGEN_STOP_TIME + 10 s.
    // It was obeyed: a config giving 2.00005 s stopped with none of its flows finished.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/ns3/fbhdp50-irn");
    let text = format!("{}SIMULATOR_STOP_TIME 2.00005\n", std::fs::read_to_string(dir.join("config.txt")).unwrap());
    let t = translate(&text, "config.txt", &dir).unwrap();
    let no = text.lines().count();
    assert!(t.warnings.iter().any(|w| w.starts_with(&format!("config.txt:{no}: SIMULATOR_STOP_TIME is not a key of ConWeave's"))), "{:?}", t.warnings);
    let l = common::ns3_config(&text, &dir);
    assert!(l.scenario.stop_when_flows_done && l.scenario.duration == Time::from_ms(12_005));
    // Without FLOWGEN_STOP_TIME the fork's default, 2.5 s, is the flows' end.
    let l = common::ns3_config(&text.replace("FLOWGEN_STOP_TIME", "# FLOWGEN_STOP_TIME"), &dir);
    assert!(l.scenario.stop_when_flows_done && l.scenario.duration == Time::from_ms(12_500));
    // HPCC's third.cc (no CONWEAVE_* keys) reads it.
    let l = common::ns3_config(&std::fs::read_to_string(data().join("config.txt")).unwrap(), &data());
    assert!(!l.scenario.stop_when_flows_done);
}

#[test]
fn a_second_link_between_two_switches_is_warned_of_at_its_line() {
    // ns-3 keeps one interface per neighbour (`nbr2if`, the later line's) and routes over it
    // alone; we spread over both links, so the file's later line is named.
    let topo = format!("{}3 4 25Gbps 1000ns 0\n", CORE_SLOWER.replacen("5 2 4", "5 2 5", 1));
    let (_, w, _tmp) = small_config(&topo, &["0 2 3 100 1000000 2.0"], "");
    let w = w.join("\n");
    assert!(w.contains("t.txt:7: switches 3 and 4 are already linked (line 6)"), "{w}");
    let (_, w, _tmp) = small_config(CORE_SLOWER, &["0 2 3 100 1000000 2.0"], "");
    assert!(!w.join("\n").contains("already linked"));
}

#[test]
fn keys_ns3_reads_otherwise_are_read_or_refused_as_ns3_does() {
    // Found by a helper, each against the scratch programs' source.
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    let with = |key: &str, line: Option<&str>| -> String {
        let mut out: String = text.lines().filter(|l| !l.starts_with(&format!("{key} "))).map(|l| format!("{l}\n")).collect();
        if let Some(l) = line {
            out.push_str(l);
            out.push('\n');
        }
        out
    };
    let toml_of = |t: &str| -> toml::Table { toml::from_str(&translate(t, "config.txt", &data()).unwrap_or_else(|e| panic!("{e}")).toml).unwrap() };
    // L2_ACK_INTERVAL 0, both programs' default, ACKs every packet (it was refused).
    assert_eq!(toml_of(&with("L2_ACK_INTERVAL", Some("L2_ACK_INTERVAL 0")))["nic"]["ack_interval"].as_integer(), Some(1));
    // ConWeave's reader has no ACK_HIGH_PRIO: ACK_HIGH_PRIO 0 there is said and skipped (it
    // put ACKs in the data class).
    let cw = with("ACK_HIGH_PRIO", Some("ACK_HIGH_PRIO 0\nCONWEAVE_TX_EXPIRY_TIME 1000"));
    let t = translate(&cw, "config.txt", &data()).unwrap_or_else(|e| panic!("{e}"));
    assert!(t.warnings.iter().any(|w| w.contains("ACK_HIGH_PRIO is not a key of ConWeave's")), "{:?}", t.warnings);
    assert!(toml::from_str::<toml::Table>(&t.toml).unwrap()["nic"].get("ack_priority").is_none());
    // ConWeave with another congestion control: the fork exits.
    let e = translate(&with("CC_MODE", Some("CC_MODE 3\nLB_MODE 9")), "config.txt", &data()).err().expect("refused");
    assert_eq!(e.key.as_deref(), Some("LB_MODE"), "{e}");
    assert!(e.line.is_some() && e.message.contains("DCQCN only"), "{e}");
    // No flow file: refused (it ran zero flows); no ECN maps: refused, as ns-3 asserts.
    let e = translate(&with("FLOW_FILE", None), "config.txt", &data()).err().expect("refused");
    assert_eq!(e.key.as_deref(), Some("FLOW_FILE"), "{e}");
    let no_maps = with("KMIN_MAP", None).lines().filter(|l| !l.starts_with("KMAX_MAP ") && !l.starts_with("PMAX_MAP ")).map(|l| format!("{l}\n")).collect::<String>();
    let e = translate(&no_maps, "config.txt", &data()).err().expect("refused");
    assert!(e.message.contains("must set kmin for each link speed"), "{e}");
    // A misspelt key is named with its line.
    let t = translate(&format!("{text}CC_MOD 3\n"), "config.txt", &data()).unwrap_or_else(|e| panic!("{e}"));
    let line = text.lines().count() + 1;
    assert!(t.warnings.iter().any(|w| w.contains(&format!("unknown keys, ignored: CC_MOD (line {line})"))), "{:?}", t.warnings);
}

/// The test config copied into a folder of its own with `edit` applied to its text; loaded as
/// a user's `rnicsim run config.txt` loads it (errors and warnings at the config's lines).
fn load_config_edited(edit: impl FnOnce(&str) -> String) -> (tempfile::TempDir, Result<LoadedScenario, rnicsim::scenario::ScenarioError>) {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["topology.txt", "flow.txt"] {
        std::fs::copy(data().join(f), tmp.path().join(f)).unwrap();
    }
    let text = edit(&std::fs::read_to_string(data().join("config.txt")).unwrap());
    std::fs::write(tmp.path().join("config.txt"), &text).unwrap();
    let loaded = LoadedScenario::from_file(&tmp.path().join("config.txt"));
    (tmp, loaded)
}

#[test]
fn keys_only_conweaves_fork_reads_are_applied_and_said_in_an_hpcc_config() {
    // HPCC's third.cc skips ENABLE_PFC, ENABLE_IRN, LB_MODE and FLOWGEN_*; a config without
    // CONWEAVE_* keys that names them ran them without a word (PFC off: 541,669 drops).
    let (_t, loaded) = load_config_edited(|t| format!("{t}ENABLE_PFC 0\nLB_MODE 3\n"));
    let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
    assert!(!loaded.scenario.switch.pfc.enabled, "applied, as ConWeave's fork reads it");
    for key in ["ENABLE_PFC", "LB_MODE"] {
        let said: Vec<_> = loaded.warnings.iter().filter(|w| w.contains(&format!("{key} is a key of ConWeave's"))).collect();
        assert!(said.len() == 1 && said[0].contains("HPCC's ns-3 would run without it"), "{key}: {:?}", loaded.warnings);
    }
    // In a ConWeave config they are its own keys: nothing to say.
    let (_t, loaded) = load_config_edited(|t| format!("{t}ENABLE_PFC 0\nLB_MODE 3\nCONWEAVE_TX_EXPIRY_TIME 1000\n"));
    let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
    assert!(!loaded.warnings.iter().any(|w| w.contains("is a key of ConWeave's")), "{:?}", loaded.warnings);
}

#[test]
fn config_values_are_read_as_ns3_reads_them_and_errors_quote_the_configs_own_words() {
    // BUFFER_SIZE is a whole number of MiB (`uint32_t`): "1.5" is 1 MiB, said; under 1 refused.
    let (_t, loaded) = load_config_edited(|t| t.replace("BUFFER_SIZE 32", "BUFFER_SIZE 1.5"));
    let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.scenario.switch.buffer.0, 1 << 20);
    assert!(loaded.warnings.iter().any(|w| w.contains("BUFFER_SIZE 1.5") && w.contains("1 MiB")), "{:?}", loaded.warnings);
    // Refused, each at its own key, in the config's words: past a uint32_t; under 1 MiB (it
    // suggested TOML's "9MB"); a rate quoted as written (it read "-10Mbps"); a map's rate that
    // is not whole bps (it read "100Gb/sbps", at the translated key). (line written, key, what
    // the message says, what it must not.)
    for (from, to, key, says, not) in [
        ("BUFFER_SIZE 32", "BUFFER_SIZE 99999999999999", "BUFFER_SIZE", "4294967295", None),
        ("BUFFER_SIZE 32", "BUFFER_SIZE 0.0000001", "BUFFER_SIZE", "at least 1 MiB", Some("9MB")),
        ("MIN_RATE 100Mb/s", "MIN_RATE -10Mb/s", "MIN_RATE", "\"-10Mb/s\"", None),
        ("KMIN_MAP 2 25000000000 100 100000000000 400", "KMIN_MAP 2 25Gb/s 100 100Gb/s 400", "KMIN_MAP", "\"25Gb/s\"", Some("bps\"")),
    ] {
        let (_t, e) = load_config_edited(|t| t.replace(from, to));
        let e = e.err().unwrap_or_else(|| panic!("{to} accepted"));
        assert!(e.key.as_deref() == Some(key) && e.message.contains(says) && not.is_none_or(|n| !e.message.contains(n)), "{to}: {e}");
    }
    // No SIMULATOR_STOP_TIME: HPCC's third.cc stops at its default, 3.01 s (it was refused).
    let (_t, loaded) = load_config_edited(|t| t.replace("SIMULATOR_STOP_TIME 2.002", ""));
    assert_eq!(loaded.unwrap_or_else(|e| panic!("{e}")).scenario.duration, Time::from_ms(3010));
    // A first line of words ns-3's reader skips still makes an ns-3 config (it was read as TOML).
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    assert!(is_ns3_config(&format!("// my experiment\n{text}")));
    assert!(!is_ns3_config("// not a config\nname = \"x\"\n"));
    let (_t, loaded) = load_config_edited(|t| format!("// my experiment\n{t}"));
    let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.iter().any(|w| w.contains("//")), "{:?}", loaded.warnings);
}

#[test]
fn an_additive_increase_of_nothing_or_past_the_line_is_warned_at_its_line() {
    let line_of = |text: &str, key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    for (rate, says) in [("0Mb/s", "additive increase of 0"), ("200Gb/s", "above the")] {
        let mut written = String::new();
        let (_t, loaded) = load_config_edited(|t| {
            written = t.replace("RATE_AI 50Mb/s", &format!("RATE_AI {rate}")).replace("RATE_HAI 100Mb/s", "RATE_HAI 0Mb/s");
            written.clone()
        });
        let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
        let at = format!("config.txt:{}", line_of(&written, "RATE_AI"));
        assert!(loaded.warnings.iter().any(|w| w.contains(says) && w.contains(&at)), "{rate}: {:?}", loaded.warnings);
    }
    // The test config's own 50 Mb/s is not warned of.
    let (_t, loaded) = load_config_edited(|t| t.to_string());
    assert!(!loaded.unwrap().warnings.iter().any(|w| w.contains("additive increase")));
}

#[test]
fn a_link_loss_under_hpccs_pause_rule_is_warned_at_the_loss_line() {
    let mut written = String::new();
    let (_t, loaded) = load_config_edited(|t| {
        written = t.replace("ERROR_RATE_PER_LINK 0.0000", "ERROR_RATE_PER_LINK 0.001");
        written.clone()
    });
    let loaded = loaded.unwrap_or_else(|e| panic!("{e}"));
    let line = written.lines().position(|l| l.starts_with("ERROR_RATE_PER_LINK")).unwrap() + 1;
    let w: Vec<_> = loaded.warnings.iter().filter(|w| w.contains("paused for the rest of the run")).collect();
    assert!(w.len() == 1 && w[0].contains(&format!("config.txt:{line}")) && w[0].contains("ERROR_RATE_PER_LINK"), "{w:?}");
}

#[test]
fn listed_flows_left_unfinished_at_the_end_are_said() {
    // Stopped 15 µs in, the test config's first two flows (200 KB, whose bytes alone take 16
    // µs at 100 Gbps, and 1 MB from 10 µs) are under way; the others start later.
    let loaded = common::ns3_config(&std::fs::read_to_string(data().join("config.txt")).unwrap().replace("SIMULATOR_STOP_TIME 2.002", "SIMULATOR_STOP_TIME 2.000015"), &data());
    let w = run(&loaded);
    let said = w.apps.flows.unfinished_listed(&loaded.scenario, w.now);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].0 == "flows[0].file" && said[0].1.contains("2 of the 2 flows of") && said[0].1.contains("started did not finish") && said[0].1.contains("the first is flow 0 (0 → 2, 200000 B"), "{said:?}");
    // Run to its end, every flow finishes: nothing to say.
    let loaded = common::ns3_config(&std::fs::read_to_string(data().join("config.txt")).unwrap(), &data());
    let w = run(&loaded);
    assert!(w.apps.flows.unfinished_listed(&loaded.scenario, w.now).is_empty());
}

#[test]
fn a_topology_files_link_rows_past_its_count_are_said() {
    // One link too few declared: ns-3 reads 4 links and ignores the fifth row, which cut a
    // host off without a word.
    let tmp = tempfile::tempdir().unwrap();
    let topo = std::fs::read_to_string(data().join("topology.txt")).unwrap();
    let mut lines: Vec<&str> = topo.lines().collect();
    let header: Vec<u64> = lines[0].split_whitespace().map(|x| x.parse().unwrap()).collect();
    let short = format!("{} {} {}", header[0], header[1], header[2] - 1);
    lines[0] = &short;
    std::fs::write(tmp.path().join("t.txt"), lines.join("\n") + "\nnotes: src dst rate delay error_rate\n").unwrap();
    let text = "duration = \"10us\"\n[topology.file]\npath = \"t.txt\"\n";
    let loaded = LoadedScenario::from_str(text, "s.toml", tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    let said: Vec<_> = loaded.warnings.iter().filter(|w| w.contains("reads as one more link")).collect();
    let last_link = 2 + header[2] as usize;
    assert!(said.len() == 1 && said[0].contains(&format!("line {last_link} past them")), "{:?}", loaded.warnings);
    // The file as written (its notes after the links): nothing.
    std::fs::write(tmp.path().join("t.txt"), topo + "\nnotes: src dst rate delay error_rate\n").unwrap();
    let loaded = LoadedScenario::from_str(text, "s.toml", tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    assert!(!loaded.warnings.iter().any(|w| w.contains("reads as one more link")), "{:?}", loaded.warnings);
}

/// The warnings containing `needle` that a scenario on the reference topology gives for a flow
/// file of `flows`.
fn flow_file_warnings(flows: &str, needle: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(data().join("topology.txt"), tmp.path().join("topology.txt")).unwrap();
    std::fs::write(tmp.path().join("f.txt"), flows).unwrap();
    let scenario = "duration = \"1ms\"\n[topology.file]\npath = \"topology.txt\"\n[[flows]]\nfile = \"f.txt\"\n";
    let loaded = LoadedScenario::from_str(scenario, "s.toml", tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    loaded.warnings.into_iter().filter(|w| w.contains(needle)).collect()
}

#[test]
fn a_flow_file_mixing_hpccs_and_conweaves_rows_is_said() {
    // Each row runs by its own fields; either ns-3 program would misread the other layout.
    let warned = |flows: &str| flow_file_warnings(flows, "mixes HPCC's six-field rows");
    let w = warned("3\n0 2 3 100 1000 0.000001\n1 3 3 2000 0.000002\n2 0 3 100 1000 0.000003\n");
    assert!(w.len() == 1 && w[0].contains("(line 2 the first)") && w[0].contains("(line 3 the first)"), "{w:?}");
    assert!(warned("2\n0 2 3 100 1000 0.000001\n2 0 3 100 1000 0.000003\n").is_empty());
    assert!(warned("2\n0 2 3 1000 0.000001\n2 0 3 1000 0.000003\n").is_empty());
}

#[test]
fn a_flow_file_whose_rows_go_back_in_time_is_said() {
    // Flows start at their own times here; ns-3 reads rows in order and would schedule a row
    // that starts before the one above it in the past.
    let warned = |flows: &str| flow_file_warnings(flows, "would schedule this one in the past");
    let w = warned("3\n0 2 3 100 1000 0.000001\n1 3 3 100 1000 0.000003\n2 0 3 100 1000 0.000002\n");
    assert!(w.len() == 1 && w[0].contains("line 4 starts at 2us, before line 3"), "{w:?}");
    // Equal starts and rising ones are as ns-3 reads them.
    assert!(warned("3\n0 2 3 100 1000 0.000001\n1 3 3 100 1000 0.000001\n2 0 3 100 1000 0.000002\n").is_empty());
}

#[test]
fn a_flow_of_no_bytes_runs_as_one_byte_in_a_conweave_config_and_is_refused_elsewhere() {
    // ConWeave's fork: `if (target_len == 0) target_len = 1;`. HPCC's would never finish it.
    let flows = "2\n0 2 3 100 0 2.000000\n1 3 3 100 1000 2.000010\n";
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(data().join("topology.txt"), tmp.path().join("topology.txt")).unwrap();
    std::fs::write(tmp.path().join("flow.txt"), flows).unwrap();
    let text = std::fs::read_to_string(data().join("config.txt")).unwrap();
    std::fs::write(tmp.path().join("config.txt"), format!("{text}CONWEAVE_TX_EXPIRY_TIME 1000\n")).unwrap();
    let loaded = LoadedScenario::from_file(&tmp.path().join("config.txt")).unwrap_or_else(|e| panic!("{e}"));
    let w = run(&loaded);
    let sizes: Vec<(u64, bool)> = w.apps.flows.records.iter().map(|r| (r.size, r.fct().is_some())).collect();
    assert_eq!(sizes, [(1, true), (1000, true)]);
    std::fs::write(tmp.path().join("config.txt"), &text).unwrap();
    let e = LoadedScenario::from_file(&tmp.path().join("config.txt")).and_then(|l| World::build(&l).map(|_| ())).err().expect("refused in HPCC's");
    assert!(e.line == Some(2) && e.message.contains("one_byte"), "{e}");
    // In a TOML scenario, the key, and its warning where there is no file.
    let toml = "duration = \"2001ms\"\n[topology.file]\npath = \"topology.txt\"\n[[flows]]\nfile = \"flow.txt\"\nempty = \"one_byte\"\n";
    let loaded = LoadedScenario::from_str(toml, "s.toml", tmp.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run(&loaded).apps.flows.records.iter().map(|r| r.size).collect::<Vec<_>>(), [1, 1000]);
    let cdf = "duration = \"10us\"\n[topology.star]\nhosts = 2\n[[flows]]\ncdf = \"../../data/cdf/FbHdp_distribution.txt\"\nload = 0.1\nempty = \"one_byte\"\n";
    let loaded = LoadedScenario::from_str(cdf, "s.toml", Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.warnings.iter().any(|w| w.contains("flows[0].empty") && w.contains("has no effect")), "{:?}", loaded.warnings);
}
