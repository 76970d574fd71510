//! Shortest-path routing tables with all equal-cost next hops (the candidate sets ECMP and the
//! other load balancers choose from).
//!
//! Hosts never forward, so every path to a host ends with one of the links that attach it. Hosts
//! attached (by links that are up) to the same set of nodes, such as the hosts of one rack, are
//! one *destination group*: from any switch not attached to them, their candidate sets are the
//! same. So the table has one row per switch and one column per group, not per host, and each
//! entry names an interned candidate set: a 16,384-host fat-tree needs 1,280 switches × 512
//! edge groups, and a Jellyfish one switch × switch table, where an all-pairs table would need
//! nodes × hosts entries. At a switch attached to the destination, the candidates are its own
//! links to that host.
//!
//! Each group's distances come from a breadth-first search backwards over the links that are
//! up, starting from the nodes that attach the group (distance 1) and crossing switches only; a
//! switch's candidates are its ports, in port order, to a switch one hop closer.

use std::collections::HashMap;

/// One egress port of a node and the node at its other end.
#[derive(Clone, Copy, Debug)]
pub struct Adjacent {
    pub port: u32,
    pub neighbor: u32,
}

/// No switch row: the node is a host.
const NO_ROW: u32 = u32::MAX;
/// A table entry of a switch that attaches the group: its candidates are its own links to the
/// destination host.
const ATTACHED: u32 = u32::MAX;

/// Numbers the destination groups: hosts whose attachment sets (each sorted, without repeats)
/// are equal share a group; groups are numbered in host order, so nothing depends on hashing.
/// Returns each host's group and each group's attachment set.
pub fn destination_groups(keys: impl IntoIterator<Item = Vec<u32>>) -> (Vec<u32>, Vec<Vec<u32>>) {
    let mut index: HashMap<Vec<u32>, u32> = HashMap::new();
    let mut sets = Vec::new();
    let group = keys
        .into_iter()
        .map(|key| {
            let next = sets.len() as u32;
            *index.entry(key).or_insert_with_key(|k| {
                sets.push(k.clone());
                next
            })
        })
        .collect();
    (group, sets)
}

pub struct Routes {
    /// Per node: its row in `table` (switches only).
    row: Vec<u32>,
    /// Per host: its destination group.
    group: Vec<u32>,
    groups: usize,
    /// `row × groups + group`: an index into `sets`, or [`ATTACHED`].
    table: Vec<u32>,
    /// Interned candidate sets: `(start, len)` into `ports`; set 0 is empty.
    sets: Vec<(u32, u32)>,
    ports: Vec<u32>,
    /// Per host: `(start, len)` into `attach_node` / `attach_port`, its usable links as seen from
    /// the nodes that attach it, in (node, port) order.
    attach: Vec<(u32, u32)>,
    attach_node: Vec<u32>,
    attach_port: Vec<u32>,
}

