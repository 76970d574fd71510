//! A switch's shared packet buffer: admission with dynamic thresholds, ingress accounting per
//! (port, priority), and the PFC XOFF/XON decisions derived from it.
//!
//! Lossy classes use Choudhury–Hahne dynamic thresholds: an egress queue may grow to
//! `dt_alpha × (free shared buffer)`, else the packet is dropped (drop-tail). Lossless classes
//! (PFC on, IEEE 802.1Qbb) are never dropped by threshold; instead each ingress (port, priority)
//! counts the bytes it holds, and crossing the XOFF threshold sends PAUSE upstream, falling
//! `xon_offset` below it sends RESUME. The XOFF threshold is static, or dynamic as in HPCC's
//! simulator: `pfc_alpha × (free shared buffer)`. Per-port headroom is reserved out of the buffer
//! for packets that arrive after PAUSE is sent (≈ two link BDPs plus two MTUs). Under a static
//! threshold an ingress also pauses once the shared pool is spent (a packet of its admitted
//! into the headroom), as a switch MMU's priority group does when the pool has no more to give
//! it, and resumes when its share is under XON and the pool has room again: with many ingresses
//! each under XOFF, the pool filled with none paused, and the bytes in flight, taking the
//! headroom of all, ran out of buffer and dropped in the lossless class.
//!
//! With `headroom_apart` (HPCC's ns-3 MMU, `switch-mmu.cc`, and a Broadcom priority group's
//! headroom), what an ingress admits once its bytes past the reserve exceed XOFF is booked in
//! its headroom, apart from its shared bytes: the pool and the XOFF test count only shared
//! bytes, a departure drains the headroom first, PAUSE holds while any headroom byte is left and
//! RESUME waits for it to drain, and a lossless packet is dropped when its ingress's headroom is
//! full and its shared bytes are at XOFF. Without it every byte counts alike, and an ingress
//! resumes once its count is `xon_offset` under an XOFF that may have risen meanwhile: shorter
//! pauses, more of them (11% more PAUSE frames than HPCC's ns-3 on its 64-host experiment).
//!
//! The α factors are held in 16.16 fixed point, so admission is integer arithmetic only.

use super::port::CLASSES;
use crate::scenario::schema::PfcResend;
use crate::units::Bytes;

/// What the buffer decided for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Accept,
    Drop,
}

#[derive(Clone, Debug)]
pub struct PfcSettings {
    pub enabled: bool,
    /// Which classes are lossless.
    pub lossless: [bool; CLASSES],
    /// `Some(alpha)`: XOFF at `alpha × free shared buffer`; `None`: the static `xoff`.
    pub dynamic_alpha: Option<f64>,
    pub xoff: Bytes,
    pub xon_offset: Bytes,
    /// When a congested ingress sends PAUSE (`switch.pfc.resend`): once and refreshed before it
    /// runs out, again for every data packet admitted while over XOFF (ConWeave's ns-3 switch),
    /// or once and held by the upstream to the RESUME (HPCC's).
    pub resend: PfcResend,
    /// Buffer set aside for every port, outside the shared pool (ns-3's `total_rsrv`: a
    /// guaranteed minimum per port and queue).
    pub port_reserve: u64,
    /// Bytes of each ingress (port, class) that the XOFF and XON tests do not count (ns-3's
    /// per priority group `reserve`).
    pub ingress_reserve: u64,
    /// Count each ingress's headroom apart from its shared bytes (module docs).
    pub headroom_apart: bool,
}

/// A factor in 16.16 fixed point.
fn q16(x: f64) -> u64 {
    (x * 65536.0).round() as u64
}

