//! Jellyfish (Singla et al., NSDI 2012): switches joined as a random regular graph.
//!
//! Links are added between random pairs of switches with free ports that are not yet neighbours;
//! when no such pair remains but a switch still has two or more free ports, a random existing
//! link (x, y) is removed and replaced by (s, x) and (s, y), as the paper describes. The
//! graph depends only on the seeded stream passed in.

use super::{LinkParams, Topology};
use crate::sim::rng::Rng;
use rand::Rng as _;
use std::collections::BTreeSet;

/// `switches` switches with `degree` switch-facing ports each and `hosts_per_switch` hosts.
pub fn jellyfish(switches: usize, degree: usize, hosts_per_switch: usize, link: LinkParams, rng: &mut Rng) -> Topology {
    let hosts = switches * hosts_per_switch;
    let mut edges: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut free = vec![degree; switches];
    let key = |a: usize, b: usize| (a.min(b), a.max(b));
    let mut stuck_rounds = 0;
    while stuck_rounds < 8 {
        let open: Vec<usize> = (0..switches).filter(|&s| free[s] > 0).collect();
        if open.len() >= 2 {
            // Cheap random tries first; the full pair scan below only runs near the end.
            let tries = (0..64).map(|_| (open[rng.random_range(0..open.len())], open[rng.random_range(0..open.len())])).find(|&(a, b)| a != b && !edges.contains(&key(a, b)));
            if let Some((a, b)) = tries {
                edges.insert(key(a, b));
                free[a] -= 1;
                free[b] -= 1;
                continue;
            }
        }
        let pairs: Vec<(usize, usize)> = open
            .iter()
            .enumerate()
            .flat_map(|(i, &a)| open[i + 1..].iter().map(move |&b| (a, b)))
            .filter(|&(a, b)| !edges.contains(&key(a, b)))
            .collect();
        if !pairs.is_empty() {
            let (a, b) = pairs[rng.random_range(0..pairs.len())];
            edges.insert(key(a, b));
            free[a] -= 1;
            free[b] -= 1;
            continue;
        }
        // No joinable pair: swap a link into a switch with two or more free ports.
        let Some(s) = open.iter().copied().find(|&s| free[s] >= 2) else { break };
        let candidates: Vec<(usize, usize)> = edges.iter().copied().filter(|&(x, y)| x != s && y != s && !edges.contains(&key(s, x)) && !edges.contains(&key(s, y))).collect();
        if candidates.is_empty() {
            stuck_rounds += 1;
            continue;
        }
        let (x, y) = candidates[rng.random_range(0..candidates.len())];
        edges.remove(&(x, y));
        edges.insert(key(s, x));
        edges.insert(key(s, y));
        free[s] -= 2;
    }
    let mut t = Topology::with_nodes(hosts, switches);
    for h in 0..hosts {
        t.connect(h, hosts + h / hosts_per_switch, link);
    }
    for (a, b) in edges {
        t.connect(hosts + a, hosts + b, link);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::rng::stream;

    fn p() -> LinkParams {
        crate::fabric::topology::test_link()
    }

    #[test]
    fn regular_and_seed_dependent() {
        let a = jellyfish(20, 4, 2, p(), &mut stream(1, "topology", 0));
        let b = jellyfish(20, 4, 2, p(), &mut stream(1, "topology", 0));
        let c = jellyfish(20, 4, 2, p(), &mut stream(2, "topology", 0));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut deg = [0; 20];
        for l in a.links.iter().filter(|l| l.a >= 40) {
            deg[(l.a - 40) as usize] += 1;
            deg[(l.b - 40) as usize] += 1;
        }
        assert!(deg.iter().all(|&d| d == 4), "degrees {deg:?}");
        assert!(a.hosts_connected());
    }
}
