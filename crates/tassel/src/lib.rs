//! Tassel: a hierarchical rate limiter and QP scheduler for RDMA NICs (Tassel, SIGCOMM 2024),
//! as a component that takes plain numbers (flow ids, bytes, bits per second, picoseconds) and
//! knows nothing of any simulator, so it can be benchmarked alone or embedded in a datapath.
//!
//! Two tiers (§3.2):
//! - **Flow level** (§3.2.1): every active flow's scheduling time (the start time of its head
//!   packet) in a coarse timeline ([`flow_wheel`]); a flow is scheduled one scheduling latency ahead of its time, and
//!   [`adaptive_batch`] packets (WQEs) are fetched for it: `N = max(1, ⌈rate × latency / size⌉)`;
//!   it is not scheduled again before that batch arrives, so it gets at most N per latency.
//! - **Packet level** (§3.2.2): WF²Q+ start/finish times (`S₀ = S_flow`, `Sⱼ = Fⱼ₋₁`,
//!   `Fⱼ = Sⱼ + Lⱼ/R`); a packet filter keeps only *imminent* packets (start within one scheduling
//!   latency of the batch's arrival) and drops the rest, rescheduling the flow at the nearest
//!   dropped start (or now, if all were imminent). Fetches complete at once here, but a batch is
//!   filtered as hardware would see it: arriving one scheduling latency after the decision, so
//!   its imminent window ends two latencies after the decision; a timing wheel releases packets when eligible (`S ≤ now`) into a
//!   small array sorted by finish time; a packet leaves only when the link is idle, smallest
//!   finish first ([`timeline`]).
//!
//! Oversubscription (§3.2.2): with `Φ = Σ active rate limits / link rate > 1`, virtual time runs
//! at `1 / Φ` of real time, so every flow gets its limit divided by Φ and the link is shared in
//! proportion to the limits. (The paper prints `T(t+δ) = T(t) + δ·max(1, Φ)`, but its text — the
//! timer "slows down" — and Fig. 18b, where Φ = 2 halves every flow, require the slowing we
//! implement.) PFC (§3.5): while the downstream port is paused the timer stops.
//!
//! The baseline SE-PIEO (§2.3), a monolithic WF²Q+ over all flows that sends one packet per
//! sort, is [`Monolithic`], behind the same [`WqeSource`] interface.

pub mod bench;
mod clock;
pub mod flow_wheel;
mod monolithic;
pub mod timeline;

pub use clock::VirtualClock;

pub use monolithic::Monolithic;

use flow_wheel::FlowWheel;
use timeline::Timeline;

pub const PS_PER_SEC: u64 = 1_000_000_000_000;

/// Where a scheduler gets its packets (the QPs' WQEs in host memory).
pub trait WqeSource {
    /// Appends to `out` the lengths (bytes) of up to `max` packets of `flow`, starting `skip`
    /// packets after its head, without consuming them; fewer (or none) if the flow has fewer.
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>);
    /// Whether the last fetch stopped short of `max` at packets the flow has posted but the
    /// NIC holds back for now (a congestion window, a WRITE's held last packet): those came in
    /// the same batch in hardware, and the flow is woken when they are free. `false` if it ran
    /// out of posted packets (a WQE not yet read counts as not posted: the fetch reads it).
    fn held_back(&self) -> bool {
        false
    }
    /// The head packet of `flow` was transmitted.
    fn consume(&mut self, flow: u32);
}

impl<T: WqeSource + ?Sized> WqeSource for &mut T {
    fn fetch(&mut self, flow: u32, skip: u32, max: u32, out: &mut Vec<u32>) {
        (**self).fetch(flow, skip, max, out)
    }
    fn held_back(&self) -> bool {
        (**self).held_back()
    }
    fn consume(&mut self, flow: u32) {
        (**self).consume(flow)
    }
}

/// What to do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Transmit the head packet of `flow`, `len` bytes, now.
    Send { flow: u32, len: u32 },
    /// Nothing to send now; call again at `until` (real time, ps), or after a [`Tassel::wake`],
    /// [`Tassel::set_rate`] or resume if `None`.
    Idle { until: Option<u64> },
}

