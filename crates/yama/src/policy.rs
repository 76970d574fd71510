//! The isolation policy (Yama §4.1): weighted sharing of a bottleneck offload between entities.
//!
//! The operator gives each entity a weight. Per offload chain the control plane normalizes the
//! weights of the entities using it (and active) so they sum to 1; an entity's per-node weights
//! (equal by default, adjustable) sum to 1 over the nodes it uses the chain from; a queue pair's
//! weight is entity weight × node weight ÷ the entity's queue pairs on that chain and node,
//! unless the entity splits its node's share differently. A scheduler paces each queue pair at
//! its weight × the chain's probed throughput.
//!
//! [`ideal_shares`] is what the policy means when chains share engines (Table 1): weighted
//! max-min fairness, raising every unfrozen entity's rate in proportion to its weight until an
//! engine saturates or the entity's demand is met.

/// One entity's standing on one chain (an operator entity on two chains is two of these).
#[derive(Clone, Debug)]
struct Entity {
    weight: f64,
    chain: usize,
    active: bool,
    /// (node, queue pairs on this chain from the node, node weight as set, if set).
    nodes: Vec<(u32, u32, Option<f64>)>,
}

/// The weights of every entity, chain, node and queue pair.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    entities: Vec<Entity>,
}

impl Policy {
    pub fn new() -> Policy {
        Policy::default()
    }

    /// Adds an entity of operator weight `weight` on chain `chain`, active; returns its id.
    pub fn add_entity(&mut self, weight: f64, chain: usize) -> usize {
        assert!(weight > 0.0 && weight.is_finite(), "an entity's weight must be positive");
        self.entities.push(Entity { weight, chain, active: true, nodes: Vec::new() });
        self.entities.len() - 1
    }

    /// An entity starts or stops using its chain (its weight is renormalized away while off).
    pub fn set_active(&mut self, e: usize, active: bool) {
        self.entities[e].active = active;
    }

    pub fn is_active(&self, e: usize) -> bool {
        self.entities[e].active
    }

    /// Sets the number of queue pairs entity `e` has on its chain from `node`.
    pub fn set_qps(&mut self, e: usize, node: u32, qps: u32) {
        let nodes = &mut self.entities[e].nodes;
        match nodes.iter_mut().find(|n| n.0 == node) {
            Some(n) => n.1 = qps,
            None => nodes.push((node, qps, None)),
        }
    }

    /// The entity adjusts its per-node weight for `node` (relative; normalized over its nodes).
    pub fn set_node_weight(&mut self, e: usize, node: u32, weight: f64) {
        assert!(weight >= 0.0 && weight.is_finite(), "a node weight must be non-negative");
        let nodes = &mut self.entities[e].nodes;
        match nodes.iter_mut().find(|n| n.0 == node) {
            Some(n) => n.2 = Some(weight),
            None => nodes.push((node, 0, Some(weight))),
        }
    }

    /// The entity's per-chain weight: its operator weight over the sum of the active entities'
    /// on the same chain (0 while inactive).
    pub fn entity_weight(&self, e: usize) -> f64 {
        let me = &self.entities[e];
        if !me.active {
            return 0.0;
        }
        let sum: f64 = self.entities.iter().filter(|x| x.active && x.chain == me.chain).map(|x| x.weight).sum();
        me.weight / sum
    }

    /// The entity's weight for `node` among the nodes it uses the chain from (those with queue
    /// pairs): equal unless set; 0 for a node without queue pairs.
    pub fn node_weight(&self, e: usize, node: u32) -> f64 {
        let used: Vec<_> = self.entities[e].nodes.iter().filter(|n| n.1 > 0).collect();
        let raw = |n: &(u32, u32, Option<f64>)| n.2.unwrap_or(1.0);
        let sum: f64 = used.iter().map(|n| raw(n)).sum();
        match used.iter().find(|n| n.0 == node) {
            Some(n) if sum > 0.0 => raw(n) / sum,
            _ => 0.0,
        }
    }

    /// The default weight of each of entity `e`'s queue pairs on `node`.
    pub fn qp_weight(&self, e: usize, node: u32) -> f64 {
        let qps = self.entities[e].nodes.iter().find(|n| n.0 == node).map_or(0, |n| n.1);
        if qps == 0 {
            return 0.0;
        }
        self.entity_weight(e) * self.node_weight(e, node) / qps as f64
    }

