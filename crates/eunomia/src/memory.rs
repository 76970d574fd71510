//! The memory controller (Eunomia §3.4, §4): one master array of 2-byte blocks and an
//! allocation bitmap with one bit per block. Bitmap rows are placed first-fit from the head of
//! the array, a connection's metadata run is found searching backward from its tail, and a
//! connection's blocks are released all at once when it completes (§3.5.3). Bytes in use are
//! exact at every instant: they are the allocated blocks times two.

/// A null block address: a connection with no reorder bitmap (its Dynamic BM Address, DBA).
pub const NULL: u32 = u32::MAX;

/// Bytes in one block of the master array.
pub const BLOCK_BYTES: u32 = 2;

#[derive(Clone, Debug)]
pub struct MemoryController {
    /// The master array.
    words: Vec<u16>,
    /// `block_alloc_bitmap`: bit `i` set when block `i` is in use.
    used: Vec<u64>,
    in_use: u32,
    peak: u32,
    /// No word of `used` below this one has a free bit (a search shortcut, not state).
    first_free_word: usize,
    /// No word of `used` above this one has a free bit (the same, from the tail).
    last_free_word: usize,
}

impl MemoryController {
    /// A master array of `blocks` blocks, all free.
    pub fn new(blocks: u32) -> MemoryController {
        let words = (blocks as usize).div_ceil(64);
        let mut used = vec![0u64; words];
        // Bits past the end count as used, so that searches never return them.
        let tail = blocks as usize % 64;
        if tail != 0 {
            used[words - 1] = !0u64 << tail;
        }
        MemoryController { words: vec![0; blocks as usize], used, in_use: 0, peak: 0, first_free_word: 0, last_free_word: words.saturating_sub(1) }
    }

    pub fn blocks(&self) -> u32 {
        self.words.len() as u32
    }

    /// Blocks allocated now.
    pub fn blocks_in_use(&self) -> u32 {
        self.in_use
    }

    /// Bytes allocated now.
    pub fn bytes_in_use(&self) -> u64 {
        self.in_use as u64 * BLOCK_BYTES as u64
    }

    /// The most bytes ever allocated at once.
    pub fn peak_bytes(&self) -> u64 {
        self.peak as u64 * BLOCK_BYTES as u64
    }

    pub fn is_used(&self, block: u32) -> bool {
        self.used[block as usize / 64] >> (block % 64) & 1 == 1
    }

    #[inline]
    pub fn word(&self, block: u32) -> u16 {
        self.words[block as usize]
    }

