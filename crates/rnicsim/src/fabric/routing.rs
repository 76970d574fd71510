//! Shortest-path routing tables with all equal-cost next hops (the candidate sets ECMP and the
//! other load balancers choose from).
//!
//! For every destination host a breadth-first search runs backwards over the links that are up;
//! a node's candidates towards that host are its ports leading to a neighbour one hop closer.
//! Hosts never forward, so paths only cross switches. Tables are flat arrays indexed by
//! `node × hosts + destination host`.

/// One egress port of a node and the node at its other end.
#[derive(Clone, Copy, Debug)]
pub struct Adjacent {
    pub port: u32,
    pub neighbor: u32,
}

pub struct Routes {
    hosts: usize,
    /// `(start, len)` into `ports` per (node, destination host).
    index: Vec<(u32, u32)>,
    ports: Vec<u32>,
}

impl Routes {
    /// `adjacency[n]` lists node n's ports; `is_host[n]` marks hosts; `host_nodes[h]` is host h's
    /// node id; `usable(port)` says whether a port's link is up.
    pub fn compute(adjacency: &[Vec<Adjacent>], is_host: &[bool], host_nodes: &[u32], usable: impl Fn(u32) -> bool) -> Routes {
        let nodes = adjacency.len();
        let hosts = host_nodes.len();
        // The link from port p lands at node q; the reverse link of an Adjacent is found by scanning q.
        let mut reverse: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nodes]; // node -> (neighbor, port at neighbor towards node)
        for (n, adj) in adjacency.iter().enumerate() {
            for a in adj {
                if usable(a.port) {
                    reverse[a.neighbor as usize].push((n as u32, a.port));
                }
            }
        }
        let mut index = vec![(0u32, 0u32); nodes * hosts];
        let mut ports = Vec::new();
        let mut dist = vec![u32::MAX; nodes];
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        for (h, &dst) in host_nodes.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst as usize] = 0;
            frontier.clear();
            frontier.push(dst);
            let mut level = 0;
            while !frontier.is_empty() {
                level += 1;
                next.clear();
                for &v in &frontier {
                    if v != dst && is_host[v as usize] {
                        continue; // hosts do not forward
                    }
                    for &(u, _) in &reverse[v as usize] {
                        if dist[u as usize] == u32::MAX {
                            dist[u as usize] = level;
                            next.push(u);
                        }
                    }
                }
                std::mem::swap(&mut frontier, &mut next);
            }
            for n in 0..nodes {
                if n as u32 == dst || dist[n] == u32::MAX {
                    continue;
                }
                let start = ports.len() as u32;
                for a in &adjacency[n] {
                    let m = a.neighbor as usize;
                    if usable(a.port) && dist[m] != u32::MAX && dist[m] + 1 == dist[n] && (m as u32 == dst || !is_host[m]) {
                        ports.push(a.port);
                    }
                }
                index[n * hosts + h] = (start, ports.len() as u32 - start);
            }
        }
        Routes { hosts, index, ports }
    }

    /// Candidate egress ports at `node` towards host index `dst` (empty if unreachable).
    #[inline]
    pub fn candidates(&self, node: u32, dst: u32) -> &[u32] {
        let (s, l) = self.index[node as usize * self.hosts + dst as usize];
        &self.ports[s as usize..(s + l) as usize]
    }
}