impl Routes {
    /// `adjacency[n]` lists node n's ports; `is_host[n]` marks hosts; `host_nodes[h]` is host h's
    /// node id; `usable(port)` says whether a port's link is up.
    pub fn compute(adjacency: &[Vec<Adjacent>], is_host: &[bool], host_nodes: &[u32], usable: impl Fn(u32) -> bool) -> Routes {
        let nodes = adjacency.len();
        let mut host_index = vec![u32::MAX; nodes];
        for (h, &n) in host_nodes.iter().enumerate() {
            host_index[n as usize] = h as u32;
        }
        // Each host's attaching links, seen from the attaching node, in (node, port) order.
        let mut per_host: Vec<Vec<(u32, u32)>> = vec![Vec::new(); host_nodes.len()];
        for (n, adj) in adjacency.iter().enumerate() {
            for a in adj.iter().filter(|a| usable(a.port)) {
                let h = host_index[a.neighbor as usize];
                if h != u32::MAX && a.neighbor != n as u32 {
                    per_host[h as usize].push((n as u32, a.port));
                }
            }
        }
        let (mut attach, mut attach_node, mut attach_port) = (Vec::with_capacity(per_host.len()), Vec::new(), Vec::new());
        for links in &per_host {
            attach.push((attach_node.len() as u32, links.len() as u32));
            attach_node.extend(links.iter().map(|l| l.0));
            attach_port.extend(links.iter().map(|l| l.1));
        }
        // Attaching nodes come in ascending order: each host's key is sorted once deduplicated.
        let (group, group_attach) = destination_groups(per_host.iter().map(|links| {
            let mut key: Vec<u32> = links.iter().map(|l| l.0).collect();
            key.dedup();
            key
        }));
        let groups = group_attach.len();

        let mut row = vec![NO_ROW; nodes];
        let mut switches = 0u32;
        for n in 0..nodes {
            if !is_host[n] {
                row[n] = switches;
                switches += 1;
            }
        }
        // reverse[v]: the switches with a usable link to v.
        let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for (n, adj) in adjacency.iter().enumerate() {
            if is_host[n] {
                continue;
            }
            for a in adj.iter().filter(|a| usable(a.port)) {
                reverse[a.neighbor as usize].push(n as u32);
            }
        }
        let mut table = vec![0u32; switches as usize * groups];
        let mut sets = vec![(0u32, 0u32)];
        let mut ports = Vec::new();
        // Interned by (switch, mask of positions in its adjacency list); a switch of more than
        // 64 ports keeps its sets uninterned.
        let mut set_of: HashMap<(u32, u64), u32> = HashMap::new();
        let mut dist = vec![u32::MAX; nodes];
        let mut reached: Vec<u32> = Vec::new();
        let mut frontier = Vec::new();
        let mut next = Vec::new();
        let mut set = Vec::new();
        for (g, attaching) in group_attach.iter().enumerate() {
            for &v in &reached {
                dist[v as usize] = u32::MAX;
            }
            reached.clear();
            frontier.clear();
            for &v in attaching {
                dist[v as usize] = 1;
                reached.push(v);
                if !is_host[v as usize] {
                    frontier.push(v);
                }
            }
            let mut level = 1;
            while !frontier.is_empty() {
                level += 1;
                next.clear();
                for &v in &frontier {
                    for &u in &reverse[v as usize] {
                        if dist[u as usize] == u32::MAX {
                            dist[u as usize] = level;
                            reached.push(u);
                            next.push(u);
                        }
                    }
                }
                std::mem::swap(&mut frontier, &mut next);
            }
            for &n in &reached {
                let (n, d) = (n as usize, dist[n as usize]);
                if is_host[n] {
                    continue;
                }
                if d == 1 {
                    table[row[n] as usize * groups + g] = ATTACHED;
                    continue;
                }
                set.clear();
                let mut mask = 0u64;
                for (i, a) in adjacency[n].iter().enumerate() {
                    let m = a.neighbor as usize;
                    if usable(a.port) && !is_host[m] && dist[m] + 1 == d {
                        set.push(a.port);
                        mask |= 1u64.checked_shl(i as u32).unwrap_or(0);
                    }
                }
                let key = (adjacency[n].len() <= 64).then_some((n as u32, mask));
                let id = match key.and_then(|k| set_of.get(&k)) {
                    Some(&id) => id,
                    None if set.is_empty() => 0,
                    None => {
                        let id = sets.len() as u32;
                        sets.push((ports.len() as u32, set.len() as u32));
                        ports.extend_from_slice(&set);
                        if let Some(k) = key {
                            set_of.insert(k, id);
                        }
                        id
                    }
                };
                table[row[n] as usize * groups + g] = id;
            }
        }
        Routes { row, group, groups, table, sets, ports, attach, attach_node, attach_port }
    }

    /// Candidate egress ports at switch `node` towards host index `dst` (empty if unreachable
    /// or if `node` is a host).
    #[inline]
    pub fn candidates(&self, node: u32, dst: u32) -> &[u32] {
        let r = self.row[node as usize];
        if r == NO_ROW {
            return &[];
        }
        let entry = self.table[r as usize * self.groups + self.group[dst as usize] as usize];
        if entry == ATTACHED {
            return self.attached(node, dst);
        }
        let (s, l) = self.sets[entry as usize];
        &self.ports[s as usize..(s + l) as usize]
    }

    /// The links of switch `node`, which attaches host `dst`, to that host.
    fn attached(&self, node: u32, dst: u32) -> &[u32] {
        let (s, l) = self.attach[dst as usize];
        let (s, e) = (s as usize, (s + l) as usize);
        let Some(i) = self.attach_node[s..e].iter().position(|&n| n == node) else { return &[] };
        let j = self.attach_node[s + i..e].iter().position(|&n| n != node).map_or(e, |k| s + i + k);
        &self.attach_port[s + i..j]
    }

    /// Entries in the switch × destination-group table.
    pub fn table_entries(&self) -> usize {
        self.table.len()
    }

