//! A node's scheduler for one offload chain (Yama §4.2): a token bucket per queue pair, filled
//! at the queue pair's weight × the chain's probed throughput, up to a burst. Work conserving:
//! tokens that spill from the full bucket of a queue pair with nothing to send go to the queue
//! pairs of the same chain that have work, in proportion to their weights. Tokens that spill
//! from a queue pair that has work waiting (it could not submit: the chain is not taking its
//! work fast enough) are counted as unspent: to the feedback loop that is demand the chain did
//! not serve, not a lack of application work to be backfilled.

use crate::TokenBucket;

#[derive(Clone, Debug)]
struct Slot {
    weight: f64,
    bucket: TokenBucket,
    /// Has work waiting.
    busy: bool,
    /// Its work waits for its own tokens (its last ask was refused, and it is woken when they
    /// suffice), not for the chain: what its bucket spills then is its wake-up coming late
    /// (another queue pair went idle and its share arrived sooner than reckoned), not demand
    /// the chain turned away.
    paced: bool,
}

impl Slot {
    /// What of `spill`, tokens its bucket could not hold while it had work, is demand the
    /// chain turned away: all of it, unless its work waits for its own tokens.
    fn unspent(&self, spill: f64) -> f64 {
        if self.paced {
            0.0
        } else {
            spill
        }
    }
}

#[derive(Clone, Debug)]
pub struct ChainScheduler {
    slots: Vec<Slot>,
    /// The chain's probed throughput, bytes per second.
    estimate: f64,
    burst: f64,
    /// Tokens lost since the last [`Self::take_unspent`] while work was waiting.
    unspent: f64,
    /// Queue pairs without work. While there are none, no bucket spills to another, so a
    /// decision only needs its own bucket brought up to date (buckets fill linearly up to a cap,
    /// so refilling one late gives the same tokens and spill as refilling it often).
    idle: usize,
}

impl ChainScheduler {
    pub fn new(estimate: f64, burst: f64) -> ChainScheduler {
        ChainScheduler { slots: Vec::new(), estimate, burst, unspent: 0.0, idle: 0 }
    }

    /// A queue pair of weight `weight` (its bucket full); returns its index.
    pub fn add_qp(&mut self, weight: f64, now: u64) -> usize {
        self.refill(now);
        self.slots.push(Slot { weight, bucket: TokenBucket::new(weight * self.estimate, self.burst, now), busy: false, paced: false });
        self.idle += 1;
        self.slots.len() - 1
    }

    pub fn set_weight(&mut self, qp: usize, weight: f64, now: u64) {
        self.refill(now);
        let s = &mut self.slots[qp];
        s.weight = weight;
        s.bucket.set_rate(weight * self.estimate, now);
    }

    /// A new estimate of the chain's throughput: every bucket's rate follows.
    pub fn set_estimate(&mut self, estimate: f64, now: u64) {
        self.refill(now);
        self.estimate = estimate;
        for s in &mut self.slots {
            s.bucket.set_rate(s.weight * estimate, now);
        }
    }

    /// Marks whether queue pair `qp` has work waiting (its spill goes to others while not).
    pub fn set_busy(&mut self, qp: usize, busy: bool, now: u64) {
        if self.slots[qp].busy != busy {
            self.refill(now);
            self.slots[qp].busy = busy;
            self.slots[qp].paced = false;
            if busy {
                self.idle -= 1;
            } else {
                self.idle += 1;
            }
        }
    }

    /// Brings every bucket to `now` and hands idle queue pairs' spill to the busy ones.
    fn refill(&mut self, now: u64) {
        let mut surplus = 0.0;
        for s in &mut self.slots {
            let spill = s.bucket.refill(now);
            if s.busy {
                self.unspent += s.unspent(spill);
            } else {
                surplus += spill;
            }
        }
        let busy_weight: f64 = self.slots.iter().filter(|s| s.busy).map(|s| s.weight).sum();
        if surplus > 0.0 && busy_weight > 0.0 {
            for s in self.slots.iter_mut().filter(|s| s.busy) {
                let spill = s.bucket.add(surplus * s.weight / busy_weight);
                self.unspent += s.unspent(spill);
            }
        }
    }

    /// Queue pair `qp` asks to send `bytes` at `now`: `Ok` (tokens spent) or `Err(t)`, the time
    /// its tokens will suffice at its own rate plus its share of idle queue pairs' rates.
    pub fn try_send(&mut self, qp: usize, bytes: u64, now: u64) -> Result<(), u64> {
        self.bring(qp, now);
        let b = bytes as f64;
        if self.slots[qp].bucket.conforms(b) {
            self.slots[qp].bucket.take(b);
            self.slots[qp].paced = false;
            return Ok(());
        }
        self.slots[qp].paced = true;
        Err(now.saturating_add(self.wait(qp, b).max(1)))
    }