    /// The entity splits its share on `node` between its queue pairs by `relative` weights
    /// (one per queue pair): each gets entity × node weight × its fraction of `relative`.
    pub fn qp_weights_split(&self, e: usize, node: u32, relative: &[f64]) -> Vec<f64> {
        let sum: f64 = relative.iter().sum();
        let share = self.entity_weight(e) * self.node_weight(e, node);
        relative.iter().map(|r| if sum > 0.0 { share * r / sum } else { 0.0 }).collect()
    }

    pub fn chain_of(&self, e: usize) -> usize {
        self.entities[e].chain
    }

    pub fn entities(&self) -> usize {
        self.entities.len()
    }
}

/// One entity for [`ideal_shares`]: its operator weight, the chain it uses and how much it
/// would send alone (`f64::INFINITY` for a saturating workload).
#[derive(Clone, Copy, Debug)]
pub struct Demand {
    pub weight: f64,
    pub chain: usize,
    pub demand: f64,
}

/// The throughput the policy gives each entity: weighted max-min fairness over `capacity`
/// (per engine) where chain `c` passes each engine in `chains[c]` (an engine listed twice is
/// used twice). See [`ideal_shares_by_load`].
pub fn ideal_shares(capacity: &[f64], chains: &[Vec<usize>], entities: &[Demand]) -> Vec<f64> {
    let load: Vec<Vec<f64>> = chains.iter().map(|c| capacity.iter().enumerate().map(|(k, cap)| c.iter().filter(|&&x| x == k).count() as f64 / cap).collect()).collect();
    ideal_shares_by_load(&load, entities)
}