    /// Bytes the tables hold.
    pub fn memory_bytes(&self) -> usize {
        4 * (self.row.len() + self.group.len() + self.table.len() + self.ports.len() + self.attach_node.len() + self.attach_port.len())
            + 8 * (self.sets.len() + self.attach.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds adjacency from undirected links; port ids are assigned in link order, two per link.
    fn graph(nodes: usize, links: &[(u32, u32)]) -> Vec<Vec<Adjacent>> {
        let mut adj = vec![Vec::new(); nodes];
        for (i, &(a, b)) in links.iter().enumerate() {
            adj[a as usize].push(Adjacent { port: 2 * i as u32, neighbor: b });
            adj[b as usize].push(Adjacent { port: 2 * i as u32 + 1, neighbor: a });
        }
        adj
    }

    /// The all-pairs search the group table replaces: candidates of `node` towards host node `dst`.
    fn all_pairs(adj: &[Vec<Adjacent>], is_host: &[bool], dst: u32, node: u32, up: &dyn Fn(u32) -> bool) -> Vec<u32> {
        let mut dist = vec![u32::MAX; adj.len()];
        dist[dst as usize] = 0;
        let mut frontier = vec![dst];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for &v in &frontier {
                if v != dst && is_host[v as usize] {
                    continue;
                }
                for (u, a) in adj.iter().enumerate() {
                    if a.iter().any(|a| a.neighbor == v && up(a.port)) && dist[u] == u32::MAX {
                        dist[u] = dist[v as usize] + 1;
                        next.push(u as u32);
                    }
                }
            }
            frontier = next;
        }
        if node == dst || dist[node as usize] == u32::MAX {
            return Vec::new();
        }
        adj[node as usize]
            .iter()
            .filter(|a| up(a.port) && dist[a.neighbor as usize] != u32::MAX && dist[a.neighbor as usize] + 1 == dist[node as usize] && (a.neighbor == dst || !is_host[a.neighbor as usize]))
            .map(|a| a.port)
            .collect()
    }

    /// A small irregular fabric: switches 0–4, hosts 5–10; host 9 is dual-homed (to 1 and 2),
    /// host 10 has two parallel links to switch 4, and 0–1 is a double link.
    fn fabric() -> (Vec<Vec<Adjacent>>, Vec<bool>, Vec<u32>) {
        let links = [(0, 1), (0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (2, 4), (1, 5), (1, 6), (2, 7), (3, 8), (1, 9), (2, 9), (4, 10), (4, 10)];
        let adj = graph(11, &links);
        let is_host: Vec<bool> = (0..11).map(|n| n >= 5).collect();
        (adj, is_host, (5..11).collect())
    }

    #[test]
    fn group_tables_give_the_all_pairs_candidates_with_links_up_and_down() {
        let (adj, is_host, hosts) = fabric();
        // Every link up, then the dual-homed host's link to switch 1 down, then 2–3 and one of
        // host 10's parallel links down.
        let downs: [&[u32]; 3] = [&[], &[22, 23], &[8, 9, 26, 27]];
        for down in downs {
            let up = |p: u32| !down.contains(&p);
            let routes = Routes::compute(&adj, &is_host, &hosts, up);
            for (h, &dst) in hosts.iter().enumerate() {
                for node in 0..5u32 {
                    assert_eq!(routes.candidates(node, h as u32), all_pairs(&adj, &is_host, dst, node, &up).as_slice(), "switch {node} to host node {dst}, links down {down:?}");
                }
            }
        }
    }

    #[test]
    fn hosts_of_a_rack_share_one_group_and_the_table_is_switches_by_groups() {
        let (adj, is_host, hosts) = fabric();
        let routes = Routes::compute(&adj, &is_host, &hosts, |_| true);
        // Hosts 5 and 6 (both on switch 1) share a group; 9 (on 1 and 2) and 10 (twice on 4) do not.
        assert_eq!(routes.group[0], routes.group[1]);
        assert_eq!(routes.groups, 5);
        assert_eq!(routes.table_entries(), 5 * 5);
        assert_eq!(routes.candidates(4, 5), &[26, 28], "both parallel links of switch 4 to host 10");
        assert_eq!(routes.candidates(0, 4), &[0, 2, 4], "switch 0 reaches the dual-homed host 9 through 1 (two links) and 2");
        assert_eq!(routes.candidates(5, 1), &[] as &[u32], "hosts have no row");
    }
}