#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub link_bps: u64,
    /// Scheduling latency (WQE fetch round trip), ps; also the imminent window.
    pub scheduling_latency_ps: u64,
    /// Packet size assumed by adaptive batching, bytes.
    pub typical_packet_bytes: u32,
    /// Timing-wheel slot width, ps (4 ns at 250 MHz in the prototype).
    pub wheel_slot_ps: u64,
    /// Upper bound on packets fetched per scheduling decision.
    pub max_batch: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { link_bps: 100_000_000_000, scheduling_latency_ps: 1_000_000, typical_packet_bytes: 1024, wheel_slot_ps: 4_000, max_batch: 64 }
    }
}

/// Rates are kept in whole Kbps, rounded to the nearest (1 Kbps to 4 Tbps in a `u32`).
pub fn to_kbps(bps: u64) -> u32 {
    (bps.saturating_add(500) / 1000).clamp(1, u32::MAX as u64) as u32
}

/// Time to send `bytes` at `kbps`, ps (rounded up).
#[inline]
pub fn tx_ps(bytes: u32, kbps: u32) -> u64 {
    (bytes as u64 * 8 * 1_000_000_000).div_ceil(kbps as u64)
}

/// Packets to fetch per scheduling decision (§3.2.1): how many of the flow's packets start
/// within one scheduling latency, `⌈rate × latency / typical size⌉`, at least one and at most
/// `max`. (§3.2.1 prints the quotient and rounds its example, 3.05, to 3; but a flow is fetched
/// for once per latency, so any round-down leaves it short of its limit: 10 Gbps of 1000 B
/// packets would get 8 Gbps, against the accuracy of Fig. 17.)
pub fn adaptive_batch(rate_bps: u64, latency_ps: u64, typical_bytes: u32, max: u32) -> u32 {
    batch_kbps(to_kbps(rate_bps), latency_ps, typical_bytes, max)
}

/// [`adaptive_batch`] for a rate in Kbps, in 64-bit arithmetic (Kbps × ps stays below 2⁶⁴ for
/// latencies up to an hour).
#[inline]
fn batch_kbps(kbps: u32, latency_ps: u64, typical_bytes: u32, max: u32) -> u32 {
    let n = (kbps as u64 * latency_ps).div_ceil(typical_bytes.max(1) as u64 * 8 * 1_000_000_000);
    n.clamp(1, max.max(1) as u64) as u32
}

const SCHEDULED: u8 = 1;
const ACTIVE: u8 = 2;
/// Scheduled only to keep the cap: its last batch came back short, and it may not be fetched
/// for again before that batch arrives. It counts as active only while it holds packets.
const WAITING: u8 = 4;

/// Per-flow scheduler state: 16 bytes, plus 4 in a flow-wheel slot (16 in its far heap) while
/// scheduled.
#[derive(Clone, Copy, Debug, Default)]
struct FlowState {
    /// Start time (virtual ps) of the next packet not yet fetched.
    next_start: u64,
    rate_kbps: u32,
    /// Packets fetched and held as imminent.
    held: u16,
    flags: u8,
}

pub struct Tassel {
    cfg: Config,
    flows: Vec<FlowState>,
    flow_wheel: FlowWheel,
    timeline: Timeline,
    clock: VirtualClock,
    /// Real time at which the link finishes the last packet sent.
    link_free_at: u64,
    scratch: Vec<u32>,
    /// Packets fetched and then dropped by the filter (the fetch-and-drop PCIe cost).
    pub dropped_fetches: u64,
    pub fetches: u64,
}

impl Tassel {
    pub fn new(cfg: Config, flows: usize) -> Tassel {
        Tassel {
            cfg,
            flows: vec![FlowState { rate_kbps: to_kbps(cfg.link_bps), ..Default::default() }; flows],
            flow_wheel: FlowWheel::new(cfg.scheduling_latency_ps / 16),
            timeline: Timeline::new(cfg.wheel_slot_ps, 2 * cfg.scheduling_latency_ps),
            clock: VirtualClock::new(to_kbps(cfg.link_bps) as u64),
            link_free_at: 0,
            scratch: Vec::new(),
            dropped_fetches: 0,
            fetches: 0,
        }
    }

    /// Makes room for flow ids below `n` (new flows start at line rate, idle).
    pub fn ensure_flows(&mut self, n: usize) {
        if self.flows.len() < n {
            self.flows.resize(n, self.new_flow());
        }
    }

    /// Flow ids this scheduler has room for.
    pub fn flow_capacity(&self) -> usize {
        self.flows.len()
    }

    /// Whether `flow` is neither scheduled nor holding packets (its id may then be reused).
    pub fn flow_idle(&self, flow: u32) -> bool {
        let f = &self.flows[flow as usize];
        f.flags == 0 && f.held == 0
    }

