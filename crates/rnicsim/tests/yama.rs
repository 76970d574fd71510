//! Yama (`[yama]`, §3–§6): entities sharing offload engines through libYama or straight to the
//! engines. Queue-count fairness without it and weights with it (other weights than the paper's),
//! a capacity step the prober follows, the leader handing the loop over when its application
//! stops, backfilling only when applications leave a gap, chains sharing an engine, bad keys,
//! determinism, and the shipped Fig. 1 and Fig. 5.

use rnicsim::host::apps::yama::EntitySummary;
use rnicsim::output::Summary;
use rnicsim::scenario::LoadedScenario;
use std::path::Path;

mod common;

fn run(toml: &str) -> Summary {
    common::run_summary(&LoadedScenario::from_str(toml, "yama.toml", Path::new(".")).unwrap_or_else(|e| panic!("{e}")), "yama")
}

fn entity<'a>(s: &'a Summary, name: &str) -> &'a EntitySummary {
    s.yama.as_ref().expect("a yama summary").entities.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no entity {name}"))
}

/// One key-value engine of `mops` on host 6, clients on hosts 0-5; `extra` is appended to
/// `[yama]`, `entities` after the chain.
fn kv(duration: &str, extra: &str, mops: f64, engine_extra: &str, entities: &str) -> String {
    format!(
        r#"
        duration = "{duration}"
        [topology.star]
        hosts = 7
        [links]
        rate = "400Gbps"
        [yama]
        {extra}
        [[yama.engine]]
        name = "kv"
        host = 6
        mops = {mops}
        {engine_extra}
        [[yama.chain]]
        name = "kv"
        engines = ["kv"]
        workload = "kv"
        {entities}
    "#
    )
}

fn ent(name: &str, weight: f64, nodes: &str, instances: u32, queues: u32, more: &str) -> String {
    format!("[[yama.entity]]\nname = \"{name}\"\nweight = {weight}\nchain = \"kv\"\nnodes = {nodes}\ninstances = {instances}\nqueues = {queues}\ndepth = 32\n{more}\n")
}

#[test]
fn without_yama_queues_win_with_it_weights_do() {
    // Weights 0.7 and 0.3; the light entity opens three times the queue pairs.
    let entities = ent("heavy", 0.7, "[0, 1]", 2, 2, "") + &ent("light", 0.3, "[2, 3]", 2, 6, "");
    let vanilla = run(&kv("1ms", "warmup = \"300us\"\nisolation = false", 4.0, "", &entities));
    let yama = run(&kv("1ms", "warmup = \"300us\"", 4.0, "", &entities));
    // Round robin over 16 queue pairs: 4 and 12 of them.
    let (h, l) = (entity(&vanilla, "heavy"), entity(&vanilla, "light"));
    assert!((l.gbps / h.gbps - 3.0).abs() < 0.15, "vanilla splits by queue pairs: {} vs {}", l.gbps, h.gbps);
    let (h, l) = (entity(&yama, "heavy"), entity(&yama, "light"));
    assert!((h.gbps / l.gbps - 0.7 / 0.3).abs() / (0.7 / 0.3) < 0.12, "yama splits by weight: {} vs {}", h.gbps, l.gbps);
    let total = |s: &Summary| s.yama.as_ref().unwrap().total_gbps;
    // The engine: 4 M requests per second of 96 bytes of work = 3.072 Gbps.
    assert!((total(&vanilla) - 3.072).abs() < 0.05, "{}", total(&vanilla));
    assert!(total(&yama) > 0.94 * total(&vanilla), "yama {} vanilla {}", total(&yama), total(&vanilla));
    // The ideal shares from the engine's nominal throughput and the weights.
    assert!((h.ideal_gbps - 0.7 * 3.072).abs() < 1e-6 && (l.ideal_gbps - 0.3 * 3.072).abs() < 1e-6);
}

#[test]
fn node_weights_split_an_entitys_share_between_its_hosts() {
    // One entity on hosts 0 and 1 with node weights 3:1 and the same queue pairs on each; it
    // saturates the engine. Host 1 is paced at a quarter of the estimate (1.05 × the engine), host
    // 0 gets the rest: about 2.8:1 (3:1 with equal node weights would be 1:1).
    let a = ent("a", 1.0, "[0, 1]", 2, 4, "node_weights = [3.0, 1.0]");
    let s = run(&kv("1ms", "warmup = \"300us\"", 4.0, "", &a));
    let g = &entity(&s, "a").node_gbps;
    assert!((g[0] / g[1] - 3.0).abs() < 0.35, "{g:?}");
    assert!((g[0] + g[1] - 3.072).abs() < 0.1, "{g:?}");
}

