//! A token bucket (Yama §4.2): filled at a rate up to a burst limit, drained by the work a
//! queue pair sends. Tokens are bytes; time is picoseconds. A piece of work larger than the
//! burst may go once the bucket is full, leaving it in debt, so any size makes progress.

use crate::PS_PER_S;

#[derive(Clone, Debug)]
pub struct TokenBucket {
    /// Fill rate, bytes per second.
    rate: f64,
    /// Most tokens it holds.
    burst: f64,
    tokens: f64,
    last: u64,
}

impl TokenBucket {
    /// A full bucket at time `now`.
    pub fn new(rate: f64, burst: f64, now: u64) -> TokenBucket {
        assert!(rate >= 0.0 && burst > 0.0, "a token bucket needs a non-negative rate and a positive burst");
        TokenBucket { rate, burst, tokens: burst, last: now }
    }

    /// Adds the tokens earned since the last call; returns those that spilled over the burst.
    pub fn refill(&mut self, now: u64) -> f64 {
        if now > self.last {
            self.tokens += self.rate * (now - self.last) as f64 / PS_PER_S;
            self.last = now;
        }
        let spill = (self.tokens - self.burst).max(0.0);
        self.tokens -= spill;
        spill
    }

    /// Adds `tokens` from elsewhere (a surplus); returns what did not fit.
    pub fn add(&mut self, tokens: f64) -> f64 {
        self.tokens += tokens;
        let spill = (self.tokens - self.burst).max(0.0);
        self.tokens -= spill;
        spill
    }

    /// Changes the rate from `now` on (tokens earned so far at the old rate).
    pub fn set_rate(&mut self, rate: f64, now: u64) -> f64 {
        let spill = self.refill(now);
        self.rate = rate.max(0.0);
        spill
    }

    /// Whether `bytes` may go now (tokens for it, or a full bucket for work beyond the burst).
    pub fn conforms(&self, bytes: f64) -> bool {
        self.tokens >= bytes.min(self.burst)
    }

    /// Spends `bytes` (call after [`Self::conforms`]).
    pub fn take(&mut self, bytes: f64) {
        self.tokens -= bytes;
    }

    /// Picoseconds until `bytes` conform at fill rate `rate` (the bucket's own or more), from
    /// the last refill; `u64::MAX` if it never will.
    pub fn wait_for(&self, bytes: f64, rate: f64) -> u64 {
        let need = bytes.min(self.burst) - self.tokens;
        if need <= 0.0 {
            return 0;
        }
        if rate <= 0.0 {
            return u64::MAX;
        }
        (need / rate * PS_PER_S).ceil() as u64
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }
    pub fn rate(&self) -> f64 {
        self.rate
    }
    pub fn burst(&self) -> f64 {
        self.burst
    }
    pub fn last(&self) -> u64 {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const US: u64 = 1_000_000;

    #[test]
    fn a_greedy_sender_gets_the_rate_after_the_burst() {
        // 1 GB/s = 1000 bytes per µs, burst 4000: 100 µs of greedy 500-byte sends.
        let mut b = TokenBucket::new(1e9, 4000.0, 0);
        let (mut now, mut sent) = (0u64, 0.0f64);
        while now <= 100 * US {
            b.refill(now);
            if b.conforms(500.0) {
                b.take(500.0);
                sent += 500.0;
            } else {
                now += b.wait_for(500.0, b.rate());
            }
        }
        // burst + rate × 100 µs, to one packet.
        assert!((sent - (4000.0 + 100_000.0)).abs() <= 500.0, "{sent}");
    }

    #[test]
    fn spill_over_the_burst_is_returned() {
        let mut b = TokenBucket::new(1e9, 1000.0, 0);
        b.take(1000.0);
        assert_eq!(b.refill(US / 2), 0.0);
        assert!((b.refill(2 * US) - 1000.0).abs() < 1e-6);
        assert_eq!(b.add(10.0), 10.0);
    }

    #[test]
    fn work_larger_than_the_burst_goes_from_a_full_bucket_into_debt() {
        let mut b = TokenBucket::new(1e9, 1000.0, 0);
        assert!(b.conforms(5000.0));
        b.take(5000.0);
        assert!(!b.conforms(1.0));
        // 4000 of debt plus one byte: 4.001 µs.
        assert!(b.wait_for(1.0, b.rate()).abs_diff(4_001_000) <= 1);
    }

    proptest! {
        /// Conformance: from the start, what passes is at most max(burst, the largest piece) +
        /// rate × time: a piece larger than the burst leaves only from a full bucket, whole, and
        /// puts it in debt.
        #[test]
        fn never_more_than_burst_plus_rate_times_time(sizes in proptest::collection::vec(1u32..9000, 1..200), gaps in proptest::collection::vec(0u64..5_000_000, 1..200)) {
            let (rate, burst) = (2e9, 3000.0);
            let mut b = TokenBucket::new(rate, burst, 0);
            let mut now = 0u64;
            let mut passed = 0.0;
            let mut largest = 0.0f64;
            for (s, g) in sizes.iter().zip(gaps.iter().cycle()) {
                now += g;
                b.refill(now);
                let s = *s as f64;
                if b.conforms(s) {
                    b.take(s);
                    passed += s;
                    largest = largest.max(s);
                }
                prop_assert!(passed <= burst.max(largest) + rate * now as f64 / PS_PER_S + 1e-6);
            }
        }
    }
}