    /// Returns idle `flow` to a new flow's state, for reuse of its id.
    pub fn reset_flow(&mut self, flow: u32) {
        debug_assert!(self.flow_idle(flow));
        self.flows[flow as usize] = self.new_flow();
    }

    /// A new flow's state: line rate, no credit.
    fn new_flow(&self) -> FlowState {
        FlowState { rate_kbps: to_kbps(self.cfg.link_bps), ..Default::default() }
    }

    /// Bytes of scheduler state per flow at most (the flow table entry plus a far-heap entry).
    pub const STATE_BYTES_PER_FLOW: usize = std::mem::size_of::<FlowState>() + std::mem::size_of::<(u64, u32)>();

    /// The oversubscription factor Φ (Σ active limits / link rate).
    pub fn phi(&self) -> f64 {
        self.clock.phi()
    }

    /// Virtual time now (ps).
    pub fn virtual_now(&self) -> u64 {
        self.clock.now()
    }

    /// Imminent packets held now.
    pub fn imminent(&self) -> usize {
        self.timeline.len()
    }

    /// Sets a flow's rate limit; it applies to packets fetched from now on.
    pub fn set_rate(&mut self, flow: u32, bps: u64, now: u64) {
        self.clock.advance(now);
        let f = &mut self.flows[flow as usize];
        let new = to_kbps(bps);
        if f.flags & ACTIVE != 0 {
            self.clock.adjust_active(new as u64, f.rate_kbps as u64);
        }
        f.rate_kbps = new;
    }

    pub fn rate_bps(&self, flow: u32) -> u64 {
        self.flows[flow as usize].rate_kbps as u64 * 1000
    }

    /// Doorbell: `flow` has new packets to send.
    pub fn wake(&mut self, flow: u32, now: u64) {
        self.clock.advance(now);
        let v = self.clock.now();
        let f = &mut self.flows[flow as usize];
        if f.flags & SCHEDULED != 0 {
            return;
        }
        // An idle flow banks no credit: it starts no earlier than now. A flow still holding
        // packets is not idle: its next packet follows them (WF²Q+'s S = previous F).
        if f.held == 0 {
            f.next_start = f.next_start.max(v);
        }
        f.flags |= SCHEDULED;
        self.flow_wheel.push(f.next_start, flow);
        self.set_active(flow, true);
    }

    /// PFC: the downstream port is paused (the timer stops) or resumed.
    pub fn set_paused(&mut self, paused: bool, now: u64) {
        self.clock.advance(now);
        self.clock.set_paused(paused);
    }

    fn set_active(&mut self, flow: u32, active: bool) {
        let f = &mut self.flows[flow as usize];
        if (f.flags & ACTIVE != 0) == active {
            return;
        }
        if active {
            f.flags |= ACTIVE;
            self.clock.adjust_active(f.rate_kbps as u64, 0);
        } else {
            f.flags &= !ACTIVE;
            self.clock.adjust_active(0, f.rate_kbps as u64);
        }
    }

