//! The security registry table of a stateful side's NIC (StaR §III-D, §IV-B3).
//!
//! A stateless NIC checks nothing, so the NIC that sends to it must: every packet bound for
//! stateless processing is matched against a whitelist before it leaves, and dropped if no rule
//! allows it. Rules are ⟨server address, QPN, PD, MR⟩: a connection rule says which protection
//! domain the stateless side's queue pair belongs to (installed when the connection is made,
//! removed when it is destroyed), and memory rules say which regions of that server are in the
//! domain, with their keys, ranges and rights (installed when the server registers a region).
//! A memory window bound to a region of the domain is a memory rule too, with its own rkey, range
//! and rights and no lkey, installed when it is bound and removed when it is invalidated.

use crate::nic::verbs::Access;
use std::collections::BTreeMap;

/// One registered region (or bound memory window) of a stateless server, as its rule holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionRule {
    pub addr: u64,
    pub len: u64,
    /// `None` for a memory window: it grants remote access only.
    pub lkey: Option<u32>,
    pub rkey: u32,
    pub access: Access,
}

/// How a packet touches the stateless side's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUse {
    /// The key the operation names: the remote side's rkey, or the stateless side's own lkey
    /// for buffers its WQEs named (a READ's destination, a receive buffer).
    pub key: u32,
    pub remote: bool,
    pub addr: u64,
    pub len: u64,
    /// Data goes into the stateless side's memory (RD) or out of it (GD).
    pub write: bool,
}

/// The rules of one NIC.
#[derive(Clone, Debug, Default)]
pub struct Whitelist {
    /// (server node, server QPN) → protection domain.
    connections: BTreeMap<(u32, u32), u32>,
    /// (server node, protection domain) → its regions.
    regions: BTreeMap<(u32, u32), Vec<RegionRule>>,
}

impl Whitelist {
    pub fn allow_connection(&mut self, server: u32, qpn: u32, pd: u32) {
        self.connections.insert((server, qpn), pd);
    }

    /// Removes a connection's rule, and the server's region rules of that domain once no
    /// connection of the domain is left.
    pub fn remove_connection(&mut self, server: u32, qpn: u32) {
        if let Some(pd) = self.connections.remove(&(server, qpn)) {
            if !self.connections.iter().any(|(&(s, _), &p)| s == server && p == pd) {
                self.regions.remove(&(server, pd));
            }
        }
    }

    pub fn allow_region(&mut self, server: u32, pd: u32, r: RegionRule) {
        let v = self.regions.entry((server, pd)).or_default();
        if !v.contains(&r) {
            v.push(r);
        }
    }

    /// Removes the memory rule with rkey `rkey` of `server` (an invalidated window), in any
    /// domain; whether there was one.
    pub fn remove_rkey(&mut self, server: u32, rkey: u32) -> bool {
        let mut found = false;
        for ((s, _), v) in self.regions.iter_mut() {
            if *s == server {
                let before = v.len();
                v.retain(|r| r.rkey != rkey);
                found |= v.len() != before;
            }
        }
        found
    }

    /// Whether the server has a connection rule with this domain here (so its regions matter).
    pub fn knows(&self, server: u32, pd: u32) -> bool {
        self.connections.iter().any(|(&(s, _), &p)| s == server && p == pd)
    }

    pub fn rules(&self) -> usize {
        self.connections.len() + self.regions.values().map(Vec::len).sum::<usize>()
    }

