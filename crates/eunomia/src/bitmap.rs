//! The hybrid-dynamic (HD) reorder bitmap (Eunomia §3.3) over the memory controller's master
//! array (§3.4).
//!
//! A connection gets a bitmap only on its first out-of-order packet: a metadata run (Table 1:
//! Head, Tail, Last Seq, the head's row and index, the circular and total sizes; then the
//! absolute address of row 0 and one 2-byte relative address per further row) and one row of
//! `block_bits`. The rows form a table: the top `circular` rows are a circular array whose bit
//! for sequence `s` is `s − Head` past the head's position; rows below them are a linear array
//! whose first bit is the sequence after Tail, added when a packet lands beyond Tail (so the
//! circular part is never remapped). When Head passes Tail the circular part is empty and the
//! linear rows join it (Fig. 6c). A bitmap never exceeds `cap_bits`; a packet it cannot hold, or
//! one the master array has no room for, is refused (the NIC answers NACK and drops it). The
//! bitmap and its metadata are released when everything up to the last packet has arrived
//! (§3.5.3) or the connection closes.

use crate::memory::{MemoryController, NULL};

/// Sizes of the ordering layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Bits in one bitmap row (block); a row takes `ceil(block_bits / 16)` blocks.
    pub block_bits: u32,
    /// Most bits one connection's bitmap may hold: a whole number of rows, at most 127 rows.
    pub cap_bits: u32,
    /// Blocks (2 bytes each) in the master array.
    pub memory_blocks: u32,
}

impl Default for Config {
    /// The paper's FPGA settings (§4): 16-bit blocks, a 256-bit cap, 1024 blocks.
    fn default() -> Config {
        Config { block_bits: 16, cap_bits: 256, memory_blocks: 1024 }
    }
}

/// Most rows a bitmap may have (the row count shares a word with a flag).
pub const MAX_ROWS: u32 = 127;
/// Blocks of Table 1's variables: Head, Tail, Last Seq (4 bytes each), head row and index,
/// circular and total rows (1 byte each).
pub const VARIABLE_BLOCKS: u32 = 8;
/// Words of a connection's metadata read as a whole: the variables and row 0's absolute address
/// (the relative addresses of further rows follow them).
const META_WORDS: usize = VARIABLE_BLOCKS as usize + 2;

impl Config {
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |key, why: String| Err(ConfigError { key, why });
        if self.block_bits == 0 || self.block_bits > 255 {
            return bad("block_bits", format!("must be 1..=255, got {}", self.block_bits));
        }
        if self.cap_bits < self.block_bits || !self.cap_bits.is_multiple_of(self.block_bits) {
            return bad("cap_bits", format!("({}) must be a positive multiple of block_bits ({})", self.cap_bits, self.block_bits));
        }
        if self.max_rows() > MAX_ROWS {
            return bad("cap_bits", format!("/ block_bits is {} rows, at most {MAX_ROWS}", self.max_rows()));
        }
        let least = self.metadata_blocks() + self.row_blocks();
        if self.memory_blocks < least {
            return bad("memory", format!("of {} blocks cannot hold one bitmap ({least} blocks)", self.memory_blocks));
        }
        Ok(())
    }

    pub fn max_rows(&self) -> u32 {
        self.cap_bits / self.block_bits
    }

    /// Blocks of one row.
    pub fn row_blocks(&self) -> u32 {
        self.block_bits.div_ceil(16)
    }

    /// Blocks of one connection's metadata: the variables, a 4-byte absolute address of row 0
    /// and a 2-byte relative address for each further row (16 + 34 bytes at the paper's 256-bit
    /// cap with 16-bit blocks, §3.4).
    pub fn metadata_blocks(&self) -> u32 {
        VARIABLE_BLOCKS + 2 + (self.max_rows() - 1)
    }
}

/// A [`Config`] value out of range: the field (`memory` for `memory_blocks`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub key: &'static str,
    pub why: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.key, self.why)
    }
}

impl std::error::Error for ConfigError {}

/// What became of an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// It was the expected sequence: everything below `next` has now arrived in order (ACK).
    InOrder { next: u32 },
    /// Out of order and tracked (SACK).
    Tracked,
    /// Already received: below the expected sequence, or its bit already set.
    Duplicate,
    /// Out of order and not tracked: the NIC drops it and answers NACK.
    Refused(Refusal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Beyond what the bitmap may reach at its cap.
    Cap,
    /// The master array has no room for another row (or for a new bitmap).
    Memory,
}