pub struct SharedBuffer {
    size: u64,
    /// Buffer left after headroom reservations; lossy admission and dynamic thresholds use it.
    shared: u64,
    used: u64,
    dt_alpha_q16: u64,
    pfc_alpha_q16: Option<u64>,
    /// Per ingress port, how many times its dynamic XOFF factor is doubled (a port faster
    /// than the hosts' NICs, `switch.pfc.alpha_by_rate`); empty when none is.
    alpha_doublings: Vec<u8>,
    pfc: PfcSettings,
    /// PFC headroom reserved for every port and lossless class (it may pass `size`).
    reserved: u64,
    /// Bytes each ingress (port, class) holds (with `headroom_apart`, those not in its headroom).
    ingress: Vec<[u64; CLASSES]>,
    xoff_sent: Vec<[bool; CLASSES]>,
    /// With `headroom_apart`: each ingress's headroom bytes and each port's headroom (ns-3's
    /// `hdrm_bytes`, `headroom`), and the bytes of `used` outside the pool that XOFF divides,
    /// in headroom or in a reserve (`used - unpooled` is ns-3's `shared_used_bytes`); 0
    /// without it, so that the threshold reads one count either way.
    headroom_used: Vec<[u64; CLASSES]>,
    port_headroom: Vec<u64>,
    unpooled: u64,
    /// With `headroom_apart`: bytes of lossy class 0, which HPCC's switch passes by its MMU
    /// (`SwitchNode::SendToDev` admits and counts only `qIndex != 0`): never dropped, and
    /// counted nowhere but in [`Self::used`].
    unmetered: u64,
}

impl SharedBuffer {
    pub fn new(size: Bytes, dt_alpha: f64, pfc: PfcSettings, headroom_per_port: &[u64]) -> SharedBuffer {
        Self::with_alpha_doublings(size, dt_alpha, pfc, headroom_per_port, Vec::new())
    }

    /// [`Self::new`], with each ingress port's dynamic XOFF factor doubled `alpha_doublings[port]`
    /// times (at most 1): HPCC's simulator gives a port `k` times faster than the hosts' NICs
    /// α × 2^⌈log₂ k⌉ (`pfc_a_shift` in its `third.cc`).
    pub fn with_alpha_doublings(size: Bytes, dt_alpha: f64, pfc: PfcSettings, headroom_per_port: &[u64], alpha_doublings: Vec<u8>) -> SharedBuffer {
        let lossless_classes = pfc.lossless.iter().filter(|&&l| l).count() as u64;
        let reserved: u64 = if pfc.enabled { headroom_per_port.iter().map(|h| h * lossless_classes).sum() } else { 0 };
        let ports = headroom_per_port.len();
        SharedBuffer {
            size: size.0,
            reserved,
            shared: size.0.saturating_sub(reserved).saturating_sub(pfc.port_reserve * ports as u64),
            used: 0,
            dt_alpha_q16: q16(dt_alpha),
            pfc_alpha_q16: pfc.dynamic_alpha.map(q16),
            alpha_doublings: if alpha_doublings.iter().any(|&d| d > 0) { alpha_doublings } else { Vec::new() },
            ingress: vec![[0; CLASSES]; ports],
            xoff_sent: vec![[false; CLASSES]; ports],
            headroom_used: if pfc.headroom_apart { vec![[0; CLASSES]; ports] } else { Vec::new() },
            port_headroom: if pfc.headroom_apart { headroom_per_port.to_vec() } else { Vec::new() },
            unpooled: 0,
            unmetered: 0,
            pfc,
        }
    }

    /// Bytes the buffer holds.
    pub fn used(&self) -> u64 {
        self.used + self.unmetered
    }

    /// The PFC headroom its ports ask to have reserved (all of it, even past the buffer's size).
    pub fn headroom(&self) -> u64 {
        self.reserved
    }

    /// The buffer left to share after the PFC headroom reservations.
    pub fn shared(&self) -> u64 {
        self.shared
    }

    /// Whether a congested ingress pauses again for every packet admitted over XOFF (ns-3's
    /// switch) instead of refreshing its PAUSE before it runs out.
    pub fn pauses_every_packet(&self) -> bool {
        self.pfc.resend == PfcResend::EveryPacket
    }

    /// Whether a PAUSE is refreshed before it runs out (`switch.pfc.resend = "refresh"`).
    pub fn refreshes(&self) -> bool {
        self.pfc.resend == PfcResend::Refresh
    }

    #[inline]
    pub fn is_lossless(&self, class: u8) -> bool {
        self.pfc.enabled && self.pfc.lossless[class as usize]
    }