    /// Whether a packet for `server`'s queue pair `qpn` may leave: the connection is
    /// whitelisted and, if it touches memory, a region of its domain covers the range with the
    /// key and the right.
    pub fn allows(&self, server: u32, qpn: u32, mem: Option<MemoryUse>) -> bool {
        let Some(&pd) = self.connections.get(&(server, qpn)) else { return false };
        let Some(m) = mem else { return true };
        let Some(regions) = self.regions.get(&(server, pd)) else { return false };
        regions.iter().any(|r| {
            let key_ok = if m.remote { r.rkey == m.key } else { r.lkey == Some(m.key) };
            let right = match (m.remote, m.write) {
                (true, true) => Access::REMOTE_WRITE,
                (true, false) => Access::REMOTE_READ,
                (false, true) => Access::LOCAL_WRITE,
                (false, false) => Access(0),
            };
            let inside = m.addr >= r.addr && m.addr.checked_add(m.len).is_some_and(|e| e <= r.addr + r.len);
            key_ok && inside && r.access.allows(right)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region() -> RegionRule {
        RegionRule { addr: 4096, len: 4096, lkey: Some(0x10), rkey: 0x8000_0010, access: Access::LOCAL_WRITE | Access::REMOTE_READ }
    }

    #[test]
    fn a_window_rule_grants_its_range_remotely_until_removed() {
        let mut w = Whitelist::default();
        w.allow_connection(5, 1, 0);
        w.allow_region(5, 0, region());
        let window = RegionRule { addr: 4096 + 512, len: 64, lkey: None, rkey: 0x8000_8000, access: Access::REMOTE_WRITE };
        w.allow_region(5, 0, window);
        let write = |key, remote, addr, len| Some(MemoryUse { key, remote, addr, len, write: true });
        assert!(w.allows(5, 1, write(0x8000_8000, true, 4096 + 512, 64)), "the window grants a remote write the region does not");
        assert!(!w.allows(5, 1, write(0x8000_8000, true, 4096 + 511, 64)), "outside the window");
        assert!(!w.allows(5, 1, write(0x8000_8000, false, 4096 + 512, 8)), "a window has no lkey");
        assert!(w.remove_rkey(5, 0x8000_8000));
        assert!(!w.allows(5, 1, write(0x8000_8000, true, 4096 + 512, 64)), "invalidated");
        assert!(!w.remove_rkey(5, 0x8000_8000));
        assert!(w.allows(5, 1, Some(MemoryUse { key: 0x8000_0010, remote: true, addr: 4096, len: 8, write: false })), "the region's rule stays");
    }

    #[test]
    fn a_packet_needs_its_connection_its_key_its_range_and_its_right() {
        let mut w = Whitelist::default();
        let write = |key, remote, addr, len| Some(MemoryUse { key, remote, addr, len, write: true });
        let read = |key, addr, len| Some(MemoryUse { key, remote: true, addr, len, write: false });
        assert!(!w.allows(5, 1, None), "no rule at all");
        w.allow_connection(5, 1, 0);
        assert!(w.allows(5, 1, None), "a CQEP or EA needs only the connection");
        assert!(!w.allows(5, 2, None), "another queue pair of the server");
        assert!(!w.allows(6, 1, None), "another server");
        assert!(!w.allows(5, 1, read(0x8000_0010, 4096, 32)), "no region registered yet");
        w.allow_region(5, 0, region());
        assert!(w.allows(5, 1, read(0x8000_0010, 4096, 32)));
        assert!(w.allows(5, 1, read(0x8000_0010, 8192 - 32, 32)));
        assert!(!w.allows(5, 1, read(0x8000_0010, 8192 - 31, 32)), "one byte past the region");
        assert!(!w.allows(5, 1, read(0x8000_0011, 4096, 32)), "forged rkey");
        assert!(!w.allows(5, 1, write(0x8000_0010, true, 4096, 32)), "the region allows no remote write");
        assert!(w.allows(5, 1, write(0x10, false, 4096, 32)), "the server's own receive buffer");
        assert!(!w.allows(5, 1, write(0x8000_0010, false, 4096, 32)), "an rkey is no lkey");
        w.remove_connection(5, 1);
        assert!(!w.allows(5, 1, None));
        assert_eq!(w.rules(), 0, "the last connection of the domain takes its regions along");
    }

    #[test]
    fn domains_keep_regions_apart() {
        let mut w = Whitelist::default();
        w.allow_connection(5, 1, 0);
        w.allow_connection(5, 2, 1);
        w.allow_region(5, 1, region());
        let m = Some(MemoryUse { key: 0x8000_0010, remote: true, addr: 4096, len: 8, write: false });
        assert!(!w.allows(5, 1, m), "the region is in domain 1, the connection in domain 0");
        assert!(w.allows(5, 2, m));
        w.remove_connection(5, 1);
        assert!(w.allows(5, 2, m), "domain 1 keeps its regions while its connection lives");
    }
}
