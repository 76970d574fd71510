//! Paths a packet can carry: the k shortest loop-free switch paths between two switches (Yen's
//! algorithm over hop counts), as Jellyfish routes with k-shortest-path sets instead of ECMP
//! (Singla et al., NSDI 2012, §4.1), interned in a table so a packet carries only an id.
//!
//! A path is the list of egress ports from the source host's switch to the destination host's
//! switch; a switch on it forwards by its own port in the list, and the destination switch (not
//! on it) delivers by the ordinary route. Sets are computed when a pair is first asked for and
//! kept; paths cross switches only, as hosts do not forward.

use super::routing::Adjacent;
use std::collections::{HashMap, VecDeque};

/// Index of a path in a [`PathTable`].
pub type PathId = u32;
/// "No path carried": the packet follows the switches' routes.
pub const NO_PATH: PathId = u32::MAX;

/// Interned paths and the k-shortest sets computed so far.
pub struct PathTable {
    k: usize,
    ports: Vec<u32>,
    spans: Vec<(u32, u32)>,
    /// (source switch, destination switch) → ids of its paths, shortest first.
    sets: HashMap<(u32, u32), Vec<PathId>>,
}

impl PathTable {
    /// A table of up to `k` paths per switch pair.
    pub fn new(k: usize) -> PathTable {
        PathTable { k, ports: Vec::new(), spans: Vec::new(), sets: HashMap::new() }
    }

    /// The egress ports of path `id`.
    #[inline]
    pub fn ports(&self, id: PathId) -> &[u32] {
        let (s, l) = self.spans[id as usize];
        &self.ports[s as usize..(s + l) as usize]
    }

    /// Whether every link of path `id` is up in `up` (one entry per port).
    #[inline]
    pub fn is_up(&self, id: PathId, up: &[bool]) -> bool {
        self.ports(id).iter().all(|&port| up[port as usize])
    }

    /// Paths interned so far.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The up-to-k shortest paths from switch `a` to switch `b`, computed on first use.
    pub fn between(&mut self, adjacency: &[Vec<Adjacent>], is_host: &[bool], a: u32, b: u32) -> &[PathId] {
        if !self.sets.contains_key(&(a, b)) {
            let mut ids = Vec::new();
            for p in k_shortest_paths(adjacency, is_host, a, b, self.k) {
                ids.push(self.spans.len() as PathId);
                self.spans.push((self.ports.len() as u32, p.len() as u32));
                self.ports.extend(p);
            }
            self.sets.insert((a, b), ids);
        }
        &self.sets[&(a, b)]
    }
}

/// Up to `k` shortest loop-free paths from node `src` to node `dst` as lists of egress ports,
/// shortest first (ties in the order the search finds them, which is fixed by port order).
/// Intermediate nodes are switches only.
pub fn k_shortest_paths(adjacency: &[Vec<Adjacent>], is_host: &[bool], src: u32, dst: u32, k: usize) -> Vec<Vec<u32>> {
    let mut found: Vec<Vec<u32>> = Vec::new();
    if k == 0 || src == dst {
        return found;
    }
    // The nodes a path visits, from the adjacency of each node on it.
    let nodes_of = |src: u32, path: &[u32]| -> Vec<u32> {
        let mut v = Vec::with_capacity(path.len() + 1);
        v.push(src);
        for &p in path {
            let here = *v.last().expect("starts at src");
            let a = adjacency[here as usize].iter().find(|a| a.port == p).expect("a path's port belongs to the node it leaves");
            v.push(a.neighbor);
        }
        v
    };
    let Some(first) = bfs(adjacency, is_host, src, dst, &[], &[]) else { return found };
    found.push(first);
    let mut candidates: Vec<Vec<u32>> = Vec::new();
    while found.len() < k {
        let last = found.last().expect("one path found").clone();
        let last_nodes = nodes_of(src, &last);
        for i in 0..last.len() {
            let spur = last_nodes[i];
            let root = &last[..i];
            // Edges that would repeat a path already chosen with this root are removed.
            let banned_ports: Vec<u32> = found.iter().filter(|p| p.len() > i && &p[..i] == root).map(|p| p[i]).collect();
            let banned_nodes: Vec<u32> = last_nodes[..i].to_vec();
            if let Some(spur_path) = bfs(adjacency, is_host, spur, dst, &banned_nodes, &banned_ports) {
                let mut total = root.to_vec();
                total.extend(spur_path);
                if !found.contains(&total) && !candidates.contains(&total) {
                    candidates.push(total);
                }
            }
        }
        // The shortest candidate next; among equals, the first found.
        let Some(best) = (0..candidates.len()).min_by_key(|&j| candidates[j].len()) else { break };
        found.push(candidates.remove(best));
    }
    found
}

