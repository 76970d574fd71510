//! SCR on the NIC (`[nic.scr]`): the fair QP-scheduling policies against the commodity
//! scheduler, through the shipped Fig. 12 and Table 5 scenarios and hand-checkable cases.

use common::run_summary as run_loaded;
use rnicsim::output::Summary;
use rnicsim::scenario::LoadedScenario;
use std::path::Path;

mod common;

fn shipped(name: &str) -> Summary {
    common::run_shipped(&format!("scr/{name}"))
}

/// Two tenants on one pair of hosts (one 100 Gbps switch, commodity scheduler): `fabric` adds
/// link and NIC keys, `policy` the SCR table (or nothing), each tenant is `(name, message,
/// depth)`, measured from 1 ms to 3 ms.
fn tenants(fabric: &str, policy: &str, tenants: [(&str, &str, u32); 2]) -> Summary {
    let tests: String = tenants
        .iter()
        .map(|(name, message, depth)| format!("[[perftest]]\nname = \"{name}\"\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"{message}\"\ndepth = {depth}\nwarmup = \"1ms\"\n"))
        .collect();
    let toml = format!(
        r#"
        duration = "3ms"
        [topology.star]
        hosts = 2
        [links]
        rate = "100Gbps"
        {fabric}
        [nic.scheduler.commodity]
        turn_bytes = "32KiB"
        {policy}
        {tests}
    "#
    );
    run_loaded(&LoadedScenario::from_str(&toml, "tenants.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "tenants")
}

/// Two hungry tenants: a 4 KB-message QP and a 1 MB-message QP, depth 128 each, DCQCN and PFC.
fn two_tenants(policy: &str) -> Summary {
    let fabric = "delay = \"100ns\"\n[switch.pfc]\nenabled = true\n[nic]\nmtu = 4096\n[nic.cc.dcqcn]";
    tenants(fabric, policy, [("4KB", "4KiB", 128), ("1MB", "1MiB", 128)])
}

fn gbps(s: &Summary, test: &str) -> f64 {
    s.perftest.iter().find(|p| p.name == test).unwrap().gbps
}

#[test]
fn water_filling_splits_two_hungry_tenants_evenly_where_the_commodity_scheduler_does_not() {
    let default = two_tenants("");
    let passive = two_tenants("[nic.scr.policy.passive]");
    let wf = two_tenants("[nic.scr.policy.water_filling]");
    let stat = two_tenants("[nic.scr.policy.static]");
    // The commodity scheduler favours the large messages; a passive SCR changes nothing.
    assert!(gbps(&default, "1MB") > 1.5 * gbps(&default, "4KB"), "{:?}", default.perftest_hosts);
    assert_eq!(gbps(&default, "4KB"), gbps(&passive, "4KB"));
    assert!(default.perftest_hosts[0].jain < 0.95);
    // Both tenants can fill the link alone, so max-min fair is 50/50 of what the link carries.
    for s in [&wf, &stat] {
        let h = &s.perftest_hosts[0];
        assert!(h.jain > 0.99, "{h:?}");
        assert!(h.gbps > 0.95 * default.perftest_hosts[0].gbps, "{h:?}");
        assert!((gbps(s, "4KB") / (h.gbps / 2.0) - 1.0).abs() < 0.05, "{h:?}");
    }
    let scr = wf.scr.as_ref().unwrap();
    assert_eq!((scr.policy.as_str(), scr.flows), ("water_filling", 2));
    assert!(scr.context_bytes as usize <= 48 && scr.rate_sets > 2);
    // TX events are handled at least once per turn; processing covers every byte sent.
    let tx = &scr.kinds[0];
    assert_eq!(tx.name, "tx");
    assert!(tx.dropped == 0 && tx.handled > 0 && tx.handled <= tx.collected);
    assert!(tx.processing_gbps > 0.9 * wf.perftest_hosts[0].gbps, "{tx:?}");
}

#[test]
fn water_filling_leaves_a_light_tenant_what_it_uses_and_gives_the_rest_to_the_hungry_one() {
    // A 256 B depth-1 WRITE stream cannot use its fair half; max-min gives it what it uses and
    // the bulk tenant the rest, so the link stays full (unlike static 1/n).
    let light = |policy: &str| tenants("delay = \"1us\"\n[nic]\nmtu = 4096\n[nic.cc.none]", policy, [("light", "256B", 1), ("bulk", "64KiB", 128)]);
    let default = light("");
    let wf = light("[nic.scr.policy.water_filling]");
    let stat = light("[nic.scr.policy.static]");
    let l = gbps(&default, "light");
    assert!(l < 5.0, "one 256 B message per round trip is light: {l}");
    // The light tenant keeps at least what it had (more: the bulk tenant, paced below the line
    // rate, queues less in front of it, Fig. 13's effect); the bulk one takes the rest.
    assert!(gbps(&wf, "light") >= l && gbps(&wf, "light") < 5.0, "{} vs {l}", gbps(&wf, "light"));
    assert!(gbps(&wf, "bulk") > 0.9 * gbps(&default, "bulk"), "{} vs {}", gbps(&wf, "bulk"), gbps(&default, "bulk"));
    // Static 1/n caps the bulk tenant at half the line rate.
    assert!((gbps(&stat, "bulk") / 50.0 - 1.0).abs() < 0.08, "{}", gbps(&stat, "bulk"));
}

#[test]
fn fig12_static_and_water_filling_are_fair_at_4_qps_where_the_default_is_not() {
    let d = shipped("fig12_passive.toml");
    let s = shipped("fig12_static.toml");
    let w = shipped("fig12_water_filling.toml");
    let jain = |x: &Summary, n: &str| x.perftest.iter().find(|p| p.name == n).unwrap().jain;
    for x in [&s, &w] {
        for c in &x.paper {
            assert!(c.within, "{}: {} paper {} ours {:?}", x.name, c.metric, c.paper, c.ours);
        }
        assert!(jain(x, "4 QPs") > jain(&d, "4 QPs") * 1.3);
    }
    assert!(jain(&d, "4 QPs") < 0.8);
    // Every policy keeps the line rate at every scale.
    for x in [&d, &s, &w] {
        for p in &x.perftest {
            assert!(p.gbps > 95.0, "{} {}: {}", x.name, p.name, p.gbps);
        }
    }
}

#[test]
fn table5_a_smaller_filling_step_converges_later_to_the_same_fair_rates() {
    let t: Vec<Summary> = ["table5_step002.toml", "table5_step005.toml", "table5_step010.toml"].iter().map(|n| shipped(n)).collect();
    let conv: Vec<f64> = t.iter().map(|s| s.scr.as_ref().unwrap().last_rate_set_us).collect();
    assert!(conv[0] > conv[1] && conv[1] > conv[2], "{conv:?}");
    // The climb from 0.5 to 12.5 Gbps takes 75, 30 and 15 steps: the time per step is the
    // NIC's control loop (trigger, processing, install), the same for every step size.
    let per_step: Vec<f64> = conv.iter().zip([75.0, 30.0, 15.0]).map(|(c, n)| c / n).collect();
    for p in &per_step {
        assert!(*p > 6.0 && *p < 16.0, "{per_step:?}");
    }
    for s in &t {
        assert!(s.perftest_hosts[0].jain > 0.99, "{:?}", s.perftest_hosts);
    }
}

#[test]
fn scr_scenarios_are_deterministic_and_bad_keys_are_named() {
    let a = serde_json::to_string(&two_tenants("[nic.scr.policy.water_filling]")).unwrap();
    let b = serde_json::to_string(&two_tenants("[nic.scr.policy.water_filling]")).unwrap();
    assert_eq!(a, b);
    let bad = r#"
        duration = "1ms"
        [topology.back_to_back]
        [nic.scr.strategy]
        tx = "keep_latest"
    "#;
    let e = LoadedScenario::from_str(bad, "bad.toml", Path::new(".")).err().expect("hardware coalescing cannot keep the latest");
    assert!(e.to_string().contains("nic.scr.strategy.tx") && e.to_string().contains("software"), "{e}");
    let ok = bad.replace("[nic.scr.strategy]", "[nic.scr]\ncoalescing = \"software\"\n[nic.scr.strategy]");
    assert!(LoadedScenario::from_str(&ok, "ok.toml", Path::new(".")).is_ok());
    let zero = r#"
        duration = "1ms"
        [topology.back_to_back]
        [nic.scr]
        threads = 0
    "#;
    let e = LoadedScenario::from_str(zero, "zero.toml", Path::new(".")).err().unwrap();
    assert!(e.to_string().contains("nic.scr.threads"), "{e}");
}
