//! Clos topologies: two-tier leaf-spine and the k-ary fat-tree (Al-Fares et al., SIGCOMM 2008).

use super::{LinkParams, Topology};

/// `leaves × hosts_per_leaf` hosts; every leaf connects to every spine once. With equal host and
/// uplink rates the oversubscription is `hosts_per_leaf / spines` (8 spines, 16 hosts per leaf:
/// 1:2); `uplink` may carry a different rate to set it otherwise.
pub fn leaf_spine(leaves: usize, spines: usize, hosts_per_leaf: usize, host: LinkParams, uplink: LinkParams) -> Topology {
    let hosts = leaves * hosts_per_leaf;
    let mut t = Topology::with_nodes(hosts, leaves + spines);
    for h in 0..hosts {
        t.connect(h, hosts + h / hosts_per_leaf, host);
    }
    for l in 0..leaves {
        for s in 0..spines {
            t.connect(hosts + l, hosts + leaves + s, uplink);
        }
    }
    t
}

/// The k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)² cores, and
/// `hosts_per_edge` hosts per edge switch (k/2 for the non-blocking tree; more oversubscribes).
pub fn fat_tree(k: usize, hosts_per_edge: usize, link: LinkParams) -> Topology {
    let half = k / 2;
    let hosts = k * half * hosts_per_edge;
    let (edges, aggs, cores) = (k * half, k * half, half * half);
    let mut t = Topology::with_nodes(hosts, edges + aggs + cores);
    let edge = |pod: usize, i: usize| hosts + pod * half + i;
    let agg = |pod: usize, i: usize| hosts + edges + pod * half + i;
    let core = |i: usize, j: usize| hosts + edges + aggs + i * half + j;
    for h in 0..hosts {
        let e = h / hosts_per_edge;
        t.connect(h, edge(e / half, e % half), link);
    }
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                t.connect(edge(pod, e), agg(pod, a), link);
            }
        }
        for a in 0..half {
            for j in 0..half {
                t.connect(agg(pod, a), core(a, j), link);
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> LinkParams {
        crate::fabric::topology::test_link()
    }

    #[test]
    fn standard_leaf_spine() {
        let t = leaf_spine(8, 8, 16, p(), p());
        assert_eq!(t.hosts().len(), 128);
        assert_eq!(t.switch_count(), 16);
        assert_eq!(t.links.len(), 128 + 64);
        assert!(t.hosts_connected());
    }

    #[test]
    fn fat_tree_counts() {
        let t = fat_tree(4, 2, p());
        assert_eq!(t.hosts().len(), 16);
        assert_eq!(t.switch_count(), 20);
        // hosts + edge-agg + agg-core
        assert_eq!(t.links.len(), 16 + 16 + 16);
        assert!(t.hosts_connected());
        let t8 = fat_tree(8, 4, p());
        assert_eq!(t8.hosts().len(), 128);
        assert_eq!(t8.switch_count(), 80);
    }
}