    /// When queue pair `qp`, refused `bytes` earlier, may send them at the rates in force from
    /// `now`: its tokens banked so far are kept and the rest come at its rate now (its own plus
    /// its share of idle queue pairs'). `now` if they suffice already, `u64::MAX` if they never
    /// will at these rates. Spends nothing. Its wake-up, reckoned at the rate of its refusal,
    /// comes this early when its rate rose since (a new estimate, weight, join or leave): a
    /// light queue pair whose wake was set at 106 Mbps slept 260 µs after the heavy one left
    /// a 10 Gbps engine idle to it.
    pub fn ready_at(&mut self, qp: usize, bytes: u64, now: u64) -> u64 {
        self.bring(qp, now);
        let b = bytes as f64;
        if self.slots[qp].bucket.conforms(b) {
            return now;
        }
        match self.wait(qp, b) {
            u64::MAX => u64::MAX,
            wait => now.saturating_add(wait.max(1)),
        }
    }

    /// Brings queue pair `qp`'s bucket (every bucket, while some queue pair is idle) to `now`.
    fn bring(&mut self, qp: usize, now: u64) {
        if self.idle == 0 {
            let spill = self.slots[qp].bucket.refill(now);
            self.unspent += self.slots[qp].unspent(spill);
        } else {
            self.refill(now);
        }
    }

    /// Picoseconds until queue pair `qp`'s tokens (brought up to date) suffice for `b` bytes
    /// at its own rate plus its share of idle queue pairs' rates; `u64::MAX` if never.
    fn wait(&self, qp: usize, b: f64) -> u64 {
        let me = &self.slots[qp];
        let mut rate = me.bucket.rate();
        if self.idle > 0 {
            let busy_weight: f64 = self.slots.iter().filter(|s| s.busy).map(|s| s.weight).sum::<f64>().max(me.weight);
            let idle_rate: f64 = self.slots.iter().filter(|s| !s.busy && s.bucket.tokens() >= s.bucket.burst()).map(|s| s.bucket.rate()).sum();
            rate += idle_rate * me.weight / busy_weight.max(1e-300);
        }
        me.bucket.wait_for(b, rate)
    }

    /// Tokens (bytes) lost while work waited, since the last call, brought up to `now`.
    pub fn take_unspent(&mut self, now: u64) -> u64 {
        self.refill(now);
        let u = self.unspent.round() as u64;
        self.unspent = 0.0;
        u
    }

    pub fn estimate(&self) -> f64 {
        self.estimate
    }