    /// The current XOFF threshold for an ingress port's classes.
    #[inline(always)]
    pub fn xoff_threshold(&self, ingress: u32) -> u64 {
        match self.pfc_alpha_q16 {
            Some(a) => {
                let a = match self.alpha_doublings.get(ingress as usize) {
                    Some(&d) if d > 0 => (a << d.min(16)).min(1 << 16),
                    _ => a,
                };
                ((a as u128 * self.shared.saturating_sub(self.used - self.unpooled) as u128) >> 16) as u64
            }
            None => self.pfc.xoff.0,
        }
    }

    /// Admission of `size` bytes arriving on `ingress` for an egress queue of `class` that holds
    /// `egress_queue` bytes. Accepted bytes are accounted until [`Self::release`].
    #[inline(always)]
    pub fn admit(&mut self, ingress: u32, class: u8, egress_queue: u64, size: u32) -> Admit {
        if self.pfc.headroom_apart {
            return self.admit_apart(ingress, class, egress_queue, size as u64);
        }
        self.admit_alike(ingress, class, egress_queue, size as u64)
    }

    /// Admission with every byte counted alike.
    #[inline(always)]
    fn admit_alike(&mut self, ingress: u32, class: u8, egress_queue: u64, size: u64) -> Admit {
        let ok = if self.is_lossless(class) {
            self.used + size <= self.size
        } else {
            let free = self.shared.saturating_sub(self.used);
            self.used + size <= self.shared && ((egress_queue + size) as u128) << 16 <= self.dt_alpha_q16 as u128 * free as u128
        };
        if !ok {
            return Admit::Drop;
        }
        self.used += size;
        self.ingress[ingress as usize][class as usize] += size;
        Admit::Accept
    }

    /// Admission with the headroom apart. A lossless packet's (`SwitchMmu::CheckIngressAdmission`
    /// and `UpdateIngressAdmission`): dropped when the ingress's headroom is full and its shared
    /// bytes are at XOFF; else booked in its reserve, its shared bytes, or, past XOFF, its
    /// headroom. A lossy class 0 packet is admitted without the MMU, as HPCC's switch admits
    /// its only lossy class (its ACKs, CNPs and NACKs under ACK_HIGH_PRIO 1); another lossy
    /// one as without, outside the pool.
    #[inline(never)]
    fn admit_apart(&mut self, ingress: u32, class: u8, egress_queue: u64, size: u64) -> Admit {
        if !self.is_lossless(class) {
            if class == 0 {
                self.unmetered += size;
                return Admit::Accept;
            }
            let admit = self.admit_alike(ingress, class, egress_queue, size);
            if admit == Admit::Accept {
                self.unpooled += size;
            }
            return admit;
        }
        let (i, c) = (ingress as usize, class as usize);
        let xoff = self.xoff_threshold(ingress);
        let shared = self.ingress[i][c].saturating_sub(self.pfc.ingress_reserve);
        if (size + self.headroom_used[i][c] > self.port_headroom[i] && size + shared > xoff) || self.used + size > self.size {
            return Admit::Drop;
        }
        self.used += size;
        let now = self.ingress[i][c] + size;
        if now > self.pfc.ingress_reserve && now - self.pfc.ingress_reserve > xoff {
            self.headroom_used[i][c] += size;
            self.unpooled += size;
        } else {
            self.ingress[i][c] = now;
            self.unpooled += size - size.min(now.saturating_sub(self.pfc.ingress_reserve));
        }
        Admit::Accept
    }

    /// Whether the ingress (port, class) just crossed XOFF and PAUSE must be sent (and records it).
    #[inline(always)]
    pub fn should_pause(&mut self, ingress: u32, class: u8) -> bool {
        let (i, c) = (ingress as usize, class as usize);
        if !self.is_lossless(class) || (self.xoff_sent[i][c] && !self.pauses_every_packet()) {
            return false;
        }
        let in_headroom = self.pfc.headroom_apart && self.headroom_used[i][c] > 0;
        if in_headroom || self.ingress[i][c].saturating_sub(self.pfc.ingress_reserve) >= self.xoff_threshold(ingress) || self.pool_spent() {
            self.xoff_sent[i][c] = true;
            return true;
        }
        false
    }

