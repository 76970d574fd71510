//! Topologies as plain graphs: which nodes are hosts or switches and the links between them.
//!
//! Generated topologies number hosts first (0..H) and switches after them, as HPCC-style files
//! conventionally do. Every link is full duplex: it becomes two egress ports, one at each end.

mod clos;
mod hpcc_file;
mod jellyfish;

pub use clos::{fat_tree, leaf_spine};
pub use hpcc_file::{link_row_past_count, parse_hpcc_topology, parse_hpcc_topology_lines};
pub use jellyfish::jellyfish;

use crate::units::{BitsPerSec, Time};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

/// One full-duplex link between nodes `a` and `b`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub a: u32,
    pub b: u32,
    pub rate: BitsPerSec,
    pub delay: Time,
    /// Probability that a packet is lost, per direction.
    pub loss: f64,
}

/// Rate and delay applied to a class of links.
#[derive(Clone, Copy, Debug)]
pub struct LinkParams {
    pub rate: BitsPerSec,
    pub delay: Time,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    pub kinds: Vec<NodeKind>,
    pub links: Vec<LinkSpec>,
}

impl Topology {
    /// `hosts` hosts followed by `switches` switches, no links yet.
    pub fn with_nodes(hosts: usize, switches: usize) -> Topology {
        let mut kinds = vec![NodeKind::Host; hosts];
        kinds.extend(std::iter::repeat_n(NodeKind::Switch, switches));
        Topology { kinds, links: Vec::new() }
    }

    pub fn connect(&mut self, a: usize, b: usize, p: LinkParams) {
        self.links.push(LinkSpec { a: a as u32, b: b as u32, rate: p.rate, delay: p.delay, loss: 0.0 });
    }

    pub fn nodes(&self) -> usize {
        self.kinds.len()
    }

    /// Node ids of the hosts, ascending.
    pub fn hosts(&self) -> Vec<u32> {
        (0..self.kinds.len() as u32).filter(|&n| self.kinds[n as usize] == NodeKind::Host).collect()
    }

    /// The slowest and the fastest rate of a link with a host at one end (`None` with no
    /// host linked): the line rates of the topology's NICs.
    pub fn host_link_rates(&self) -> Option<(BitsPerSec, BitsPerSec)> {
        let host = |n: u32| self.kinds[n as usize] == NodeKind::Host;
        let rates = self.links.iter().filter(|l| host(l.a) || host(l.b)).map(|l| l.rate);
        rates.fold(None, |acc, r| Some(acc.map_or((r, r), |(lo, hi): (BitsPerSec, BitsPerSec)| (lo.min(r), hi.max(r)))))
    }

    pub fn switch_count(&self) -> usize {
        self.kinds.iter().filter(|&&k| k == NodeKind::Switch).count()
    }

    /// Destination groups of the routing table ([`crate::fabric::routing::destination_groups`]):
    /// distinct sets of nodes the hosts attach to.
    pub fn host_groups(&self) -> usize {
        let mut attach: Vec<Vec<u32>> = vec![Vec::new(); self.nodes()];
        for l in &self.links {
            attach[l.a as usize].push(l.b);
            attach[l.b as usize].push(l.a);
        }
        let keys = self.hosts().into_iter().map(|h| {
            let mut k = std::mem::take(&mut attach[h as usize]);
            k.sort_unstable();
            k.dedup();
            k
        });
        crate::fabric::routing::destination_groups(keys).1.len()
    }

    /// Whether every host can reach every other host (hosts do not forward).
    pub fn hosts_connected(&self) -> bool {
        let n = self.nodes();
        let mut adj = vec![Vec::new(); n];
        for l in &self.links {
            adj[l.a as usize].push(l.b as usize);
            adj[l.b as usize].push(l.a as usize);
        }
        let hosts = self.hosts();
        let Some(&first) = hosts.first() else { return true };
        let mut seen = vec![false; n];
        let mut stack = vec![first as usize];
        seen[first as usize] = true;
        while let Some(u) = stack.pop() {
            if u != first as usize && self.kinds[u] == NodeKind::Host {
                continue;
            }
            for &v in &adj[u] {
                if !seen[v] {
                    seen[v] = true;
                    stack.push(v);
                }
            }
        }
        hosts.iter().all(|&h| seen[h as usize])
    }
}

/// Two hosts joined by one link.
pub fn back_to_back(link: LinkParams) -> Topology {
    let mut t = Topology::with_nodes(2, 0);
    t.connect(0, 1, link);
    t
}

/// `hosts` hosts on one switch (the N-to-1 incast star).
pub fn star(hosts: usize, link: LinkParams) -> Topology {
    let mut t = Topology::with_nodes(hosts, 1);
    for h in 0..hosts {
        t.connect(h, hosts, link);
    }
    t
}

/// `left` hosts on one switch and `right` on another, the two switches joined by a bottleneck.
pub fn dumbbell(left: usize, right: usize, link: LinkParams, bottleneck: LinkParams) -> Topology {
    let hosts = left + right;
    let mut t = Topology::with_nodes(hosts, 2);
    for h in 0..hosts {
        t.connect(h, if h < left { hosts } else { hosts + 1 }, link);
    }
    t.connect(hosts, hosts + 1, bottleneck);
    t
}

/// 100 Gbps, 1 µs: the link of the topology tests.
#[cfg(test)]
pub(crate) fn test_link() -> LinkParams {
    LinkParams { rate: BitsPerSec::gbps(100), delay: Time::from_us(1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> LinkParams {
        test_link()
    }

    #[test]
    fn small_topologies_have_expected_shape() {
        let d = dumbbell(3, 2, p(), p());
        assert_eq!(d.hosts(), vec![0, 1, 2, 3, 4]);
        assert_eq!(d.switch_count(), 2);
        assert_eq!(d.links.len(), 6);
        assert!(d.hosts_connected());
        let s = star(4, p());
        assert_eq!(s.links.len(), 4);
        assert!(back_to_back(p()).hosts_connected());
    }
}