/// Weighted max-min fairness where a unit of chain `c`'s throughput takes `load[c][k]` of
/// engine `k`'s time (engines whose cost depends on the work, e.g. per packet and per byte).
/// Progressive filling: all unfrozen entities rise at `weight × t`; the first engine to fill
/// freezes the entities crossing it, a met demand freezes its own.
pub fn ideal_shares_by_load(load: &[Vec<f64>], entities: &[Demand]) -> Vec<f64> {
    let n = entities.len();
    let engines = load.iter().map(Vec::len).max().unwrap_or(0);
    let mut rate = vec![0.0; n];
    let mut frozen: Vec<bool> = entities.iter().map(|d| d.weight <= 0.0 || d.demand <= 0.0).collect();
    let uses = |e: &Demand, k: usize| load[e.chain].get(k).copied().unwrap_or(0.0);
    const EPS: f64 = 1e-12;
    while frozen.iter().any(|f| !f) {
        // The largest raise of the level t before something binds.
        let mut dt = f64::INFINITY;
        for k in 0..engines {
            let used: f64 = entities.iter().zip(&rate).map(|(e, r)| uses(e, k) * r).sum();
            let slope: f64 = entities.iter().zip(&frozen).filter(|(_, f)| !**f).map(|(e, _)| uses(e, k) * e.weight).sum();
            if slope > 0.0 {
                dt = dt.min(((1.0 - used) / slope).max(0.0));
            }
        }
        for (i, e) in entities.iter().enumerate() {
            if !frozen[i] {
                dt = dt.min(((e.demand - rate[i]) / e.weight).max(0.0));
            }
        }
        assert!(dt.is_finite(), "an entity crosses no engine and has no demand limit");
        for (i, e) in entities.iter().enumerate() {
            if !frozen[i] {
                rate[i] += e.weight * dt;
            }
        }
        for k in 0..engines {
            let used: f64 = entities.iter().zip(&rate).map(|(e, r)| uses(e, k) * r).sum();
            if used >= 1.0 - EPS {
                for (i, e) in entities.iter().enumerate() {
                    if uses(e, k) > 0.0 {
                        frozen[i] = true;
                    }
                }
            }
        }
        for (i, e) in entities.iter().enumerate() {
            if rate[i] >= e.demand * (1.0 - EPS) {
                frozen[i] = true;
            }
        }
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-9, "{a:?} vs {b:?}");
        }
    }

    /// Table 1: engines 0 NAT (shared), 1 the web server chain's own bottleneck (TCP/AES), 2 the
    /// KV cache; chain 0 = NAT → own, chain 1 = NAT → KV; weights 0.5, 0.3, 0.2.
    fn table1(nat: f64, own: f64, kv: f64) -> Vec<f64> {
        let chains = vec![vec![0, 1], vec![0, 2]];
        let inf = f64::INFINITY;
        let ents = [Demand { weight: 0.5, chain: 0, demand: inf }, Demand { weight: 0.3, chain: 1, demand: inf }, Demand { weight: 0.2, chain: 1, demand: inf }];
        ideal_shares(&[nat, own, kv], &chains, &ents)
    }

    #[test]
    fn table1_case1_each_chain_bottlenecked_by_its_own_engine() {
        close(&table1(40.0, 10.0, 10.0), &[10.0, 6.0, 4.0]);
    }

    #[test]
    fn table1_case2_web_server_capped_by_its_chain_the_kvs_split_the_rest_of_nat() {
        close(&table1(25.0, 10.0, 40.0), &[10.0, 9.0, 6.0]);
    }

    #[test]
    fn table1_case3_both_chains_bottlenecked_by_nat() {
        close(&table1(25.0, 40.0, 40.0), &[12.5, 7.5, 5.0]);
    }

    #[test]
    fn demands_below_the_share_are_met_and_the_rest_is_redistributed() {
        let chains = vec![vec![0]];
        let ents = [Demand { weight: 1.0, chain: 0, demand: 2.0 }, Demand { weight: 1.0, chain: 0, demand: f64::INFINITY }, Demand { weight: 2.0, chain: 0, demand: f64::INFINITY }];
        // 2 for the first; 8 left split 1:2.
        close(&ideal_shares(&[10.0], &chains, &ents), &[2.0, 8.0 / 3.0, 16.0 / 3.0]);
    }

    #[test]
    fn an_engine_used_twice_by_a_chain_counts_twice() {
        let chains = vec![vec![0, 0], vec![0]];
        let inf = f64::INFINITY;
        let ents = [Demand { weight: 1.0, chain: 0, demand: inf }, Demand { weight: 1.0, chain: 1, demand: inf }];
        // 2r + r = 12 at equal rates.
        close(&ideal_shares(&[12.0], &chains, &ents), &[4.0, 4.0]);
    }

    #[test]
    fn weights_are_normalized_per_chain_over_active_entities() {
        let mut p = Policy::new();
        let a = p.add_entity(0.4, 0);
        let b = p.add_entity(0.2, 0);
        let c = p.add_entity(0.4, 0);
        let d = p.add_entity(3.0, 1);
        let sum: f64 = [a, b, c].iter().map(|&e| p.entity_weight(e)).sum();
        assert!((sum - 1.0).abs() < 1e-12);
        assert!((p.entity_weight(a) - 0.4).abs() < 1e-12);
        assert_eq!(p.entity_weight(d), 1.0);
        p.set_active(c, false);
        assert!((p.entity_weight(a) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(p.entity_weight(c), 0.0);
    }

    #[test]
    fn queue_pair_weight_is_entity_times_node_over_its_queue_pairs() {
        let mut p = Policy::new();
        let a = p.add_entity(0.6, 0);
        let _b = p.add_entity(0.4, 0);
        p.set_qps(a, 1, 3);
        p.set_qps(a, 2, 1);
        // Two nodes, equal node weights: 0.6 × 0.5 / 3 and 0.6 × 0.5 / 1.
        assert!((p.qp_weight(a, 1) - 0.1).abs() < 1e-12);
        assert!((p.qp_weight(a, 2) - 0.3).abs() < 1e-12);
        // The entity moves weight to node 1 (3:1).
        p.set_node_weight(a, 1, 3.0);
        assert!((p.node_weight(a, 1) - 0.75).abs() < 1e-12);
        assert!((p.qp_weight(a, 1) - 0.15).abs() < 1e-12);
        let total: f64 = [1u32, 2].iter().map(|&n| p.qp_weight(a, n) * if n == 1 { 3.0 } else { 1.0 }).sum();
        assert!((total - 0.6).abs() < 1e-12, "queue pair weights sum to the entity's");
        let split = p.qp_weights_split(a, 1, &[1.0, 1.0, 2.0]);
        close(&split, &[0.1125, 0.1125, 0.225]);
        // A node whose last queue pair closed hands its weight to the others.
        p.set_qps(a, 2, 0);
        assert_eq!(p.node_weight(a, 1), 1.0);
        assert_eq!(p.qp_weight(a, 2), 0.0);
    }
}
