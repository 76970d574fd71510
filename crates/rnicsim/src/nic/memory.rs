//! Host memory behind the NIC: one flat address space per host, either real bytes (so tests can
//! check what arrived) or size-only (large simulations). Memory regions register ranges of it;
//! memory windows grant remote access to sub-ranges of a region, with keys of their own, until
//! they are invalidated.

use super::verbs::{Access, MemoryRegion, MemoryWindow};

/// Regions and windows each take at most this many slots per host; a key's low 16 bits are its
/// slot, with this bit set for a window.
const WINDOW_BIT: u32 = 0x8000;

/// One host's memory.
pub struct HostMemory {
    size: u64,
    bytes: Option<Vec<u8>>,
    regions: Vec<MemoryRegion>,
    /// Every window ever bound, and whether it is still valid (slots are never reused).
    windows: Vec<(MemoryWindow, bool)>,
}

impl HostMemory {
    pub fn new(size: u64, real_bytes: bool) -> HostMemory {
        HostMemory { size, bytes: real_bytes.then(|| vec![0; size as usize]), regions: Vec::new(), windows: Vec::new() }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn has_bytes(&self) -> bool {
        self.bytes.is_some()
    }

    /// Registers `[addr, addr + len)`; keys are `host << 16 | index` (lkey) and that plus a
    /// high bit (rkey), so a key names its host and region and a forged key is rejected.
    pub fn register(&mut self, host: u32, addr: u64, len: u64, access: Access) -> Option<MemoryRegion> {
        if addr.checked_add(len).is_none_or(|end| end > self.size) || self.regions.len() >= WINDOW_BIT as usize {
            return None;
        }
        let index = self.regions.len() as u32;
        let lkey = (host << 16) | index;
        let mr = MemoryRegion { host, addr, len, lkey, rkey: lkey | 0x8000_0000, access };
        self.regions.push(mr);
        Some(mr)
    }

    /// Every region registered, in registration order.
    pub fn regions(&self) -> &[MemoryRegion] {
        &self.regions
    }

    /// The region an rkey names, if it is one of this host's.
    pub fn by_rkey(&self, rkey: u32) -> Option<&MemoryRegion> {
        let mr = self.regions.get((rkey & 0xffff) as usize)?;
        (mr.rkey == rkey).then_some(mr)
    }

    pub fn by_lkey(&self, lkey: u32) -> Option<&MemoryRegion> {
        let mr = self.regions.get((lkey & 0xffff) as usize)?;
        (mr.lkey == lkey).then_some(mr)
    }

    /// Binds a window over `[addr, addr + len)` of the region `lkey` names, with remote rights
    /// `access`: the region must allow binding (`MW_BIND`) and every right asked for, and hold
    /// the whole range.
    pub fn bind_window(&mut self, host: u32, lkey: u32, addr: u64, len: u64, access: Access) -> Result<MemoryWindow, &'static str> {
        let mr = *self.by_lkey(lkey).ok_or("no region has that lkey")?;
        if !mr.access.allows(Access::MW_BIND) {
            return Err("the region was registered without MW_BIND");
        }
        if access.0 == 0 || !Access::REMOTE.allows(access) {
            return Err("a window grants remote read and/or remote write, nothing else");
        }
        if !mr.access.allows(access) {
            return Err("the region does not allow the rights asked for");
        }
        if len == 0 || !mr.contains(addr, len) {
            return Err("the range is empty or not inside the region");
        }
        if self.windows.len() >= WINDOW_BIT as usize {
            return Err("the host has bound its last window");
        }
        let rkey = 0x8000_0000 | (host << 16) | WINDOW_BIT | self.windows.len() as u32;
        let w = MemoryWindow { host, addr, len, rkey, access, region: lkey };
        self.windows.push((w, true));
        Ok(w)
    }

    /// Invalidates the window `rkey` names; the window it was, if it was valid.
    pub fn invalidate_window(&mut self, rkey: u32) -> Option<MemoryWindow> {
        let slot = self.window_slot(rkey)?;
        let (w, valid) = &mut self.windows[slot];
        std::mem::replace(valid, false).then_some(*w)
    }

    /// The slot of the window `rkey` names (valid or not), if it is one of this host's.
    fn window_slot(&self, rkey: u32) -> Option<usize> {
        let slot = (rkey & (WINDOW_BIT - 1)) as usize;
        (rkey & WINDOW_BIT != 0 && self.windows.get(slot).is_some_and(|(w, _)| w.rkey == rkey)).then_some(slot)
    }

    /// The valid window an rkey names, if it is one of this host's.
    pub fn window(&self, rkey: u32) -> Option<&MemoryWindow> {
        let (w, valid) = &self.windows[self.window_slot(rkey)?];
        valid.then_some(w)
    }

    /// Every valid window, in binding order.
    pub fn windows(&self) -> impl Iterator<Item = &MemoryWindow> {
        self.windows.iter().filter(|(_, v)| *v).map(|(w, _)| w)
    }

