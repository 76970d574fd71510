//! Shortest-path routing tables with all equal-cost next hops (the candidate sets ECMP and the
//! other load balancers choose from).
//!
//! Hosts never forward, so every path to a host ends with one of the links that attach it. Hosts
//! attached (by links that are up) to the same set of nodes, such as the hosts of one rack, are
//! one *destination group*: from any switch not attached to them, their candidate sets are the
//! same. So the table has one row per switch and one column per group, not per host: a
//! 16,384-host fat-tree needs 1,280 switches × 512 edge groups, and a Jellyfish one switch ×
//! switch table, where an all-pairs table would need nodes × hosts entries. At a switch attached
//! to the destination, the candidates are its own links to that host.
//!
//! An entry is kept in one of two layouts, whichever suits the fabric:
//! - **sets**: the entry names a candidate set interned per switch, whose ports a lookup returns
//!   as they are stored. Clos fabrics repeat a few sets per switch (the up-links, one down-link),
//!   so this costs little beyond the table.
//! - **masks**: the entry is a bitmask over the switch's switch-facing ports (2, 4 or 8 bytes,
//!   by the largest switch degree), which a lookup turns into ports. In a random graph almost
//!   every entry is a set of its own, and storing each set's ports would take several times the
//!   table (a 10,000-host Jellyfish: 79 MB of sets beside a 25 MB table); masks are chosen when
//!   the set layout would take more than 8 MB and more than twice the masks.
//!
//! Both give the same candidates in the same order (port order).
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
/// A set-layout entry of a switch that attaches the group: its candidates are its own links to
/// the destination host. (A mask-layout entry says so with every bit set, which no mask of
/// switch-facing ports can be: the mask is wider than the switch's degree.)
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

/// How the switch × group table keeps its entries (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Masks if the set layout would take more than 8 MB and more than twice the masks
    /// ([`prefer_masks`]).
    Auto,
    Sets,
    Masks,
}

enum Table {
    /// Set numbers (into `Routes::sets`) or [`ATTACHED`].
    Sets(Vec<u32>),
    /// Masks over the switch-facing ports; all ones for an attached group.
    Masks16(Vec<u16>),
    Masks32(Vec<u32>),
    Masks64(Vec<u64>),
}

/// The candidate ports a lookup found: stored as they are, or as a mask over the switch's
/// switch-facing ports (`ports`), bit i standing for `ports[i]`.
#[derive(Clone, Copy, Debug)]
pub enum Candidates<'a> {
    Ports(&'a [u32]),
    Mask { mask: u64, ports: &'a [u32] },
}

impl<'a> Candidates<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Candidates::Ports(p) => p.len(),
            Candidates::Mask { mask, .. } => mask.count_ones() as usize,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first candidate in port order.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        match *self {
            Candidates::Ports(p) => p.first().copied(),
            Candidates::Mask { mask, ports } => (mask != 0).then(|| ports[mask.trailing_zeros() as usize]),
        }
    }

    /// The candidates as a slice in port order; a mask is written out into `buf`.
    #[inline]
    pub fn as_slice<'b>(self, buf: &'b mut Vec<u32>) -> &'b [u32]
    where
        'a: 'b,
    {
        match self {
            Candidates::Ports(p) => p,
            Candidates::Mask { mask, ports } => {
                buf.clear();
                buf.extend(mask_ports(mask, ports));
                buf
            }
        }
    }
}