    /// Schedules every flow due within one scheduling latency: fetch a batch, time it, keep the
    /// imminent packets and reschedule the flow (§3.2.1–§3.2.2).
    fn schedule_flows(&mut self, src: &mut impl WqeSource) {
        let v = self.clock.now();
        let latency = self.cfg.scheduling_latency_ps;
        // Flows due within one latency are scheduled; their batch arrives one latency later and
        // keeps what starts within a latency of that arrival.
        let due = v + latency;
        let horizon = v + 2 * latency;
        while let Some(flow) = self.flow_wheel.pop_due(due) {
            let st = &mut self.flows[flow as usize];
            if st.flags & ACTIVE == 0 {
                // Back after waiting out a short batch with nothing held: idle meanwhile, so it
                // banks no credit (as a woken idle flow, [`Tassel::wake`]).
                st.next_start = st.next_start.max(v);
            }
            st.flags &= !WAITING;
            let f = *st;
            let n = batch_kbps(f.rate_kbps, self.cfg.scheduling_latency_ps, self.cfg.typical_packet_bytes, self.cfg.max_batch);
            self.scratch.clear();
            src.fetch(flow, f.held as u32, n, &mut self.scratch);
            self.fetches += self.scratch.len() as u64;
            let mut start = f.next_start;
            let mut kept = 0u16;
            let mut next = None;
            for (j, &len) in self.scratch.iter().enumerate() {
                if start > horizon {
                    // Distant: dropped now, fetched again when the flow comes round.
                    self.dropped_fetches += (self.scratch.len() - j) as u64;
                    next = Some(start);
                    break;
                }
                let finish = start + tx_ps(len, f.rate_kbps);
                self.timeline.insert(flow, len, start, finish, v);
                kept += 1;
                start = finish;
            }
            let st = &mut self.flows[flow as usize];
            st.held += kept;
            st.next_start = next.unwrap_or(start);
            st.flags &= !SCHEDULED;
            // A batch short of N because the flow had fewer posted: it waits for the batch too
            // (left unscheduled, its next doorbell would fetch again at once, and a queue pair
            // posting fewer than N at a time would pass the cap). Short because the NIC held
            // the rest back, it is woken when they are free, as before.
            let short = next.is_none() && self.scratch.len() < n as usize;
            let waits = short && !self.scratch.is_empty() && !src.held_back();
            if next.is_some() || !short || waits {
                // Reschedule at the nearest dropped packet or, if all were imminent, at the
                // batch's arrival: a flow is not scheduled again before its last decision has
                // executed (§3.2.1), so one flow gets at most N packets per scheduling latency.
                // The latency is real time: the batch arrives when virtual time has moved on by
                // latency / Φ. The wheel hands a flow out one latency before its time, hence
                // arrival + latency, rounded up to a wheel slot so that it never comes out early.
                // A flow slower than a batch per latency kept its whole batch, and its next
                // packet starts past the horizon the batch's arrival would give: it comes round
                // at that start, as for a dropped packet (fetched at its arrival, the packet
                // would only be dropped, a second PCIe read for each one sent).
                let at = match next {
                    Some(s) => s,
                    None => {
                        let arrival = (v + self.clock.span(latency) + latency).div_ceil(self.flow_wheel.slot_ps()) * self.flow_wheel.slot_ps();
                        if start > arrival + latency {
                            start
                        } else {
                            arrival
                        }
                    }
                };
                st.flags |= SCHEDULED;
                if waits {
                    st.flags |= WAITING;
                }
                self.flow_wheel.push(at, flow);
                self.set_active(flow, true);
            } else if st.held == 0 {
                self.set_active(flow, false);
            } else {
                // Held back by the NIC but holding packets (a waiting flow that had left the
                // active set comes back so): active while it holds them.
                self.set_active(flow, true);
            }
        }
    }

    /// Advances to real time `now` and says whether to send a packet now. While the port is
    /// paused nothing is sent (a packet handed out then could not leave, and its slot would be
    /// lost to its flow): `Idle` until resumed.
    pub fn poll(&mut self, now: u64, src: &mut impl WqeSource) -> Decision {
        self.clock.advance(now);
        self.schedule_flows(src);
        let v = self.clock.now();
        self.timeline.release_eligible(v);
        if self.clock.paused() {
            return Decision::Idle { until: None };
        }
        if now >= self.link_free_at {
            if let Some((flow, len)) = self.timeline.pop_min_finish() {
                self.link_free_at = now + tx_ps(len, self.clock.link_kbps() as u32);
                src.consume(flow);
                let f = &mut self.flows[flow as usize];
                f.held -= 1;
                if f.held == 0 && (f.flags & SCHEDULED == 0 || f.flags & WAITING != 0) {
                    // Nothing held and nothing to fetch before its batch arrives: it leaves
                    // the active set, so the virtual clock does not run slow for it (a
                    // waiting flow counted active would hold the others' packets back).
                    self.set_active(flow, false);
                }
                return Decision::Send { flow, len };
            }
        }
        Decision::Idle { until: self.next_wakeup(now) }
    }

    /// The earliest real time anything can change: the link frees up with a packet eligible, a
    /// packet becomes eligible, or a flow comes due.
    fn next_wakeup(&self, now: u64) -> Option<u64> {
        let mut best: Option<u64> = None;
        let mut consider = |t: Option<u64>| {
            if let Some(t) = t {
                best = Some(best.map_or(t, |b: u64| b.min(t)));
            }
        };
        if self.timeline.has_eligible() {
            consider(Some(self.link_free_at.max(now)));
        }
        consider(self.timeline.next_start().and_then(|s| self.clock.real_at(s)));
        if let Some(s) = self.flow_wheel.next_due() {
            consider(self.clock.real_at(s.saturating_sub(self.cfg.scheduling_latency_ps)));
        }
        best.map(|t| t.max(now))
    }
}

#[cfg(test)]
mod tests;