    /// Hints the CPU to fetch the cache line holding `block` (no effect on state).
    #[inline]
    pub fn prefetch(&self, block: u32) {
        #[cfg(target_arch = "x86_64")]
        if let Some(w) = self.words.get(block as usize) {
            // SAFETY: a prefetch of a valid address reads nothing and writes nothing.
            unsafe { std::arch::x86_64::_mm_prefetch(w as *const u16 as *const i8, std::arch::x86_64::_MM_HINT_T0) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = block;
    }

    #[inline]
    pub fn set_word(&mut self, block: u32, v: u16) {
        self.words[block as usize] = v;
    }

    /// The `N` blocks from `start` as one array (one bounds check for the run, not one per
    /// block: a connection's metadata is read and written this way).
    #[inline]
    pub fn run<const N: usize>(&self, start: u32) -> &[u16; N] {
        let s = start as usize;
        self.words[s..s + N].try_into().expect("a run of N blocks")
    }

    #[inline]
    pub fn run_mut<const N: usize>(&mut self, start: u32) -> &mut [u16; N] {
        let s = start as usize;
        (&mut self.words[s..s + N]).try_into().expect("a run of N blocks")
    }

    /// First fit from the head: the lowest run of `len` free blocks starting in `lo..=hi`.
    pub fn alloc_forward(&mut self, len: u32, lo: u32, hi: u32) -> Option<u32> {
        let n = self.blocks();
        let hi = hi.min(n.saturating_sub(len));
        let mut start = lo.max((self.first_free_word * 64) as u32);
        if len == 1 {
            // The common case (16-bit rows): the first zero bit at or after `start`.
            let mut w = start as usize / 64;
            let mut mask = !0u64 << (start % 64);
            while w < self.used.len() {
                let free = !self.used[w] & mask;
                if free != 0 {
                    let b = (w * 64) as u32 + free.trailing_zeros();
                    if b > hi {
                        return None;
                    }
                    self.mark(b, 1);
                    return Some(b);
                }
                w += 1;
                mask = !0;
                if (w * 64) as u32 > hi {
                    return None;
                }
            }
            return None;
        }
        while start <= hi {
            if self.used[start as usize / 64] == !0 {
                start = (start / 64 + 1) * 64;
                continue;
            }
            match (start..start + len).find(|&b| self.is_used(b)) {
                None => {
                    self.mark(start, len);
                    return Some(start);
                }
                Some(b) => start = b + 1,
            }
        }
        None
    }

    /// A run of `len` free blocks searched backward from the tail: the highest such run.
    pub fn alloc_backward(&mut self, len: u32) -> Option<u32> {
        let n = self.blocks();
        if len == 0 || len > n {
            return None;
        }
        // `end` is one past the last block of the candidate run.
        let mut end = n.min((self.last_free_word as u32 + 1) * 64);
        while end >= len {
            let last = end - 1;
            if self.used[last as usize / 64] == !0 {
                end = last / 64 * 64;
                continue;
            }
            match (end - len..end).rev().find(|&b| self.is_used(b)) {
                None => {
                    let start = end - len;
                    self.mark(start, len);
                    return Some(start);
                }
                Some(b) => end = b,
            }
        }
        None
    }

    fn mark(&mut self, start: u32, len: u32) {
        for b in start..start + len {
            self.used[b as usize / 64] |= 1 << (b % 64);
        }
        self.in_use += len;
        self.peak = self.peak.max(self.in_use);
        while self.first_free_word < self.used.len() && self.used[self.first_free_word] == !0 {
            self.first_free_word += 1;
        }
        while self.last_free_word > 0 && self.used[self.last_free_word] == !0 {
            self.last_free_word -= 1;
        }
    }

    /// Releases `len` blocks from `start` (their contents stay until overwritten, as §4 says).
    pub fn free(&mut self, start: u32, len: u32) {
        for b in start..start + len {
            let (w, bit) = (b as usize / 64, 1u64 << (b % 64));
            debug_assert!(self.used[w] & bit != 0, "block {b} freed twice");
            self.used[w] &= !bit;
        }
        self.in_use -= len;
        self.first_free_word = self.first_free_word.min(start as usize / 64);
        self.last_free_word = self.last_free_word.max((start + len - 1) as usize / 64);
    }

    /// Blocks marked in use, counted from the allocation bitmap (for checks against the
    /// running count).
    pub fn count_used(&self) -> u32 {
        let n = self.blocks();
        (0..n).filter(|&b| self.is_used(b)).count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_from_the_head_and_runs_from_the_tail() {
        let mut m = MemoryController::new(100);
        assert_eq!(m.alloc_backward(24), Some(76));
        assert_eq!(m.alloc_forward(1, 0, u32::MAX), Some(0));
        assert_eq!(m.alloc_forward(1, 0, u32::MAX), Some(1));
        assert_eq!(m.alloc_backward(24), Some(52));
        m.free(0, 1);
        assert_eq!(m.alloc_forward(1, 0, u32::MAX), Some(0), "a freed block is reused first");
        assert_eq!(m.alloc_forward(2, 0, u32::MAX), Some(2));
        assert_eq!(m.alloc_forward(1, 10, u32::MAX), Some(10), "the search starts at the window");
        assert_eq!(m.blocks_in_use(), 24 + 24 + 2 + 2 + 1);
        assert_eq!(m.count_used(), m.blocks_in_use());
        assert_eq!(m.bytes_in_use(), 2 * m.blocks_in_use() as u64);
    }

    #[test]
    fn a_full_array_refuses() {
        let mut m = MemoryController::new(70);
        assert_eq!(m.alloc_backward(64), Some(6));
        assert_eq!(m.alloc_backward(7), None);
        assert_eq!(m.alloc_backward(6), Some(0));
        assert_eq!(m.alloc_forward(1, 0, u32::MAX), None);
        m.free(6, 64);
        assert_eq!(m.alloc_forward(1, 0, 5), None, "the window holds no free block");
        assert_eq!(m.alloc_forward(1, 0, 6), Some(6));
        assert_eq!(m.peak_bytes(), 140);
    }
}
