//! Virtual time shared by both schedulers: real time scaled by `1 / max(1, Φ)`, where
//! `Φ = Σ active rate limits / link rate`, and frozen while the downstream port is paused
//! (Tassel §3.2.2, §3.5). Integer picoseconds; the scaling remainder is carried so that time
//! never drifts.

#[derive(Clone, Copy, Debug)]
pub struct VirtualClock {
    real: u64,
    virt: u64,
    frac: u128,
    paused: bool,
    link_kbps: u64,
    active_kbps: u64,
}

impl VirtualClock {
    pub fn new(link_kbps: u64) -> VirtualClock {
        VirtualClock { real: 0, virt: 0, frac: 0, paused: false, link_kbps, active_kbps: 0 }
    }

    pub fn now(&self) -> u64 {
        self.virt
    }

    pub fn link_kbps(&self) -> u64 {
        self.link_kbps
    }

    /// Φ as a float, for reports.
    pub fn phi(&self) -> f64 {
        self.active_kbps as f64 / self.link_kbps as f64
    }

    /// A flow of `kbps` became active (`+`) or inactive (`-`), or changed its rate.
    pub fn adjust_active(&mut self, add: u64, remove: u64) {
        self.active_kbps = self.active_kbps + add - remove;
        self.frac = 0;
    }

    /// Whether the downstream port is paused.
    pub fn paused(&self) -> bool {
        self.paused
    }

    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    #[inline]
    fn scale(&self) -> u64 {
        self.active_kbps.max(self.link_kbps)
    }

    /// Moves to real time `now`.
    #[inline]
    pub fn advance(&mut self, now: u64) {
        let dt = now.saturating_sub(self.real);
        self.real = self.real.max(now);
        if dt == 0 || self.paused {
            return;
        }
        let scale = self.scale();
        if scale == self.link_kbps {
            self.virt += dt;
            return;
        }
        let num = dt as u128 * self.link_kbps as u128 + self.frac;
        self.virt += (num / scale as u128) as u64;
        self.frac = num % scale as u128;
    }

    /// Virtual time that passes in `dt` of real time if nothing changes (rounded down).
    pub fn span(&self, dt: u64) -> u64 {
        let scale = self.scale();
        if scale == self.link_kbps {
            return dt;
        }
        (dt as u128 * self.link_kbps as u128 / scale as u128) as u64
    }

    /// Real time at which virtual time reaches `v` if nothing changes (None while paused).
    pub fn real_at(&self, v: u64) -> Option<u64> {
        if self.paused {
            return None;
        }
        if v <= self.virt {
            return Some(self.real);
        }
        let dv = v - self.virt;
        let scale = self.scale();
        if scale == self.link_kbps {
            return Some(self.real + dv);
        }
        Some(self.real + (dv as u128 * scale as u128).div_ceil(self.link_kbps as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_at_one_over_phi_and_stops_when_paused() {
        let mut c = VirtualClock::new(100);
        c.advance(1000);
        assert_eq!(c.now(), 1000);
        c.adjust_active(300, 0); // Φ = 3
        c.advance(1300);
        assert_eq!(c.now(), 1100);
        assert_eq!(c.real_at(1200), Some(1600));
        c.advance(1301);
        c.advance(1302);
        c.advance(1303);
        assert_eq!(c.now(), 1101, "remainders carry: three 1 ps steps make one virtual ps");
        c.set_paused(true);
        c.advance(5000);
        assert_eq!(c.now(), 1101);
        assert_eq!(c.real_at(2000), None);
    }
}
