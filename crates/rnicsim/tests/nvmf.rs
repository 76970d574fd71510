//! NVMe-oF tenants (`[[nvmf]]`): a closed loop of writes per I/O queue, with the data in the
//! command capsule or pulled by the target's READ, against hand-computed bounds.

use rnicsim::host::apps::nvmf::{NvmfSummary, COMMAND_BYTES};
use rnicsim::output::Summary;
use rnicsim::scenario::LoadedScenario;
use rnicsim::wire::roce::{AETH_BYTES, BASE_HEADER_BYTES};
use std::path::Path;

mod common;

/// Tenants `(depth, in_capsule)` of 4 KB writes from host 0 to host 1 at 100 Gbps (no
/// congestion control), measured from 0.5 ms to 2 ms.
fn run(tenants: &[(u32, &str)]) -> Summary {
    let entries: String = tenants
        .iter()
        .enumerate()
        .map(|(i, (d, cap))| format!("[[nvmf]]\nname = \"t{i}\"\ninitiator = 0\ntarget = 1\ndepth = {d}\nin_capsule = \"{cap}\"\nwarmup = \"500us\"\n"))
        .collect();
    let toml = format!("duration = \"2ms\"\n[topology.star]\nhosts = 2\n[links]\nrate = \"100Gbps\"\ndelay = \"100ns\"\n[nic]\nmtu = 4096\n[nic.cc.none]\n{entries}");
    common::run_summary(&LoadedScenario::from_str(&toml, "nvmf.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "nvmf")
}

fn little(t: &NvmfSummary) -> f64 {
    t.kiops * 1e3 * t.latency_mean_us.unwrap() * 1e-6
}

#[test]
fn a_closed_loop_keeps_depth_writes_in_flight_little_s_law() {
    for (depth, cap) in [(1, "4KiB"), (4, "4KiB"), (4, "0B"), (24, "0B")] {
        let s = run(&[(depth, cap)]);
        let t = &s.nvmf[0];
        assert_eq!(t.errors, 0);
        assert!(t.ios > 100, "{t:?}");
        // IOPS × mean latency = writes outstanding.
        assert!((little(t) / depth as f64 - 1.0).abs() < 0.02, "depth {depth} {cap}: {}", little(t));
        assert!((t.gbps - t.kiops * 1e3 * 4096.0 * 8.0 / 1e9).abs() < 1e-9);
    }
    // One write at a time waits a whole round trip: a READ of the data adds another one.
    let (one, pulled) = (run(&[(1, "4KiB")]), run(&[(1, "0B")]));
    assert!(pulled.nvmf[0].latency_mean_us.unwrap() > one.nvmf[0].latency_mean_us.unwrap() + 1.0);
}

#[test]
fn deep_queues_fill_the_link_with_capsules_or_read_responses() {
    // The initiator's link carries, per write: in-capsule, the 64 B command and 4 KB of data in
    // two packets, and the ACK of the target's response; pulled by READ, a 4 KB READ response
    // (with its AETH), the 64 B command, and that ACK. Data rate = 100 Gbps × 4096 / those bytes.
    let (h, aeth) = (BASE_HEADER_BYTES as f64, AETH_BYTES as f64);
    let ack = h + aeth;
    let bound = 100.0 * 4096.0 / (4096.0 + COMMAND_BYTES as f64 + 2.0 * h + ack);
    let g = run(&[(64, "4KiB")]).nvmf[0].gbps;
    assert!((g / bound - 1.0).abs() < 0.005, "{g} vs {bound}");
    let bound = 100.0 * 4096.0 / (4096.0 + h + aeth + COMMAND_BYTES as f64 + h + ack);
    // Depth 16 is latency-bound (16 writes per round of about 14 µs: four WQE round trips
    // over PCIe and two over the wire); depth 64 fills the link. One queue pair carries both
    // the READ responses and the next commands, taking turns: with READ responses strictly
    // first, the commands waited for a whole batch of responses and depth 64 reached 83%.
    let g: Vec<f64> = [16, 64, 128].iter().map(|&d| run(&[(d, "0B")]).nvmf[0].gbps).collect();
    assert!(g[0] < 0.5 * bound, "{g:?} vs {bound}");
    for x in &g[1..] {
        assert!(*x > 0.98 * bound && *x <= 1.005 * bound, "{g:?} vs {bound}");
    }
    // Two equal tenants split it evenly.
    let s = run(&[(32, "4KiB"), (32, "4KiB")]);
    assert!((s.nvmf[0].gbps / s.nvmf[1].gbps - 1.0).abs() < 0.02, "{:?}", s.nvmf);
    assert_eq!(s.nvmf_hosts[0].tenants, 2);
    assert!(s.nvmf_hosts[0].jain.unwrap() > 0.999);
}

#[test]
fn bad_nvmf_keys_are_named() {
    for (bad, key) in [
        ("initiator = 0\ntarget = 0", "nvmf[0].target"),
        ("initiator = 0\ntarget = 1\ndepth = 0", "nvmf[0].depth"),
        ("initiator = 0\ntarget = 1\ndepth = 5000", "nvmf[0].depth"),
        ("initiator = 0\ntarget = 7", "nvmf[0].target"),
        ("initiator = 0\ntarget = 1\nio = \"0B\"", "nvmf[0].io"),
        ("initiator = 0\ntarget = 1\nqueues = 2", "queues"),
        // Data or a capsule larger than each host's registered memory (1 KiB here).
        ("initiator = 0\ntarget = 1\nio = \"2KiB\"\nin_capsule = \"0B\"\n[nic]\nmemory_size = \"1KiB\"", "nvmf[0].io"),
        ("initiator = 0\ntarget = 1\nio = \"512B\"\nin_capsule = \"1000B\"\n[nic]\nmemory_size = \"1KiB\"", "nvmf[0].in_capsule"),
    ] {
        let text = format!("duration = \"1ms\"\n[topology.back_to_back]\n[[nvmf]]\n{bad}\n");
        let e = match LoadedScenario::from_str(&text, "bad.toml", Path::new(".")) {
            Err(e) => e.to_string(),
            Ok(l) => l.topology().err().map(|e| e.to_string()).unwrap_or_else(|| panic!("{bad} accepted")),
        };
        assert!(e.contains(key), "{bad}: {e}");
    }
}

#[test]
fn an_nvmf_tenant_with_nothing_to_measure_is_warned_and_its_packets_count_against_the_limits() {
    let text = "duration = \"200us\"\n[topology.back_to_back]\n[nic.cc.none]\n[[nvmf]]\ninitiator = 0\ntarget = 1\nwarmup = \"1ms\"\n";
    let l = LoadedScenario::from_str(text, "w.toml", Path::new(".")).unwrap();
    assert!(l.warnings.iter().any(|w| w.contains("nvmf[0].warmup") && w.contains("nothing")), "{:?}", l.warnings);
    // 10,000 s of 4 KiB writes at 100 Gbps is about 2.9e10 packets: past the default limit.
    let long = LoadedScenario::from_str(&text.replace("200us", "10000s"), "l.toml", Path::new(".")).unwrap();
    let e = rnicsim::world::World::build(&long).err().expect("refused by [limits]").to_string();
    assert!(e.contains("limits.max_packets"), "{e}");
}

#[test]
fn a_self_timing_scheduler_keeps_the_order_it_timed_a_pulled_queue_in() {
    // Tassel and SE-PIEO time the packets they fetch in the order the queue pair lists them,
    // READ responses first: taking turns with the commands under them mistimed every slot
    // (one 16 KiB queue of depth 64 fell from 93 to 78.8 Gbps). The commodity scheduler takes
    // turns and reaches the wire bound: per write four 4 KiB READ responses, the command
    // and the ACK of the response.
    let (h, aeth) = (BASE_HEADER_BYTES as f64, AETH_BYTES as f64);
    let bound = 100.0 * 16384.0 / (4.0 * (4096.0 + h + aeth) + COMMAND_BYTES as f64 + h + h + aeth);
    let gbps = |sched: &str| {
        let toml = format!("duration = \"2ms\"\n[topology.back_to_back]\n[links]\nrate = \"100Gbps\"\ndelay = \"100ns\"\n[nic]\nmtu = 4096\n[nic.cc.none]\n[nic.scheduler.{sched}]\n[[nvmf]]\ninitiator = 0\ntarget = 1\nio = \"16KiB\"\nin_capsule = \"0B\"\ndepth = 64\nwarmup = \"500us\"\n");
        common::run_summary(&LoadedScenario::from_str(&toml, "pull.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "pull").nvmf[0].gbps
    };
    let commodity = gbps("commodity");
    assert!(commodity > 0.98 * bound && commodity <= 1.005 * bound, "{commodity} vs {bound}");
    for sched in ["tassel", "se_pieo"] {
        let g = gbps(sched);
        assert!(g > 0.93 * bound, "{sched}: {g} vs {bound}");
    }
}
