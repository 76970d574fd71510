//! Host memory behind the NIC: one flat address space per host, either real bytes (so tests can
//! check what arrived) or size-only (large simulations). Memory regions register ranges of it.

use super::verbs::{Access, MemoryRegion};

/// One host's memory.
pub struct HostMemory {
    size: u64,
    bytes: Option<Vec<u8>>,
    regions: Vec<MemoryRegion>,
}

impl HostMemory {
    pub fn new(size: u64, real_bytes: bool) -> HostMemory {
        HostMemory { size, bytes: real_bytes.then(|| vec![0; size as usize]), regions: Vec::new() }
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
        if addr.checked_add(len).is_none_or(|end| end > self.size) || self.regions.len() >= 0xffff {
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

    /// Checks a remote access: key, range and right.
    pub fn check_remote(&self, rkey: u32, addr: u64, len: u64, right: Access) -> bool {
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
}