/// A shortest path from `src` to `dst` avoiding `banned_nodes` and the ports `banned_ports`,
/// crossing switches only.
fn bfs(adjacency: &[Vec<Adjacent>], is_host: &[bool], src: u32, dst: u32, banned_nodes: &[u32], banned_ports: &[u32]) -> Option<Vec<u32>> {
    let mut via: HashMap<u32, (u32, u32)> = HashMap::new(); // node -> (previous node, port taken)
    let mut queue = VecDeque::from([src]);
    let mut seen = vec![false; adjacency.len()];
    seen[src as usize] = true;
    for &n in banned_nodes {
        seen[n as usize] = true;
    }
    while let Some(v) = queue.pop_front() {
        if v == dst {
            let mut ports = Vec::new();
            let mut n = dst;
            while n != src {
                let (prev, port) = via[&n];
                ports.push(port);
                n = prev;
            }
            ports.reverse();
            return Some(ports);
        }
        if v != src && is_host[v as usize] {
            continue; // hosts do not forward
        }
        for a in &adjacency[v as usize] {
            if !seen[a.neighbor as usize] && !banned_ports.contains(&a.port) {
                seen[a.neighbor as usize] = true;
                via.insert(a.neighbor, (v, a.port));
                queue.push_back(a.neighbor);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An undirected graph given as node pairs; port ids are assigned in order, two per link.
    fn graph(nodes: usize, links: &[(u32, u32)]) -> Vec<Vec<Adjacent>> {
        let mut adj = vec![Vec::new(); nodes];
        let mut port = 0;
        for &(a, b) in links {
            adj[a as usize].push(Adjacent { port, neighbor: b });
            adj[b as usize].push(Adjacent { port: port + 1, neighbor: a });
            port += 2;
        }
        adj
    }

    fn hops(paths: &[Vec<u32>]) -> Vec<usize> {
        paths.iter().map(|p| p.len()).collect()
    }

    #[test]
    fn a_ring_of_six_has_one_path_each_way() {
        // 0-1-2-3-4-5-0: from 0 to 2, two hops clockwise, four hops the other way.
        let adj = graph(6, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)]);
        let p = k_shortest_paths(&adj, &[false; 6], 0, 2, 5);
        assert_eq!(hops(&p), vec![2, 4]);
        assert_eq!(p[0], vec![0, 2]); // port 0 (0→1), port 2 (1→2)
    }

    #[test]
    fn a_square_with_a_diagonal_lists_paths_by_length() {
        // Links 0-1, 1-3, 0-2, 2-3 and 0-3: one direct path and two of two hops; 1 and 2 are not
        // joined, so there is no longer loop-free path.
        let adj = graph(4, &[(0, 1), (1, 3), (0, 2), (2, 3), (0, 3)]);
        let p = k_shortest_paths(&adj, &[false; 4], 0, 3, 10);
        assert_eq!(hops(&p), vec![1, 2, 2]);
        // Every path is loop-free and distinct.
        for (i, a) in p.iter().enumerate() {
            assert!(p[i + 1..].iter().all(|b| b != a));
        }
    }

    #[test]
    fn hosts_are_never_crossed() {
        // Switches 0 and 1 joined directly and through host 2.
        let adj = graph(3, &[(0, 1), (0, 2), (2, 1)]);
        let p = k_shortest_paths(&adj, &[false, false, true], 0, 1, 4);
        assert_eq!(hops(&p), vec![1]);
    }

    #[test]
    fn the_table_interns_each_pair_once() {
        let adj = graph(4, &[(0, 1), (1, 3), (0, 2), (2, 3)]);
        let mut t = PathTable::new(2);
        let ids = t.between(&adj, &[false; 4], 0, 3).to_vec();
        assert_eq!(ids.len(), 2);
        assert_eq!(t.between(&adj, &[false; 4], 0, 3), &ids[..]);
        assert_eq!(t.len(), 2);
        assert_eq!(t.ports(ids[0]).len(), 2);
    }
}