    /// Under a static XOFF, whether the shared pool is spent (what is admitted now goes into
    /// the headroom). A dynamic threshold falls to 0 as the pool empties, so needs no such test.
    #[inline]
    fn pool_spent(&self) -> bool {
        self.pfc_alpha_q16.is_none() && self.used - self.unpooled > self.shared
    }

    /// Under a static XOFF, whether the shared pool has XON's room again (always, under a
    /// dynamic threshold): a paused ingress resumes only then.
    #[inline]
    fn pool_has_xon_room(&self) -> bool {
        self.pfc_alpha_q16.is_some() || self.used - self.unpooled + self.pfc.xon_offset.0 <= self.shared
    }

    /// Frees a packet's bytes when it leaves (or is flushed); returns true if RESUME must be sent.
    #[inline(always)]
    pub fn release(&mut self, ingress: u32, class: u8, size: u32) -> bool {
        if self.pfc.headroom_apart {
            return self.release_apart(ingress, class, size as u64);
        }
        self.release_alike(ingress, class, size)
    }

    /// A departure with every byte counted alike.
    #[inline(always)]
    fn release_alike(&mut self, ingress: u32, class: u8, size: u32) -> bool {
        let (i, c) = (ingress as usize, class as usize);
        self.used -= size as u64;
        self.ingress[i][c] -= size as u64;
        // RESUME below XON, and always once the ingress holds nothing: a threshold that free
        // buffer cannot reach (headroom using it all) must not pause a drained port for ever.
        let counted = self.ingress[i][c].saturating_sub(self.pfc.ingress_reserve);
        if self.xoff_sent[i][c] && (self.ingress[i][c] == 0 || (counted + self.pfc.xon_offset.0 <= self.xoff_threshold(ingress) && self.pool_has_xon_room())) {
            self.xoff_sent[i][c] = false;
            return true;
        }
        false
    }

    /// A lossless packet's departure with the headroom apart (`RemoveFromIngressAdmission`, then
    /// `CheckShouldResume`): its bytes leave the headroom first, then the shared bytes, then the
    /// reserve; RESUME once the headroom is empty and the shared bytes are `xon_offset` under
    /// XOFF (or none are left).
    #[inline(never)]
    fn release_apart(&mut self, ingress: u32, class: u8, size: u64) -> bool {
        if !self.is_lossless(class) {
            if class == 0 {
                self.unmetered -= size;
                return false;
            }
            self.unpooled -= size;
            return self.release_alike(ingress, class, size as u32);
        }
        let (i, c) = (ingress as usize, class as usize);
        self.used -= size;
        let from_headroom = self.headroom_used[i][c].min(size);
        let from_shared = (size - from_headroom).min(self.ingress[i][c].saturating_sub(self.pfc.ingress_reserve));
        self.headroom_used[i][c] -= from_headroom;
        self.ingress[i][c] -= size - from_headroom;
        self.unpooled -= size - from_shared;
        let shared = self.ingress[i][c].saturating_sub(self.pfc.ingress_reserve);
        if self.xoff_sent[i][c] && self.headroom_used[i][c] == 0 && (shared == 0 || (shared + self.pfc.xon_offset.0 <= self.xoff_threshold(ingress) && self.pool_has_xon_room())) {
            self.xoff_sent[i][c] = false;
            return true;
        }
        false
    }

    /// Forgets that PAUSE was sent for `ingress`'s `class` (its link failed: the pause it
    /// asserted died with it, and the next packet over XOFF pauses again).
    pub fn clear_xoff(&mut self, ingress: u32, class: u8) {
        self.xoff_sent[ingress as usize][class as usize] = false;
    }