    /// Queue pair `qp`'s fill rate, bytes per second.
    pub fn rate(&self, qp: usize) -> f64 {
        self.slots[qp].bucket.rate()
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000_000;

    /// Runs greedy senders of `size` bytes on the busy queue pairs for `span`; bytes per qp.
    fn run(s: &mut ChainScheduler, busy: &[bool], size: u64, span: u64) -> Vec<f64> {
        let mut sent = vec![0.0; busy.len()];
        let mut next = vec![0u64; busy.len()];
        for (q, &b) in busy.iter().enumerate() {
            s.set_busy(q, b, 0);
        }
        loop {
            let (q, &t) = next.iter().enumerate().filter(|(q, _)| busy[*q]).min_by_key(|(_, t)| **t).unwrap();
            if t > span {
                break;
            }
            match s.try_send(q, size, t) {
                Ok(()) => sent[q] += size as f64,
                Err(at) => next[q] = at,
            }
        }
        sent
    }

    #[test]
    fn busy_queue_pairs_share_in_proportion_to_weight() {
        // 10 GB/s estimate; weights 0.5, 0.3, 0.2; 1 ms.
        let mut s = ChainScheduler::new(10e9, 2000.0);
        for w in [0.5, 0.3, 0.2] {
            s.add_qp(w, 0);
        }
        let sent = run(&mut s, &[true, true, true], 500, 1000 * US);
        for (got, w) in sent.iter().zip([0.5, 0.3, 0.2]) {
            let want = w * 10e9 * 1e-3;
            assert!((got - want).abs() / want < 0.01, "{got} vs {want}");
        }
    }

    #[test]
    fn an_idle_queue_pairs_share_goes_to_the_busy_ones() {
        let mut s = ChainScheduler::new(10e9, 2000.0);
        for w in [0.5, 0.3, 0.2] {
            s.add_qp(w, 0);
        }
        // The first has nothing to send: the others split all 10 GB/s 3:2.
        let sent = run(&mut s, &[false, true, true], 500, 1000 * US);
        let total = sent[1] + sent[2];
        assert!((total - 10e6).abs() / 10e6 < 0.02, "work conserving: {total}");
        assert!((sent[1] / sent[2] - 1.5).abs() < 0.05, "{sent:?}");
    }

    #[test]
    fn tokens_of_a_queue_pair_whose_work_waits_are_unspent_demand() {
        // 1 GB/s for the one queue pair, burst 1000: it has work but submits nothing for 10 µs.
        let mut s = ChainScheduler::new(1e9, 1000.0);
        let q = s.add_qp(1.0, 0);
        s.set_busy(q, true, 0);
        assert!((s.take_unspent(10_000_000) as f64 - 10_000.0).abs() <= 1.0);
        // Idle (no work): what it spills is not demand.
        s.set_busy(q, false, 10_000_000);
        assert_eq!(s.take_unspent(20_000_000), 0);
    }

    #[test]
    fn a_queue_pair_waiting_for_its_own_tokens_spills_no_demand() {
        // 1 GB/s over two queue pairs, burst 1 KB. A, its bucket spent, is told to wait 1 µs
        // (its own 0.5 GB/s and idle B's); B then sends, and A's wake-up comes late, at 10 µs:
        // its bucket filled and spilled meanwhile. Those tokens are not work the chain turned
        // away (A waited for its pacing, not for the chain), and an estimate that read them as
        // demand sank under an open-loop entity of many queue pairs and a small burst.
        let mut s = ChainScheduler::new(1e9, 1000.0);
        let (a, b) = (s.add_qp(0.5, 0), s.add_qp(0.5, 0));
        s.set_busy(a, true, 0);
        assert_eq!(s.try_send(a, 1000, 0), Ok(()));
        let wake = s.try_send(a, 1000, 0).expect_err("A's bucket is spent");
        assert_eq!(wake, US);
        s.set_busy(b, true, 0);
        assert_eq!(s.try_send(b, 1000, 0), Ok(()));
        s.set_busy(b, false, 0);
        // Late by 9 µs: A's bucket filled at 2 µs and spilled ever since.
        assert_eq!(s.try_send(a, 1000, 10 * US), Ok(()));
        assert_eq!(s.take_unspent(10 * US), 0);
        // Held by the chain (busy, not waiting for tokens), the same spill is demand.
        s.set_busy(a, false, 10 * US);
        s.set_busy(a, true, 10 * US);
        assert!(s.take_unspent(20 * US) > 0);
    }

    #[test]
    fn a_new_estimate_changes_every_rate() {
        let mut s = ChainScheduler::new(1e9, 1000.0);
        let a = s.add_qp(0.25, 0);
        s.set_estimate(8e9, 0);
        assert_eq!(s.rate(a), 2e9);
    }

    #[test]
    fn a_refused_queue_pair_is_ready_sooner_when_its_rate_rises() {
        // 1 GB/s estimate; A (weight 0.01, 10 MB/s) and B (0.99) both busy, burst 4096. A
        // sends its full bucket at 0, then is refused 4096 bytes: at 10 MB/s they take
        // 409.6 µs. At 100 µs it has banked 1000 tokens; B leaves and A gets the whole
        // 1 GB/s: the other 3096 take 3.096 µs, so it is ready at 103.096 µs, not 409.6.
        let mut s = ChainScheduler::new(1e9, 4096.0);
        let (a, b) = (s.add_qp(0.01, 0), s.add_qp(0.99, 0));
        s.set_busy(a, true, 0);
        s.set_busy(b, true, 0);
        assert_eq!(s.try_send(a, 4096, 0), Ok(()));
        assert_eq!(s.try_send(a, 4096, 0), Err(409_600 * US / 1000));
        // Nothing changed: the same time.
        assert_eq!(s.ready_at(a, 4096, 100 * US), 409_600 * US / 1000);
        s.set_weight(b, 0.0, 100 * US);
        s.set_weight(a, 1.0, 100 * US);
        assert_eq!(s.ready_at(a, 4096, 100 * US), 103_096 * US / 1000);
        // It spends nothing: at that time the send goes, and the bucket is empty after.
        assert_eq!(s.ready_at(a, 4096, 103_096 * US / 1000), 103_096 * US / 1000);
        assert_eq!(s.try_send(a, 4096, 103_096 * US / 1000), Ok(()));
        assert!(s.try_send(a, 1, 103_096 * US / 1000).is_err());
        // Refused again (4.096 µs at 1 GB/s, to a picosecond of rounding), then a new
        // estimate ten times higher: 1 µs at 1 GB/s banked 1000 tokens, the other 3096 come at
        // 10 GB/s, 309.6 ns.
        let t = 103_096 * US / 1000;
        assert!(s.try_send(a, 4096, t).expect_err("spent").abs_diff(t + 4_096_000) <= 1);
        s.set_estimate(10e9, t + US);
        assert!(s.ready_at(a, 4096, t + US).abs_diff(t + US + 309_600) <= 1);
        // A rate of 0 never makes it.
        s.set_weight(a, 0.0, t + US);
        assert_eq!(s.ready_at(a, 4096, t + US), u64::MAX);
    }
}