#[test]
fn the_estimate_follows_the_engines_capacity_down_and_up() {
    let entities = ent("a", 1.0, "[0, 1]", 2, 2, "") + &ent("b", 1.0, "[2, 3]", 2, 2, "");
    let step = |factor: f64| kv("2ms", "warmup = \"1500us\"", 4.0, &format!("schedule = [{{ at = \"1ms\", factor = {factor} }}]"), &entities);
    for factor in [0.5, 2.0] {
        let s = run(&step(factor));
        let y = s.yama.as_ref().unwrap();
        let capacity = 3.072 * factor;
        // Applications saturate the engine at its new throughput and the estimate sits at
        // (1 + β) of what completes.
        assert!((y.total_gbps + y.chains[0].dummy_gbps - capacity).abs() / capacity < 0.05, "factor {factor}: {y:?}");
        let est = y.chains[0].estimate_gbps;
        assert!((est / capacity - 1.05).abs() < 0.06, "factor {factor}: estimate {est} for {capacity}");
        assert!((entity(&s, "a").fraction_of_fair - 1.0).abs() < 0.1);
    }
}

#[test]
fn the_leader_hands_the_loop_over_when_its_application_stops() {
    // Entity "first" is the only one on host 0, the chain's first (leading) instance; it stops at
    // 500 µs. The engine doubles at 1 ms: only a running loop can find that out.
    let entities = ent("first", 1.0, "[0]", 2, 2, "stop = \"500us\"") + &ent("rest", 1.0, "[1, 2]", 2, 2, "");
    let s = run(&kv("2ms", "warmup = \"1500us\"", 4.0, "schedule = [{ at = \"1ms\", factor = 2.0 }]", &entities));
    let y = s.yama.as_ref().unwrap();
    // Both remaining instances may see the stale estimate at once and propose; the later term wins.
    assert!((1..=2).contains(&y.chains[0].elections), "{y:?}");
    assert_ne!(y.chains[0].leader, 0, "a host whose application still runs leads");
    let rest = entity(&s, "rest");
    assert!(rest.gbps + y.chains[0].dummy_gbps > 0.9 * 6.144, "the new leader found the doubled engine: {}", rest.gbps);
}

#[test]
fn no_dummy_work_while_applications_saturate_the_chain_and_some_while_they_cannot() {
    let busy = run(&kv("1ms", "warmup = \"300us\"", 4.0, "", &ent("a", 1.0, "[0, 1]", 2, 4, "")));
    let y = busy.yama.as_ref().unwrap();
    assert!(y.chains[0].dummy_gbps < 0.005 * y.total_gbps, "{y:?}");
    // One queue pair of depth 1: it cannot fill the engine, so the leader backfills, at most
    // half of the application's work.
    let thin = kv("1ms", "warmup = \"300us\"", 4.0, "", "[[yama.entity]]\nname = \"a\"\nweight = 1.0\nchain = \"kv\"\nnodes = [0]\ndepth = 1\n");
    let s = run(&thin);
    let y = s.yama.as_ref().unwrap();
    assert!(y.chains[0].dummy_gbps > 0.0 && y.chains[0].dummy_gbps <= 0.5 * y.total_gbps + 0.01, "{y:?}");
}

#[test]
fn a_run_is_deterministic() {
    let entities = ent("a", 2.0, "[0, 1]", 2, 2, "") + &ent("b", 1.0, "[2]", 1, 3, "start = \"100us\"\nstop = \"400us\"");
    let text = kv("600us", "", 4.0, "", &entities);
    let a = serde_json::to_string(&run(&text)).unwrap();
    assert_eq!(a, serde_json::to_string(&run(&text)).unwrap());
}

#[test]
fn bad_yama_keys_are_named() {
    let cases = [
        (kv("1ms", "", 4.0, "", &ent("a", 1.0, "[0]", 1, 1, "").replace("chain = \"kv\"", "chain = \"nope\"")), "yama.entity[0].chain"),
        (kv("1ms", "", 4.0, "", &ent("a", 1.0, "[0, 1]", 1, 1, "node_weights = [1.0]")), "yama.entity[0].node_weights"),
        (kv("1ms", "", 4.0, "", &ent("a", 1.0, "[6]", 1, 1, "")), "yama.entity[0].nodes"),
        (kv("1ms", "", 4.0, "", &ent("a", -1.0, "[0]", 1, 1, "")), "yama.entity[0].weight"),
        (kv("1ms", "beta = -0.5", 4.0, "", &ent("a", 1.0, "[0]", 1, 1, "")), "yama.beta"),
        (kv("1ms", "", 0.0, "", &ent("a", 1.0, "[0]", 1, 1, "")), "yama.engine[0].mops"),
        (kv("1ms", "", 4.0, "host_time = \"1us\"\nschedule = [{ at = \"1ms\", factor = 0.0 }]", &ent("a", 1.0, "[0]", 1, 1, "")), "yama.engine[0].schedule"),
    ];
    for (text, key) in cases {
        let e = LoadedScenario::from_str(&text, "y.toml", Path::new(".")).and_then(|l| rnicsim::world::World::build(&l).map(|_| ()));
        let msg = format!("{}", e.expect_err(key));
        assert!(msg.contains(key), "{key}: {msg}");
    }
}

#[test]
fn shipped_fig1_and_fig5_reproduce() {
    for f in ["yama/fig1.toml", "yama/fig5.toml"] {
        let s = common::run_shipped(f);
        assert!(!s.paper.is_empty());
        assert!(s.paper.iter().all(|c| c.within), "{f}: {:?}", s.paper.iter().filter(|c| !c.within).collect::<Vec<_>>());
    }
}