pub struct Routes {
    /// Per node: its row in `table` (switches only).
    row: Vec<u32>,
    /// Per host: its destination group.
    group: Vec<u32>,
    groups: usize,
    /// `row × groups + group`.
    table: Table,
    /// Set layout: interned candidate sets, `(start, len)` into `ports`; set 0 is empty.
    sets: Vec<(u32, u32)>,
    ports: Vec<u32>,
    /// Mask layout: per switch row, `(start, len)` into `nbr_ports`, its ports that lead to a
    /// switch, in port order.
    nbr: Vec<(u32, u32)>,
    nbr_ports: Vec<u32>,
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
        Routes::compute_with(adjacency, is_host, host_nodes, usable, Layout::Auto)
    }

    /// [`Routes::compute`] with the table's layout chosen (a switch of 64 or more switch-facing
    /// ports always gets the set layout).
    pub fn compute_with(adjacency: &[Vec<Adjacent>], is_host: &[bool], host_nodes: &[u32], usable: impl Fn(u32) -> bool, layout: Layout) -> Routes {
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
        let (mut nbr, mut nbr_ports) = (Vec::new(), Vec::new());
        for n in 0..nodes {
            if !is_host[n] {
                row[n] = nbr.len() as u32;
                let start = nbr_ports.len() as u32;
                nbr_ports.extend(adjacency[n].iter().filter(|a| !is_host[a.neighbor as usize]).map(|a| a.port));
                nbr.push((start, nbr_ports.len() as u32 - start));
            }
        }
        let switches = nbr.len();
        let degree = nbr.iter().map(|&(_, l)| l).max().unwrap_or(0);
        let mut routes = Routes { row, group, groups, table: Table::Sets(Vec::new()), sets: vec![(0, 0)], ports: Vec::new(), nbr, nbr_ports, attach, attach_node, attach_port };
        if degree >= 64 {
            // Too wide for a mask: each entry's set is stored as found.
            let mut table = vec![0u32; switches * groups];
            let mut set = Vec::new();
            shortest_paths(adjacency, is_host, &usable, &group_attach, |n, g, closer| {
                let entry = &mut table[routes.row[n] as usize * groups + g];
                let Some(closer) = closer else {
                    *entry = ATTACHED;
                    return;
                };
                set.clear();
                set.extend(adjacency[n].iter().filter(|a| closer(a)).map(|a| a.port));
                if !set.is_empty() {
                    *entry = routes.sets.len() as u32;
                    routes.sets.push((routes.ports.len() as u32, set.len() as u32));
                    routes.ports.extend_from_slice(&set);
                }
            });
            routes.table = Table::Sets(table);
            return routes;
        }
        // Masks over each switch's switch-facing ports (bit i: its i-th such port).
        let mut masks = vec![0u64; switches * groups];
        shortest_paths(adjacency, is_host, &usable, &group_attach, |n, g, closer| {
            let mut mask = 0u64;
            match closer {
                None => mask = u64::MAX,
                Some(closer) => {
                    for (i, a) in adjacency[n].iter().filter(|a| !is_host[a.neighbor as usize]).enumerate() {
                        if closer(a) {
                            mask |= 1 << i;
                        }
                    }
                }
            }
            masks[routes.row[n] as usize * groups + g] = mask;
        });
        // Intern the masks per switch, in table order, unless the masks are asked for; with
        // `Auto`, stop as soon as the set layout is known to be too large.
        let width = if degree < 16 { 2 } else if degree < 32 { 4 } else { 8 };
        let mut table = Vec::new();
        if layout != Layout::Masks {
            table = vec![0u32; masks.len()];
            let mut ids: HashMap<u64, u32> = HashMap::new();
            for r in 0..switches {
                ids.clear();
                let (s, l) = routes.nbr[r];
                let ports = &routes.nbr_ports[s as usize..(s + l) as usize];
                for g in 0..groups {
                    let m = masks[r * groups + g];
                    table[r * groups + g] = match m {
                        0 => 0,
                        u64::MAX => ATTACHED,
                        _ => *ids.entry(m).or_insert_with(|| {
                            let id = routes.sets.len() as u32;
                            routes.sets.push((routes.ports.len() as u32, m.count_ones()));
                            routes.ports.extend(mask_ports(m, ports));
                            id
                        }),
                    };
                }
                if layout == Layout::Auto && prefer_masks(4 * masks.len() + 8 * routes.sets.len() + 4 * routes.ports.len(), width * masks.len()) {
                    table = Vec::new();
                    break;
                }
            }
        }
        if table.is_empty() && !masks.is_empty() {
            routes.sets = vec![(0, 0)];
            routes.ports = Vec::new();
            // A mask is narrower than its width, so only the attached marker (all ones) is
            // cut down, to the narrow all-ones.
            routes.table = match width {
                2 => Table::Masks16(masks.iter().map(|&m| m.min(u16::MAX as u64) as u16).collect()),
                4 => Table::Masks32(masks.iter().map(|&m| m.min(u32::MAX as u64) as u32).collect()),
                _ => Table::Masks64(masks),
            };
        } else {
            routes.table = Table::Sets(table);
        }
        routes
    }

    /// Candidate egress ports at switch `node` towards host index `dst` (empty if unreachable
    /// or if `node` is a host).
    #[inline(always)]
    pub fn candidates(&self, node: u32, dst: u32) -> Candidates<'_> {
        let r = self.row[node as usize];
        if r == NO_ROW {
            return Candidates::Ports(&[]);
        }
        let i = r as usize * self.groups + self.group[dst as usize] as usize;
        if let Table::Sets(t) = &self.table {
            let entry = t[i];
            if entry == ATTACHED {
                return Candidates::Ports(self.attached(node, dst));
            }
            let (s, l) = self.sets[entry as usize];
            return Candidates::Ports(&self.ports[s as usize..(s + l) as usize]);
        }
        self.mask_candidates(r, i, node, dst)
    }

    #[inline(never)]
    fn mask_candidates(&self, r: u32, i: usize, node: u32, dst: u32) -> Candidates<'_> {
        let (mask, all) = match &self.table {
            Table::Sets(_) => unreachable!("a set entry is looked up in `candidates`"),
            Table::Masks16(t) => (t[i] as u64, u16::MAX as u64),
            Table::Masks32(t) => (t[i] as u64, u32::MAX as u64),
            Table::Masks64(t) => (t[i], u64::MAX),
        };
        if mask == all {
            return Candidates::Ports(self.attached(node, dst));
        }
        let (s, l) = self.nbr[r as usize];
        Candidates::Mask { mask, ports: &self.nbr_ports[s as usize..(s + l) as usize] }
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
        match &self.table {
            Table::Sets(t) => t.len(),
            Table::Masks16(t) => t.len(),
            Table::Masks32(t) => t.len(),
            Table::Masks64(t) => t.len(),
        }
    }

    /// The layout the table was given ([`Layout::Sets`] or [`Layout::Masks`]).
    pub fn layout(&self) -> Layout {
        match self.table {
            Table::Sets(_) => Layout::Sets,
            _ => Layout::Masks,
        }
    }

    /// Bytes the tables hold.
    pub fn memory_bytes(&self) -> usize {
        let table = match &self.table {
            Table::Sets(t) => 4 * t.len(),
            Table::Masks16(t) => 2 * t.len(),
            Table::Masks32(t) => 4 * t.len(),
            Table::Masks64(t) => 8 * t.len(),
        };
        table
            + 4 * (self.row.len() + self.group.len() + self.ports.len() + self.nbr_ports.len() + self.attach_node.len() + self.attach_port.len())
            + 8 * (self.sets.len() + self.nbr.len() + self.attach.len())
    }
}