/// Counts of what the layer did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub in_order: u64,
    pub tracked: u64,
    pub duplicates: u64,
    pub refused_cap: u64,
    pub refused_memory: u64,
    /// Bitmaps created (first out-of-order packet of a connection).
    pub created: u64,
    /// Rows added past the first.
    pub rows_added: u64,
    /// Linear portions merged into the circular one.
    pub merges: u64,
    /// Bitmaps released (complete, or closed).
    pub released: u64,
}

/// One connection's bitmap state, as the metadata words hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Meta {
    head: u32,
    tail: u32,
    last: u32,
    last_known: bool,
    head_row: u32,
    head_idx: u32,
    circular: u32,
    rows: u32,
    /// Absolute address of row 0.
    base: u32,
}

/// A connection's bitmap seen from outside (tests, traces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub head: u32,
    pub tail: u32,
    pub last: Option<u32>,
    pub circular_rows: u32,
    pub rows: u32,
    /// Sequences whose bits are set, ascending from Head.
    pub set: Vec<u32>,
    pub blocks: u32,
}

/// The receiver's ordering layer: the HD bitmap module and its memory controller. Connections
/// hold only their Dynamic BM Address (`dba`, [`NULL`] without a bitmap) and pass it in.
#[derive(Clone, Debug)]
pub struct OrderingLayer {
    cfg: Config,
    /// `log2(block_bits)` when it is a power of two (rows split by shifts, not divisions).
    shift: Option<u32>,
    mem: MemoryController,
    stats: Stats,
    /// Connections holding a bitmap now.
    active: u32,
}