    /// Classes for which PAUSE is currently asserted on `ingress`.
    pub fn asserted(&self, ingress: u32) -> impl Iterator<Item = u8> + '_ {
        (0..CLASSES as u8).filter(move |&c| self.xoff_sent[ingress as usize][c as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pfc(enabled: bool, dynamic: Option<f64>) -> PfcSettings {
        let mut lossless = [false; CLASSES];
        lossless[3] = true;
        PfcSettings { enabled, lossless, dynamic_alpha: dynamic, xoff: Bytes(10_000), xon_offset: Bytes(2_000), resend: PfcResend::Refresh, port_reserve: 0, ingress_reserve: 0, headroom_apart: false }
    }

    #[test]
    fn a_drained_ingress_always_resumes() {
        // Headroom takes the whole buffer: the dynamic XOFF threshold is 0, so the first packet
        // pauses, and the drained port must still be resumed.
        let mut b = SharedBuffer::new(Bytes(10_000), 1.0, pfc(true, Some(1.0)), &[5_000, 5_000]);
        assert_eq!(b.shared(), 0);
        assert_eq!(b.admit(0, 3, 0, 1000), Admit::Accept);
        assert!(b.should_pause(0, 3));
        assert!(b.release(0, 3, 1000), "RESUME once the ingress is empty");
    }

    #[test]
    fn lossy_dynamic_threshold_drops_at_alpha_times_free() {
        // 100 KB buffer, alpha 1: a single queue can grow while q + s <= free, i.e. to 50 KB.
        let mut b = SharedBuffer::new(Bytes(100_000), 1.0, pfc(false, None), &[0, 0]);
        let mut q = 0;
        while b.admit(0, 0, q, 1000) == Admit::Accept {
            q += 1000;
        }
        assert_eq!(q, 50_000);
    }

    #[test]
    fn static_xoff_and_xon() {
        let mut b = SharedBuffer::new(Bytes(1_000_000), 1.0, pfc(true, None), &[5_000, 5_000]);
        for i in 0..9 {
            assert_eq!(b.admit(1, 3, 0, 1000), Admit::Accept);
            assert!(!b.should_pause(1, 3), "paused early at {i}");
        }
        b.admit(1, 3, 0, 1000);
        assert!(b.should_pause(1, 3));
        assert!(!b.should_pause(1, 3), "PAUSE is sent once");
        assert_eq!(b.asserted(1).collect::<Vec<_>>(), vec![3]);
        assert!(!b.release(1, 3, 1000)); // 9000 + 2000 > 10000
        assert!(b.release(1, 3, 1000)); // 8000 + 2000 <= 10000
        // Lossy class 0 on the same port never pauses.
        b.admit(1, 0, 0, 50_000);
        assert!(!b.should_pause(1, 0));
    }

    #[test]
    fn dynamic_xoff_shrinks_as_buffer_fills() {
        let b0 = SharedBuffer::new(Bytes(1_000_000), 1.0, pfc(true, Some(0.125)), &[0]);
        assert_eq!(b0.xoff_threshold(0), 125_000);
        let mut b = b0;
        b.admit(0, 3, 0, 200_000);
        assert_eq!(b.xoff_threshold(0), 100_000);
        assert!(b.should_pause(0, 3));
    }

    #[test]
    fn a_doubled_alpha_raises_only_that_ports_xoff() {
        // 1 MB shared, α 1/8: 125,000 B. Port 1 doubled twice (a port 4× the hosts' rate in
        // HPCC's simulator, shift 3 → 1): α 1/2, 500,000 B; three doublings reach α 1 and a
        // fourth is held there.
        let b = SharedBuffer::with_alpha_doublings(Bytes(1_000_000), 1.0, pfc(true, Some(0.125)), &[0, 0, 0, 0], vec![0, 2, 3, 4]);
        assert_eq!(b.xoff_threshold(0), 125_000);
        assert_eq!(b.xoff_threshold(1), 500_000);
        assert_eq!(b.xoff_threshold(2), 1_000_000);
        assert_eq!(b.xoff_threshold(3), 1_000_000);
        let mut b = b;
        // 200 KB on port 0 pauses it; the same on port 1 does not, until its 1/2 of the free
        // buffer is reached.
        b.admit(0, 3, 0, 200_000);
        assert!(b.should_pause(0, 3));
        b.admit(1, 3, 0, 200_000);
        assert!(!b.should_pause(1, 3));
        b.admit(1, 3, 0, 100_000);
        assert!(b.should_pause(1, 3), "300 KB ≥ (1 MB − 500 KB) / 2");
    }

    #[test]
    fn a_static_xoff_pauses_every_ingress_that_admits_once_the_shared_pool_is_spent() {
        // 100 KB of buffer, 40 KB of it headroom (4 ports × 10 KB): a 60 KB pool. Four ingresses
        // at 15 KB each fill it while each is under the 20 KB XOFF; the next packet of each
        // goes into the headroom and pauses its ingress. An ingress under XON resumes only once
        // the pool has XON's room again.
        let mut s = pfc(true, None);
        s.xoff = Bytes(20_000);
        let mut b = SharedBuffer::new(Bytes(100_000), 1.0, s, &[10_000; 4]);
        assert_eq!(b.shared(), 60_000);
        for _ in 0..15 {
            for i in 0..4 {
                assert_eq!(b.admit(i, 3, 0, 1000), Admit::Accept);
                assert!(!b.should_pause(i, 3));
            }
        }
        for i in 0..4 {
            assert_eq!(b.admit(i, 3, 0, 1000), Admit::Accept);
            assert!(b.should_pause(i, 3), "ingress {i}: the pool is spent");
        }
        // 64 KB held, each ingress under XON (16 KB + 2 KB ≤ 20 KB): ingress 0 resumes once
        // the pool has XON's 2 KB of room, at 58 KB used, its sixth packet out.
        for k in 0..5 {
            assert!(!b.release(0, 3, 1000), "released {k}");
        }
        assert!(b.release(0, 3, 1000));
    }

    #[test]
    fn lossless_class_admits_into_headroom_until_buffer_full() {
        let mut b = SharedBuffer::new(Bytes(10_000), 1.0, pfc(true, None), &[4_000]);
        let mut n = 0;
        while b.admit(0, 3, 0, 1000) == Admit::Accept {
            n += 1;
        }
        assert_eq!(n, 10);
    }

    #[test]
    fn with_the_headroom_apart_a_static_xoff_counts_only_the_pools_bytes() {
        // 100 KB, four ports of 10 KB headroom: a 60 KB pool, XOFF at 20 KB. Ingresses 0 and 1
        // each fill 20 KB of the pool and their 10 KB of headroom: 60 KB held, 40 KB of it
        // pooled. A packet of ingress 2 finds 20 KB of the pool free and does not pause; with
        // every byte held counted, the pool read as spent, and each packet of ingress 2 sent
        // PAUSE and its departure RESUME.
        let mut s = PfcSettings { headroom_apart: true, ..pfc(true, None) };
        s.xoff = Bytes(20_000);
        let mut b = SharedBuffer::new(Bytes(100_000), 1.0, s, &[10_000; 4]);
        assert_eq!(b.shared(), 60_000);
        for i in 0..2 {
            for _ in 0..30 {
                assert_eq!(b.admit(i, 3, 0, 1000), Admit::Accept);
            }
            assert!(b.should_pause(i, 3));
        }
        assert_eq!(b.admit(2, 3, 0, 1000), Admit::Accept);
        assert!(!b.should_pause(2, 3));
        assert!(!b.release(2, 3, 1000));
    }

    /// 100 KB, two ports of 20 KB headroom (60 KB shared), XOFF at ½ of the free pool, XON
    /// 1 KB under it, the headroom apart as HPCC's switch MMU keeps it.
    fn apart() -> SharedBuffer {
        let s = PfcSettings { xon_offset: Bytes(1_000), headroom_apart: true, ..pfc(true, Some(0.5)) };
        SharedBuffer::new(Bytes(100_000), 1.0, s, &[20_000; 2])
    }

    #[test]
    fn with_the_headroom_apart_resume_waits_for_the_headroom_to_drain() {
        // Worked by hand from `switch-mmu.cc`: ingress 1 holds 10 KB; ingress 0's 17th packet
        // brings it to 17 KB ≥ XOFF ½ (60 − 27) = 16.5 KB: PAUSE. Three more go to its headroom
        // (18 KB > 16.5) and pause nothing again. Ingress 1 drains: XOFF rises to 21.5 KB, and
        // ingress 0's 17 KB is XON's 1 KB under it, but RESUME waits for the headroom: the third
        // packet out, the last headroom one, resumes it. (Counting every byte alike, it resumed
        // at the first: 19 KB + 1 KB ≤ ½ (60 − 19).)
        let mut b = apart();
        for _ in 0..10 {
            assert_eq!(b.admit(1, 3, 0, 1000), Admit::Accept);
            assert!(!b.should_pause(1, 3));
        }
        for k in 0..16 {
            assert_eq!(b.admit(0, 3, 0, 1000), Admit::Accept);
            assert!(!b.should_pause(0, 3), "packet {k}");
        }
        assert_eq!(b.admit(0, 3, 0, 1000), Admit::Accept);
        assert!(b.should_pause(0, 3));
        assert_eq!(b.xoff_threshold(0), 16_500);
        for _ in 0..3 {
            assert_eq!(b.admit(0, 3, 0, 1000), Admit::Accept);
            assert!(!b.should_pause(0, 3));
        }
        // The headroom's bytes are not in the pool: XOFF stays where it was.
        assert_eq!(b.xoff_threshold(0), 16_500);
        for _ in 0..10 {
            assert!(!b.release(1, 3, 1000));
        }
        assert_eq!(b.xoff_threshold(0), 21_500);
        assert!(!b.release(0, 3, 1000));
        assert!(!b.release(0, 3, 1000));
        assert!(b.release(0, 3, 1000));
        assert_eq!((b.used(), b.xoff_threshold(0)), (17_000, 21_500));
    }

    #[test]
    fn with_the_headroom_apart_a_full_headroom_drops() {
        // Alone, ingress 0 pauses at 20 KB (XOFF ½ (60 − 20) = 20 KB), then takes 20 KB into
        // its headroom; the next packet finds it full with its shared bytes at XOFF: dropped,
        // with 60 KB of the buffer still free.
        let mut b = apart();
        let mut n = 0;
        while b.admit(0, 3, 0, 1000) == Admit::Accept {
            n += 1;
        }
        assert_eq!((n, b.used()), (40, 40_000));
        // Another ingress, under XOFF, is admitted.
        assert_eq!(b.admit(1, 3, 0, 1000), Admit::Accept);
        // A lossy class's bytes stay out of the pool that XOFF divides, coming and going.
        let xoff = b.xoff_threshold(1);
        for class in [0, 1] {
            assert_eq!(b.admit(1, class, 0, 1000), Admit::Accept);
            assert_eq!((b.used(), b.xoff_threshold(1)), (42_000, xoff));
            assert!(!b.release(1, class, 1000));
            assert_eq!((b.used(), b.xoff_threshold(1)), (41_000, xoff));
        }
    }

    #[test]
    fn with_the_headroom_apart_lossy_class_0_passes_a_full_buffer() {
        // HPCC's switch admits class 0 (its ACKs under ACK_HIGH_PRIO 1) without the MMU: twice
        // the buffer's size of it is taken, and the lossless class's admission does not see it.
        let mut b = apart();
        while b.admit(0, 3, 0, 1000) == Admit::Accept {}
        for _ in 0..200 {
            assert_eq!(b.admit(1, 0, 0, 1000), Admit::Accept);
        }
        assert_eq!(b.used(), 240_000);
        assert_eq!(b.admit(1, 3, 0, 1000), Admit::Accept, "ingress 1 is under its XOFF");
        for _ in 0..200 {
            assert!(!b.release(1, 0, 1000));
        }
        assert_eq!(b.used(), 41_000);
        // Another lossy class is dropped once the pool is spent (40 + 33 KB of the 60 KB pool
        // and the two headrooms, from ingresses 0 and 1).
        while b.admit(1, 3, 0, 1000) == Admit::Accept {}
        assert!(b.used() > 60_000);
        assert_eq!(b.admit(1, 1, 0, 1000), Admit::Drop);
        assert_eq!(b.admit(1, 0, 0, 1000), Admit::Accept);
    }
}