/// The ports a mask over `ports` names, in order (bit i stands for `ports[i]`).
fn mask_ports(mut mask: u64, ports: &[u32]) -> impl Iterator<Item = u32> + '_ {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let p = ports[mask.trailing_zeros() as usize];
            mask &= mask - 1;
            p
        })
    })
}

/// The set layout is kept unless it would take more than [`MASKS_ABOVE`] bytes and more than
/// twice the mask layout: a mask is turned into ports on every lookup, which costs little next
/// to a table that no longer fits the caches.
fn prefer_masks(sets_bytes: usize, masks_bytes: usize) -> bool {
    sets_bytes > MASKS_ABOVE && sets_bytes > 2 * masks_bytes
}

const MASKS_ABOVE: usize = 8 << 20;

/// The breadth-first search of each group (module documentation): calls `entry(n, g, closer)`
/// for every switch `n` that reaches group `g`, with `closer` telling which of `n`'s links lead
/// to a switch one hop closer, or `None` if `n` attaches the group.
fn shortest_paths(adjacency: &[Vec<Adjacent>], is_host: &[bool], usable: &impl Fn(u32) -> bool, group_attach: &[Vec<u32>], mut entry: impl FnMut(usize, usize, Option<&dyn Fn(&Adjacent) -> bool>)) {
    let nodes = adjacency.len();
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
    let mut dist = vec![u32::MAX; nodes];
    let mut reached: Vec<u32> = Vec::new();
    let mut frontier = Vec::new();
    let mut next = Vec::new();
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
                entry(n, g, None);
                continue;
            }
            let closer = |a: &Adjacent| {
                let m = a.neighbor as usize;
                usable(a.port) && !is_host[m] && dist[m] != u32::MAX && dist[m] + 1 == d
            };
            entry(n, g, Some(&closer));
        }
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

    /// The candidates of `node` towards host index `dst`, whatever the layout.
    fn cands(routes: &Routes, node: u32, dst: u32) -> Vec<u32> {
        let c = routes.candidates(node, dst);
        let v = c.as_slice(&mut Vec::new()).to_vec();
        assert_eq!((c.len(), c.first()), (v.len(), v.first().copied()));
        v
    }

    #[test]
    fn group_tables_give_the_all_pairs_candidates_with_links_up_and_down() {
        let (adj, is_host, hosts) = fabric();
        // Every link up, then the dual-homed host's link to switch 1 down, then 2–3 and one of
        // host 10's parallel links down.
        let downs: [&[u32]; 3] = [&[], &[22, 23], &[8, 9, 26, 27]];
        for down in downs {
            let up = |p: u32| !down.contains(&p);
            for layout in [Layout::Sets, Layout::Masks] {
                let routes = Routes::compute_with(&adj, &is_host, &hosts, up, layout);
                assert_eq!(routes.layout(), layout);
                for (h, &dst) in hosts.iter().enumerate() {
                    for node in 0..5u32 {
                        assert_eq!(cands(&routes, node, h as u32), all_pairs(&adj, &is_host, dst, node, &up), "switch {node} to host node {dst}, links down {down:?}, {layout:?}");
                    }
                }
            }
        }
    }

    /// A random graph of `switches` switches of `degree` switch links (a Jellyfish without its
    /// rewiring, from a fixed seed) and one host each.
    fn random_graph(switches: u32, degree: usize) -> (Vec<Vec<Adjacent>>, Vec<bool>, Vec<u32>) {
        use rand::Rng as _;
        let mut rng = crate::sim::rng::stream(7, "test graph", 0);
        let mut links = Vec::new();
        let mut deg = vec![0usize; switches as usize];
        for _ in 0..switches as usize * degree * 4 {
            let (a, b) = (rng.random_range(0..switches), rng.random_range(0..switches));
            if a != b && deg[a as usize] < degree && deg[b as usize] < degree && !links.contains(&(a.min(b), a.max(b))) {
                links.push((a.min(b), a.max(b)));
                deg[a as usize] += 1;
                deg[b as usize] += 1;
            }
        }
        links.extend((0..switches).map(|s| (s, switches + s)));
        let adj = graph(2 * switches as usize, &links);
        let is_host = (0..2 * switches).map(|n| n >= switches).collect();
        (adj, is_host, (switches..2 * switches).collect())
    }

    #[test]
    fn on_a_random_graph_masks_take_a_fraction_of_the_sets_and_give_the_same_candidates() {
        let (adj, is_host, hosts) = random_graph(200, 8);
        let masks = Routes::compute_with(&adj, &is_host, &hosts, |_| true, Layout::Masks);
        let sets = Routes::compute_with(&adj, &is_host, &hosts, |_| true, Layout::Sets);
        // Nearly every (switch, destination) has a set of its own: at 2 bytes an entry the masks
        // take less than a third of the sets' layout. (At this size `Auto` keeps the sets.)
        assert!(3 * masks.memory_bytes() < sets.memory_bytes(), "{} against {}", masks.memory_bytes(), sets.memory_bytes());
        assert_eq!(Routes::compute(&adj, &is_host, &hosts, |_| true).layout(), Layout::Sets);
        for (h, &dst) in hosts.iter().enumerate() {
            for node in 0..200u32 {
                assert_eq!(cands(&masks, node, h as u32), cands(&sets, node, h as u32));
                // The search the tables replace, on a sample.
                if (h as u32 + node) % 50 == 0 {
                    assert_eq!(cands(&masks, node, h as u32), all_pairs(&adj, &is_host, dst, node, &|_| true));
                }
            }
        }
        // `Auto` takes the masks once the sets pass 8 MB and twice the masks.
        assert!(prefer_masks(104 << 20, 13 << 20) && !prefer_masks(4 << 20, 1 << 20) && !prefer_masks(20 << 20, 12 << 20));
        // A leaf-spine (16 leaves of 4 hosts, 8 spines) repeats a few sets per switch: it keeps
        // the sets.
        let (leaves, spines, per_leaf) = (16u32, 8u32, 4u32);
        let mut links: Vec<(u32, u32)> = (0..leaves).flat_map(|l| (0..spines).map(move |s| (l, leaves + s))).collect();
        let first_host = leaves + spines;
        links.extend((0..leaves * per_leaf).map(|h| (h / per_leaf, first_host + h)));
        let n = (first_host + leaves * per_leaf) as usize;
        let adj = graph(n, &links);
        let is_host: Vec<bool> = (0..n as u32).map(|v| v >= first_host).collect();
        let hosts: Vec<u32> = (first_host..n as u32).collect();
        let clos = Routes::compute(&adj, &is_host, &hosts, |_| true);
        assert_eq!(clos.layout(), Layout::Sets);
        assert_eq!(cands(&clos, 0, 63), (0..spines).map(|s| 2 * s).collect::<Vec<_>>(), "a leaf's up-links towards another leaf's host");
    }

    #[test]
    fn hosts_of_a_rack_share_one_group_and_the_table_is_switches_by_groups() {
        let (adj, is_host, hosts) = fabric();
        let routes = Routes::compute(&adj, &is_host, &hosts, |_| true);
        // Hosts 5 and 6 (both on switch 1) share a group; 9 (on 1 and 2) and 10 (twice on 4) do not.
        assert_eq!(routes.group[0], routes.group[1]);
        assert_eq!(routes.groups, 5);
        assert_eq!(routes.table_entries(), 5 * 5);
        assert_eq!(cands(&routes, 4, 5), [26, 28], "both parallel links of switch 4 to host 10");
        assert_eq!(cands(&routes, 0, 4), [0, 2, 4], "switch 0 reaches the dual-homed host 9 through 1 (two links) and 2");
        assert_eq!(cands(&routes, 5, 1), [] as [u32; 0], "hosts have no row");
    }
}