impl OrderingLayer {
    pub fn new(cfg: Config) -> OrderingLayer {
        cfg.check().expect("ordering layer config");
        let shift = cfg.block_bits.is_power_of_two().then(|| cfg.block_bits.trailing_zeros());
        OrderingLayer { cfg, shift, mem: MemoryController::new(cfg.memory_blocks), stats: Stats::default(), active: 0 }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn memory(&self) -> &MemoryController {
        &self.mem
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Connections with a bitmap now.
    pub fn active(&self) -> u32 {
        self.active
    }

    /// Packet `psn` of a connection arrived while `expected` is its next in-order sequence;
    /// `last` is the sender's last-packet bit. Updates the connection's bitmap (creating,
    /// growing, merging or releasing it) and says what to answer.
    #[inline]
    pub fn arrive(&mut self, dba: &mut u32, expected: u32, psn: u32, last: bool) -> Arrival {
        let d = psn.wrapping_sub(expected);
        if (d as i32) < 0 {
            self.stats.duplicates += 1;
            return Arrival::Duplicate;
        }
        let fresh = *dba == NULL;
        if fresh {
            if d == 0 {
                self.stats.in_order += 1;
                return Arrival::InOrder { next: expected.wrapping_add(1) };
            }
            if d >= self.cfg.cap_bits {
                self.stats.refused_cap += 1;
                return Arrival::Refused(Refusal::Cap);
            }
            match self.create(expected) {
                Some(m) => *dba = m,
                None => {
                    self.stats.refused_memory += 1;
                    return Arrival::Refused(Refusal::Memory);
                }
            }
        }
        let at = *dba;
        if d == 0 && !last && self.in_order_fast(at, expected) {
            self.stats.in_order += 1;
            return Arrival::InOrder { next: expected.wrapping_add(1) };
        }
        let mut m = self.load(at);
        debug_assert_eq!(m.head, expected, "the bitmap's Head is the transport's expected sequence");
        if d == 0 {
            self.stats.in_order += 1;
            self.note_last(&mut m, psn, last);
            self.step_head(&mut m, 1);
            self.settle(at, &mut m);
            let next = m.head;
            if m.last_known && m.head.wrapping_sub(m.last.wrapping_add(1)) as i32 >= 0 && self.is_empty(at, &m) {
                self.release_at(at, &m);
                *dba = NULL;
            } else {
                self.store(at, &m);
            }
            return Arrival::InOrder { next };
        }
        let (row, idx) = match self.locate(&m, psn) {
            Some(x) => x,
            None => {
                // Beyond the rows it has: grow the linear part to reach it.
                let (r, idx) = self.split(psn.wrapping_sub(m.tail).wrapping_sub(1));
                let need = m.circular + r + 1;
                let refusal = if need > self.cfg.max_rows() {
                    self.stats.refused_cap += 1;
                    Some(Refusal::Cap)
                } else if !self.grow(at, &mut m, need) {
                    self.stats.refused_memory += 1;
                    Some(Refusal::Memory)
                } else {
                    None
                };
                if let Some(why) = refusal {
                    // A bitmap made for this packet alone tracks nothing: it goes again at once
                    // (kept, it held its blocks from other connections until the message ended).
                    if fresh {
                        self.release_at(at, &m);
                        *dba = NULL;
                        // Nor is it counted: it tracked no packet (50 were counted made for 8
                        // connections that a memory with room for more rows gave 4).
                        self.stats.created -= 1;
                        self.stats.released -= 1;
                    }
                    return Arrival::Refused(why);
                }
                (m.circular + r, idx)
            }
        };
        let (addr, bit) = self.bit_addr(at, &m, row, idx);
        let w = self.mem.word(addr);
        if w >> bit & 1 == 1 {
            self.stats.duplicates += 1;
            return Arrival::Duplicate;
        }
        self.mem.set_word(addr, w | 1 << bit);
        self.note_last(&mut m, psn, last);
        self.store(at, &m);
        self.stats.tracked += 1;
        Arrival::Tracked
    }

    /// The common in-order case in place: no linear rows, the next sequence not yet received,
    /// and Head not past Last Seq, so only Head, Tail and the head's position change. Returns
    /// false (changing nothing) when the general path is needed.
    #[inline]
    fn in_order_fast(&mut self, at: u32, head: u32) -> bool {
        let b = self.cfg.block_bits;
        let meta: &[u16; META_WORDS] = self.mem.run(at);
        let w7 = meta[7] as u32;
        let (circular, rows) = (w7 & 0x7f, w7 >> 7 & 0x7f);
        if rows != circular || w7 >> 15 == 1 {
            return false;
        }
        let w6 = meta[6] as u32;
        let base = meta[8] as u32 | (meta[9] as u32) << 16;
        let (row, idx) = self.stepped(w6 & 0xff, w6 >> 8, 1, circular);
        if self.mem.word(self.row_at(at, base, row) + idx / 16) >> (idx % 16) & 1 == 1 {
            return false;
        }
        let head = head.wrapping_add(1);
        let tail = head.wrapping_add(circular * b - 1);
        let meta: &mut [u16; META_WORDS] = self.mem.run_mut(at);
        meta[0] = head as u16;
        meta[1] = (head >> 16) as u16;
        meta[2] = tail as u16;
        meta[3] = (tail >> 16) as u16;
        meta[6] = (row | idx << 8) as u16;
        true
    }

    /// Hints the CPU to bring a connection's metadata into cache (a software datapath calls it
    /// a few packets ahead of [`arrive`](Self::arrive); it changes nothing).
    #[inline]
    pub fn prefetch_metadata(&self, dba: u32) {
        if dba != NULL {
            self.mem.prefetch(dba);
            self.mem.prefetch(dba + META_WORDS as u32);
        }
    }

    /// The connection closed: its bitmap and metadata, if any, are released.
    pub fn release(&mut self, dba: &mut u32) {
        if *dba != NULL {
            let m = self.load(*dba);
            self.release_at(*dba, &m);
            *dba = NULL;
        }
    }

    /// Bytes a connection's bitmap takes now (0 without one): metadata plus rows.
    pub fn bytes_of(&self, dba: u32) -> u64 {
        if dba == NULL {
            return 0;
        }
        let m = self.load(dba);
        (self.cfg.metadata_blocks() + m.rows * self.cfg.row_blocks()) as u64 * crate::memory::BLOCK_BYTES as u64
    }

    /// Bytes of a connection's bitmap rows alone (0 without one).
    pub fn bitmap_bytes_of(&self, dba: u32) -> u64 {
        if dba == NULL {
            return 0;
        }
        (self.load(dba).rows * self.cfg.row_blocks()) as u64 * crate::memory::BLOCK_BYTES as u64
    }

    /// The state of a connection's bitmap, or `None` without one.
    pub fn view(&self, dba: u32) -> Option<View> {
        if dba == NULL {
            return None;
        }
        let m = self.load(dba);
        let b = self.cfg.block_bits;
        let mut set = Vec::new();
        let reach = m.tail.wrapping_sub(m.head).wrapping_add(1).wrapping_add((m.rows - m.circular) * b);
        for d in 0..reach {
            let s = m.head.wrapping_add(d);
            if let Some((row, idx)) = self.locate(&m, s) {
                let (addr, bit) = self.bit_addr(dba, &m, row, idx);
                if self.mem.word(addr) >> bit & 1 == 1 {
                    set.push(s);
                }
            }
        }
        Some(View {
            head: m.head,
            tail: m.tail,
            last: m.last_known.then_some(m.last),
            circular_rows: m.circular,
            rows: m.rows,
            set,
            blocks: self.cfg.metadata_blocks() + m.rows * self.cfg.row_blocks(),
        })
    }

    fn note_last(&self, m: &mut Meta, psn: u32, last: bool) {
        if last && (!m.last_known || psn.wrapping_sub(m.last) as i32 > 0) {
            m.last = psn;
            m.last_known = true;
        }
    }

    fn create(&mut self, head: u32) -> Option<u32> {
        let at = self.mem.alloc_backward(self.cfg.metadata_blocks())?;
        let rb = self.cfg.row_blocks();
        let Some(row0) = self.mem.alloc_forward(rb, 0, u32::MAX) else {
            self.mem.free(at, self.cfg.metadata_blocks());
            return None;
        };
        for i in 0..rb {
            self.mem.set_word(row0 + i, 0);
        }
        let b = self.cfg.block_bits;
        let m = Meta { head, tail: head.wrapping_add(b - 1), last: 0, last_known: false, head_row: 0, head_idx: 0, circular: 1, rows: 1, base: row0 };
        self.store(at, &m);
        self.stats.created += 1;
        self.active += 1;
        Some(at)
    }

    /// Adds rows until there are `need`; all or none.
    fn grow(&mut self, at: u32, m: &mut Meta, need: u32) -> bool {
        let rb = self.cfg.row_blocks();
        // Relative addresses are 2 bytes: rows stay within reach of row 0.
        let lo = m.base.saturating_sub(i16::MAX as u32);
        let hi = m.base.saturating_add(i16::MAX as u32);
        let first = m.rows;
        for r in first..need {
            let Some(a) = self.mem.alloc_forward(rb, lo, hi) else {
                for k in first..r {
                    let addr = self.row_addr(at, m, k);
                    self.mem.free(addr, rb);
                }
                return false;
            };
            for i in 0..rb {
                self.mem.set_word(a + i, 0);
            }
            let rel = a.wrapping_sub(m.base) as u16;
            self.mem.set_word(at + META_WORDS as u32 + (r - 1), rel);
        }
        self.stats.rows_added += (need - first) as u64;
        m.rows = need;
        true
    }

    /// Row and index of bit `p` of the table.
    #[inline]
    fn split(&self, p: u32) -> (u32, u32) {
        match self.shift {
            Some(k) => (p >> k, p & ((1 << k) - 1)),
            None => (p / self.cfg.block_bits, p % self.cfg.block_bits),
        }
    }

    /// Moves Head `n` sequences on, within a row (a run never crosses a row's end).
    #[inline]
    fn step_head(&self, m: &mut Meta, n: u32) {
        m.head = m.head.wrapping_add(n);
        (m.head_row, m.head_idx) = self.stepped(m.head_row, m.head_idx, n, m.circular);
    }

    /// The position (row, index) `n` bits on from `(row, idx)` in a circular part of
    /// `circular` rows, within a row or onto the start of the next.
    #[inline]
    fn stepped(&self, mut row: u32, mut idx: u32, n: u32, circular: u32) -> (u32, u32) {
        idx += n;
        if idx >= self.cfg.block_bits {
            idx -= self.cfg.block_bits;
            row += 1;
            if row == circular {
                row = 0;
            }
        }
        (row, idx)
    }

    /// The row and bit of sequence `s` (at or after Head), or `None` past the last row.
    #[inline]
    fn locate(&self, m: &Meta, s: u32) -> Option<(u32, u32)> {
        let b = self.cfg.block_bits;
        let d = s.wrapping_sub(m.head);
        if d <= m.tail.wrapping_sub(m.head) {
            // d < the circular size, so one wrap at most.
            let size = m.circular * b;
            let mut p = m.head_row * b + m.head_idx + d;
            if p >= size {
                p -= size;
            }
            return Some(self.split(p));
        }
        let (r, idx) = self.split(s.wrapping_sub(m.tail).wrapping_sub(1));
        let row = m.circular + r;
        (row < m.rows).then_some((row, idx))
    }

    /// Clears the run of received sequences at Head and moves Head to the first missing one,
    /// merging the linear rows into the circular part whenever Head passes Tail.
    fn settle(&mut self, at: u32, m: &mut Meta) {
        let b = self.cfg.block_bits;
        loop {
            if m.head == m.tail.wrapping_add(1) {
                if m.rows > m.circular {
                    // The circular part is flushed: the linear rows join it (Fig. 6c).
                    m.head_row = m.circular;
                    m.head_idx = 0;
                    m.circular = m.rows;
                    self.stats.merges += 1;
                }
                m.tail = m.head.wrapping_add(m.circular * b - 1);
            }
            let (addr, bit) = self.bit_addr(at, m, m.head_row, m.head_idx);
            let w = self.mem.word(addr);
            let room = (16 - bit).min(b - m.head_idx).min(m.tail.wrapping_sub(m.head).wrapping_add(1));
            let run = (w >> bit).trailing_ones().min(room);
            if run == 0 {
                break;
            }
            let mask = if run == 16 { !0u16 } else { ((1u16 << run) - 1) << bit };
            self.mem.set_word(addr, w & !mask);
            self.step_head(m, run);
        }
        if m.rows == m.circular {
            m.tail = m.head.wrapping_add(m.circular * b - 1);
        }
    }

    fn is_empty(&self, at: u32, m: &Meta) -> bool {
        let rb = self.cfg.row_blocks();
        (0..m.rows).all(|r| {
            let a = self.row_addr(at, m, r);
            (0..rb).all(|i| self.mem.word(a + i) == 0)
        })
    }

    fn release_at(&mut self, at: u32, m: &Meta) {
        let rb = self.cfg.row_blocks();
        for r in 0..m.rows {
            let a = self.row_addr(at, m, r);
            self.mem.free(a, rb);
        }
        self.mem.free(at, self.cfg.metadata_blocks());
        self.stats.released += 1;
        self.active -= 1;
    }

    #[inline]
    fn row_addr(&self, at: u32, m: &Meta, row: u32) -> u32 {
        self.row_at(at, m.base, row)
    }

    /// The address of row `row` of the bitmap whose metadata is at `at` and row 0 at `base`.
    #[inline]
    fn row_at(&self, at: u32, base: u32, row: u32) -> u32 {
        if row == 0 {
            base
        } else {
            base.wrapping_add(self.mem.word(at + META_WORDS as u32 + (row - 1)) as i16 as i32 as u32)
        }
    }

    #[inline]
    fn bit_addr(&self, at: u32, m: &Meta, row: u32, idx: u32) -> (u32, u32) {
        (self.row_addr(at, m, row) + idx / 16, idx % 16)
    }

    #[inline]
    fn load(&self, at: u32) -> Meta {
        let w = self.mem.run::<META_WORDS>(at).map(|v| v as u32);
        Meta {
            head: w[0] | w[1] << 16,
            tail: w[2] | w[3] << 16,
            last: w[4] | w[5] << 16,
            head_row: w[6] & 0xff,
            head_idx: w[6] >> 8,
            circular: w[7] & 0x7f,
            rows: w[7] >> 7 & 0x7f,
            last_known: w[7] >> 15 == 1,
            base: w[8] | w[9] << 16,
        }
    }

    #[inline]
    fn store(&mut self, at: u32, m: &Meta) {
        *self.mem.run_mut::<META_WORDS>(at) = [
            m.head as u16,
            (m.head >> 16) as u16,
            m.tail as u16,
            (m.tail >> 16) as u16,
            m.last as u16,
            (m.last >> 16) as u16,
            (m.head_row | m.head_idx << 8) as u16,
            (m.circular | m.rows << 7 | (m.last_known as u32) << 15) as u16,
            m.base as u16,
            (m.base >> 16) as u16,
        ];
    }
}
