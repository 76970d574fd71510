//! MP-RDMA (`[nic.cc.mprdma]`, NSDI 2018 §4): one connection spread over many virtual paths by
//! ECMP, its receiver's Δ-bit bitmap never overrun, and the keys it needs checked.

use rnicsim::output::Summary;
use rnicsim::scenario::LoadedScenario;
use std::path::Path;

mod common;

fn run(toml: &str) -> Summary {
    common::run_summary(&LoadedScenario::from_str(toml, "mprdma.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "mprdma")
}

/// Host 1 WRITEs 64 KB messages to host 0 over one queue pair, across 2 leaves and 4 spines
/// joined by 10 Gbps uplinks (hosts at 100 Gbps), switches hashing by ECMP. `nic` is the
/// `[nic]` tables' extra keys.
fn one_connection(nic: &str) -> Summary {
    run(&format!(
        r#"
        duration = "400us"
        [topology.leaf_spine]
        leaves = 2
        spines = 4
        hosts_per_leaf = 1
        uplink_rate = "10Gbps"
        [switch]
        load_balancer = "ecmp"
        [nic]
        mtu = 1000
        {nic}
        [[perftest]]
        test = "write_bw"
        client = 1
        server = 0
        message = "64KB"
        qps = 1
        depth = 4
    "#
    ))
}

/// MP-RDMA over a 64-bit static bitmap; the last packet of each WRITE is not held back, so
/// only the paths limit the rate.
const MPRDMA: &str = "recovery = \"selective_repeat\"\n[nic.cc.mprdma]\n[nic.ordering]\nlayer = \"static\"\nbits = 64\nhold_last_write = false\n";

#[test]
fn one_connection_uses_every_spine_where_a_single_path_is_capped_at_one_uplink() {
    let gbps = |s: &Summary| s.perftest.iter().map(|p| p.completed_gbps).sum::<f64>();
    // A single-path connection hashes onto one 10 Gbps uplink.
    let single = one_connection("[nic.cc.dcqcn]");
    assert!(gbps(&single) < 10.5, "single path: {} Gbps", gbps(&single));
    // MP-RDMA's virtual paths hash onto all four: well beyond one uplink.
    let multi = one_connection(MPRDMA);
    assert!(gbps(&multi) > 2.5 * 10.0, "MP-RDMA: {} Gbps", gbps(&multi));
    // Its sender never has Δ = 64 PSNs outstanding past the oldest unacknowledged one, so the
    // 64-bit bitmap holds every packet that arrives early: nothing is refused or resent.
    let o = multi.ordering.as_ref().expect("ordering in the summary");
    assert!(o.total.sacks > 0, "packets arrive out of order over four paths: {:?}", o.total);
    assert_eq!(o.total.nacks, 0, "{:?}", o.total);
    assert_eq!(multi.rdma.retransmits, 0);
}

#[test]
fn a_delta_wider_than_the_bitmap_overruns_it_and_the_sender_recovers() {
    // With Δ = 256 over a 16-bit bitmap, early packets beyond the bitmap are refused (NACK)
    // and resent; the messages still complete.
    let s = one_connection("recovery = \"selective_repeat\"\n[nic.cc.mprdma]\ndelta = 256\n[nic.ordering]\nlayer = \"static\"\nbits = 16\n");
    let o = s.ordering.as_ref().unwrap();
    assert!(o.total.nacks > 0 && s.rdma.retransmits > 0, "{:?}, {} resent", o.total, s.rdma.retransmits);
    assert!(s.perftest[0].completed_gbps > 15.0, "{}", s.perftest[0].completed_gbps);
}

#[test]
fn delta_packets_are_in_flight_at_most_and_a_delta_bit_bitmap_holds_every_early_one() {
    // Found by exploring: the window was Δ packets of wire size counted in payload MTUs,
    // rounded up, so Δ + 1 were in flight: with Δ = 1 two packets per round trip, and a Δ-bit
    // bitmap refused packets. One 64 KB WRITE stream over a back-to-back link, 1 µs each way:
    // with Δ = 1 one 1000 B packet per round trip.
    let b2b = |delta: u32| {
        run(&format!(
            "duration = \"400us\"\n[topology.back_to_back]\n[links]\ndelay = \"1us\"\n[nic]\nmtu = 1000\nrecovery = \"selective_repeat\"\n[nic.cc.mprdma]\ndelta = {delta}\n\
             [nic.ordering]\nlayer = \"static\"\nbits = {delta}\nhold_last_write = false\n\
             [[perftest]]\ntest = \"write_bw\"\nclient = 1\nserver = 0\nmessage = \"64KB\"\ndepth = 4\nwarmup = \"100us\"\n"
        ))
    };
    let (one, two) = (b2b(1), b2b(2));
    let rtt_us = |s: &Summary| 1000.0 * 8.0 / (s.perftest[0].gbps * 1e3);
    // One packet per round trip: the round trip is two 1 µs hops plus serialization and the
    // NIC's processing, under 4 µs; with two in flight the packet time would halve.
    let per_packet = rtt_us(&one);
    assert!(per_packet > 2.0 && per_packet < 4.0, "Δ = 1: a packet every {per_packet} µs");
    assert!((rtt_us(&two) / per_packet - 0.5).abs() < 0.02, "Δ = 2: {} µs against {per_packet}", rtt_us(&two));
    // Over four spines the paths reorder; Δ = bits = 8 refuses nothing.
    let s = one_connection("recovery = \"selective_repeat\"\n[nic.cc.mprdma]\ndelta = 8\n[nic.ordering]\nlayer = \"static\"\nbits = 8\nhold_last_write = false\n");
    let o = s.ordering.as_ref().unwrap();
    assert!(o.total.sacks > 0, "{:?}", o.total);
    assert_eq!((o.total.nacks, s.rdma.retransmits), (0, 0), "{:?}", o.total);
}

#[test]
fn mprdma_without_a_receiver_bitmap_or_with_bad_keys_is_refused_naming_the_key() {
    let base = "duration = \"1ms\"\n[topology.star]\nhosts = 2\n";
    let e = LoadedScenario::from_str(&format!("{base}[nic.cc.mprdma]\n"), "bad.toml", Path::new(".")).err().expect("refused").to_string();
    assert!(e.contains("nic.cc.mprdma") && e.contains("nic.ordering") && e.contains("bad.toml"), "{e}");
    for (key, value) in [("delta", "0"), ("explore", "1.5")] {
        let toml = format!("{base}[nic.cc.mprdma]\n{key} = {value}\n[nic.ordering]\nlayer = \"static\"\n");
        let e = LoadedScenario::from_str(&toml, "bad.toml", Path::new(".")).err().expect("refused").to_string();
        assert!(e.contains(&format!("nic.cc.mprdma.{key}")), "{e}");
    }
}