    /// Checks a remote access: key (a region's or a valid window's), range and right.
    pub fn check_remote(&self, rkey: u32, addr: u64, len: u64, right: Access) -> bool {
        if let Some(w) = self.window(rkey) {
            return w.access.allows(right) && w.contains(addr, len);
        }
        self.by_rkey(rkey).is_some_and(|mr| mr.access.allows(right) && mr.contains(addr, len))
    }

    /// Checks a local buffer against its lkey.
    pub fn check_local(&self, lkey: u32, addr: u64, len: u64) -> bool {
        self.by_lkey(lkey).is_some_and(|mr| mr.contains(addr, len))
    }

    pub fn read(&self, addr: u64, out: &mut Vec<u8>, len: usize) {
        out.clear();
        if let Some(b) = &self.bytes {
            out.extend_from_slice(&b[addr as usize..addr as usize + len]);
        }
    }

    /// Writes `data` at `addr` (DMA placement, or what an application writes before posting).
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        if let Some(b) = &mut self.bytes {
            b[addr as usize..addr as usize + data.len()].copy_from_slice(data);
        }
    }

    /// The bytes of `[addr, addr + len)` (empty in size-only mode).
    pub fn slice(&self, addr: u64, len: u64) -> &[u8] {
        match &self.bytes {
            Some(b) => &b[addr as usize..(addr + len) as usize],
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_ranges() {
        let mut m = HostMemory::new(1 << 20, true);
        let a = m.register(3, 4096, 8192, Access::REMOTE_WRITE).unwrap();
        let b = m.register(3, 0, 4096, Access::REMOTE_READ).unwrap();
        assert!(m.check_remote(a.rkey, 4096, 8192, Access::REMOTE_WRITE));
        assert!(!m.check_remote(a.rkey, 4096, 8193, Access::REMOTE_WRITE), "one byte past the end");
        assert!(!m.check_remote(a.rkey, 4000, 100, Access::REMOTE_WRITE), "before the start");
        assert!(!m.check_remote(a.rkey, 4096, 10, Access::REMOTE_READ), "no read right");
        assert!(!m.check_remote(a.lkey, 4096, 10, Access::REMOTE_WRITE), "an lkey is no rkey");
        assert!(!m.check_remote(b.rkey ^ 1, 0, 10, Access::REMOTE_READ), "forged key");
        assert!(m.register(3, (1 << 20) - 10, 11, Access::ALL).is_none());
        m.write(4096, b"abc");
        assert_eq!(m.slice(4096, 3), b"abc");
    }

    #[test]
    fn a_window_grants_its_range_and_rights_until_invalidated() {
        let mut m = HostMemory::new(1 << 20, false);
        let mr = m.register(3, 0, 1 << 16, Access::ALL).unwrap();
        let plain = m.register(3, 1 << 16, 4096, Access::REMOTE_READ).unwrap();
        assert!(m.bind_window(3, plain.lkey, 1 << 16, 64, Access::REMOTE_READ).is_err(), "no MW_BIND on the region");
        assert!(m.bind_window(3, mr.lkey, 4096, 0, Access::REMOTE_READ).is_err(), "empty");
        assert!(m.bind_window(3, mr.lkey, (1 << 16) - 10, 11, Access::REMOTE_READ).is_err(), "past the region");
        assert!(m.bind_window(3, mr.lkey, 0, 64, Access::LOCAL_WRITE).is_err(), "not a remote right");
        assert!(m.bind_window(3, mr.lkey ^ 5, 0, 64, Access::REMOTE_READ).is_err(), "no such region");
        let w = m.bind_window(3, mr.lkey, 4096, 256, Access::REMOTE_READ).unwrap();
        assert_ne!(w.rkey, mr.rkey);
        assert!(m.check_remote(w.rkey, 4096, 256, Access::REMOTE_READ));
        assert!(m.check_remote(w.rkey, 4096 + 200, 56, Access::REMOTE_READ));
        assert!(!m.check_remote(w.rkey, 4096 + 200, 57, Access::REMOTE_READ), "one byte past the window");
        assert!(!m.check_remote(w.rkey, 4095, 1, Access::REMOTE_READ), "before it, though inside the region");
        assert!(!m.check_remote(w.rkey, 4096, 8, Access::REMOTE_WRITE), "the window grants no write");
        assert!(!m.check_remote(w.rkey + 1, 4096, 8, Access::REMOTE_READ), "a forged window key");
        assert_eq!(m.invalidate_window(w.rkey), Some(w));
        assert!(!m.check_remote(w.rkey, 4096, 8, Access::REMOTE_READ), "invalidated");
        assert_eq!(m.invalidate_window(w.rkey), None, "twice");
        let again = m.bind_window(3, mr.lkey, 4096, 256, Access::REMOTE_READ).unwrap();
        assert_ne!(again.rkey, w.rkey, "a key is never reused");
        assert!(!m.check_remote(w.rkey, 4096, 8, Access::REMOTE_READ) && m.check_remote(again.rkey, 4096, 8, Access::REMOTE_READ));
        assert!(m.check_remote(mr.rkey, 0, 1 << 16, Access::REMOTE_WRITE), "the region's own key is untouched");
    }
}
