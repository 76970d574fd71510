//! The NIC's QP scheduler: which queue pair sends the next packet (SCR §4.2, Fig. 3).
//!
//! The NIC tells the scheduler when a queue pair has a packet to send and from when (the WQE
//! fetch decides the time; for schedulers that do not rate-limit themselves, the NIC's pacing
//! of the congestion-control rate too); the scheduler answers, each time the port can take a
//! packet, which queue pair goes. Implementations:
//! - [`Commodity`]: round robin with whole-WQE turns, the NIC paces rates; its rate-limit
//!   context cache makes it slow down beyond ~1K rate-limited QPs (Tassel Fig. 1/14);
//! - packet round robin ([`Commodity::packet_round_robin`]): ns-3's NIC, one packet per turn;
//! - [`TasselSched`]: Tassel's hierarchical rate limiter (`crates/tassel`);
//! - [`SePieoSched`]: the monolithic SE-PIEO baseline (Tassel §2.3).
//!
//! Each carries a hardware cost model ([`QpScheduler::decision_time`]): the time its circuit
//! needs per packet, which bounds the packet rate as the hardware would.

mod commodity;
mod tassel_sched;

pub use commodity::Commodity;
pub use tassel_sched::{SePieoSched, SelfTimed, SelfTiming, TasselSched};

use crate::units::{BitsPerSec, Bytes, Time};
use serde::{Deserialize, Serialize};
use tassel::WqeSource;

/// The scheduler's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send the next packet of this queue pair now.
    Qp(u32),
    /// Nothing is eligible now; the earliest eligible time if any queue pair is waiting.
    Idle(Option<Time>),
}

pub trait QpScheduler {
    /// Queue pair `qp` has a packet to send, not before `at`.
    fn push(&mut self, qp: u32, at: Time, now: Time);
    /// The queue pair to serve at `now`. `src` lists queue pairs' upcoming packet lengths (for
    /// schedulers that time packets themselves).
    fn pop(&mut self, now: Time, src: &mut dyn WqeSource) -> Pick;
    /// The popped queue pair sent a packet of `bytes`; `message_end` if it was its message's last.
    fn sent(&mut self, qp: u32, bytes: u32, message_end: bool);
    /// A queue pair's rate limit (the congestion-control rate capped by any configured limit).
    fn set_rate(&mut self, _qp: u32, _bps: u64, _now: Time) {}
    /// Whether the scheduler enforces rate limits itself (the NIC then does not pace).
    fn rate_limits(&self) -> bool {
        false
    }
    /// PFC: the port is paused for the data class (Tassel §3.5: the timer stops).
    fn set_paused(&mut self, _paused: bool, _now: Time) {}
    /// The queue pair is gone.
    fn remove(&mut self, _qp: u32) {}
    /// Queue pair `qp`, already pushed, may now send at `at` instead (its pacing gap was
    /// re-timed by a rate change). Only schedulers that leave pacing to the NIC see this.
    fn reschedule(&mut self, _qp: u32, _at: Time, _now: Time) {}
    /// Hardware cost model: time per packet decision.
    fn decision_time(&self) -> Time;
    /// Packets fetched and fetched-then-dropped so far (Tassel's fetch-and-drop PCIe cost).
    fn fetch_stats(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Bytes of per-QP scheduling state the scheduler's table holds now (it keeps the size
    /// of its most queue pairs at once).
    fn state_bytes(&self) -> u64 {
        0
    }
}

/// Which scheduler a NIC uses (the scenario's `nic.scheduler`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerSpec {
    /// Round robin over active queue pairs, whole WQEs per turn until a turn carries
    /// `turn_bytes`.
    Commodity {
        #[serde(default = "default_turn_bytes")]
        turn_bytes: Bytes,
        /// If set, a turn also ends inside a message once it has carried this much (a NIC that
        /// splits a large WQE between turns); unset, a message is never split, and one of
        /// 100 MB holds the NIC for its whole 8 ms at 100 Gbps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_turn_bytes: Option<Bytes>,
        /// Rate-limit contexts the scheduler caches; beyond them each decision misses with
        /// probability `1 − cache / rate-limited QPs` and pays `miss_penalty`.
        #[serde(default = "default_context_cache")]
        rate_context_cache: u32,
        #[serde(default = "default_miss_penalty")]
        miss_penalty: Time,
    },
    /// Round robin one packet per turn, no decision cost: the queue-pair selection of HPCC's
    /// and ConWeave's ns-3 NIC (the `ns3` NIC profile's scheduler).
    PacketRoundRobin {},
    /// Tassel (SIGCOMM 2024): scheduling latency, batching and timing wheel as in the paper's
    /// prototype; a packet decision takes `cycles_per_packet` cycles at `clock_mhz` (the sorted
    /// register array: 2 cycles at 250 MHz).
    Tassel {
        #[serde(default = "default_sched_latency")]
        latency: Time,
        #[serde(default = "default_typical_packet")]
        typical_packet: Bytes,
        #[serde(default = "default_wheel_slot")]
        wheel_slot: Time,
        #[serde(default = "default_max_batch")]
        max_batch: u32,
        #[serde(default = "default_tassel_mhz")]
        clock_mhz: f64,
        #[serde(default = "two")]
        cycles_per_packet: u32,
    },
    /// SE-PIEO: one sort (4 cycles) per packet at a clock that falls with the number of flows
    /// it is built for (Tassel Fig. 5/13: 258 MHz at 1K flows to 138 MHz at 16K).
    SePieo {
        #[serde(default = "default_capacity")]
        flows: u32,
        #[serde(default = "four")]
        cycles_per_packet: u32,
    },
}

pub fn default_turn_bytes() -> Bytes {
    Bytes(32 * 1024)
}
fn default_context_cache() -> u32 {
    1024
}
fn default_miss_penalty() -> Time {
    Time::from_ns(133)
}
fn default_sched_latency() -> Time {
    Time::from_us(1)
}
fn default_typical_packet() -> Bytes {
    Bytes(1024)
}
fn default_wheel_slot() -> Time {
    Time::from_ns(4)
}
fn default_max_batch() -> u32 {
    64
}
fn default_tassel_mhz() -> f64 {
    250.0
}
fn default_capacity() -> u32 {
    16384
}
fn two() -> u32 {
    2
}
fn four() -> u32 {
    4
}

impl Default for SchedulerSpec {
    fn default() -> Self {
        SchedulerSpec::Commodity { turn_bytes: default_turn_bytes(), max_turn_bytes: None, rate_context_cache: default_context_cache(), miss_penalty: default_miss_penalty() }
    }
}

/// SE-PIEO's clock (MHz) when built for `flows` flows: Tassel Fig. 5/13 measured 258 MHz at 1K
/// and 138 MHz at 16K; we interpolate linearly in log₂(flows) and hold the ends.
pub fn se_pieo_mhz(flows: u32) -> f64 {
    let x = (flows.max(1) as f64).log2();
    let t = ((x - 10.0) / 4.0).clamp(0.0, 1.0);
    258.0 + (138.0 - 258.0) * t
}

/// Time of `cycles` cycles at `mhz`.
pub fn cycles(cycles: u32, mhz: f64) -> Time {
    Time((cycles as f64 * 1e6 / mhz).round() as u64)
}

/// Most timing-wheel slots a Tassel scheduler may be asked for (2 × latency / wheel_slot; the
/// wheel rounds up to a power of two, at most 2²¹ slots, about 64 MB per NIC).
pub const MAX_WHEEL_SLOTS: u64 = 1 << 20;

impl SchedulerSpec {
    /// Whether it keeps rates, its link's among them, in whole Kbps in 32 bits (Tassel and
    /// SE-PIEO, which time packets themselves): it cannot tell rates apart below a Kbps, nor
    /// pace a link above 4.29 Tbps.
    pub fn keeps_rates_in_kbps(&self) -> bool {
        self.times_packets()
    }

    /// Whether it times each queue pair's packets itself (Tassel and SE-PIEO): the NIC's own
    /// pacing, and so `nic.pace_burst`, is off under it.
    pub fn times_packets(&self) -> bool {
        matches!(self, SchedulerSpec::Tassel { .. } | SchedulerSpec::SePieo { .. })
    }

    /// How long a queue pair may wait between the batches it is served in: Tassel's scheduling
    /// `latency` (one fetch per queue pair per interval, §3.2.1); zero for the others.
    pub fn batch_interval(&self) -> Time {
        match self {
            SchedulerSpec::Tassel { latency, .. } => *latency,
            _ => Time::ZERO,
        }
    }

    /// What is wrong with the parameters, if anything: (key under `nic.scheduler.<kind>`, why).
    pub fn check(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut bad = |kind: &str, key: &str, why: String| out.push((format!("{kind}.{key}"), why));
        let clock_ok = |mhz: f64| mhz.is_finite() && (1.0..=100_000.0).contains(&mhz);
        match self {
            SchedulerSpec::Commodity { max_turn_bytes: Some(m), .. } if m.0 == 0 => {
                bad("commodity", "max_turn_bytes", "expected a positive size (leave it out for turns that never split a message)".into());
            }
            SchedulerSpec::Commodity { .. } | SchedulerSpec::PacketRoundRobin {} => {}
            SchedulerSpec::Tassel { latency, typical_packet, wheel_slot, max_batch, clock_mhz, .. } => {
                let k = "tassel";
                if latency.0 == 0 || *latency > Time::from_ms(1) {
                    bad(k, "latency", format!("expected a scheduling latency above 0 and at most 1ms (the paper's is 1us), got {latency}"));
                }
                if !(1..=65_536).contains(&typical_packet.0) {
                    bad(k, "typical_packet", format!("expected 1B to 64KiB, got {}B", typical_packet.0));
                }
                if wheel_slot.0 == 0 {
                    bad(k, "wheel_slot", "expected a positive slot width".into());
                } else if latency.0.saturating_mul(2) / wheel_slot.0 > MAX_WHEEL_SLOTS {
                    bad(k, "wheel_slot", format!("2 x latency / wheel_slot is {} timing-wheel slots, more than {MAX_WHEEL_SLOTS}: widen the slots or shorten the latency", latency.0.saturating_mul(2) / wheel_slot.0));
                }
                // A queue pair's packets held from its fetches count in 16 bits (the paper's
                // per-flow state).
                if *max_batch == 0 || *max_batch > u16::MAX as u32 {
                    bad(k, "max_batch", format!("expected 1 to {} packets per fetch, got {max_batch}", u16::MAX));
                }
                if !clock_ok(*clock_mhz) {
                    bad(k, "clock_mhz", format!("expected a clock of 1 to 100000 MHz, got {clock_mhz}"));
                }
            }
            SchedulerSpec::SePieo { flows, .. } => {
                if *flows == 0 {
                    bad("se_pieo", "flows", "expected at least 1 flow".into());
                }
            }
        }
        out
    }

    pub fn build(&self, link: BitsPerSec) -> Scheduler {
        match self {
            SchedulerSpec::Commodity { turn_bytes, max_turn_bytes, rate_context_cache, miss_penalty } => {
                let c = Commodity::new(turn_bytes.0, *rate_context_cache, *miss_penalty, link);
                Scheduler::Commodity(c.with_max_turn(max_turn_bytes.map_or(u64::MAX, |b| b.0)))
            }
            SchedulerSpec::PacketRoundRobin {} => Scheduler::Commodity(Commodity::packet_round_robin(link)),
            SchedulerSpec::Tassel { latency, typical_packet, wheel_slot, max_batch, clock_mhz, cycles_per_packet } => {
                let cfg = tassel::Config {
                    link_bps: link.0,
                    scheduling_latency_ps: latency.0,
                    typical_packet_bytes: typical_packet.0 as u32,
                    wheel_slot_ps: wheel_slot.0.max(1),
                    max_batch: *max_batch,
                };
                Scheduler::Tassel(TasselSched::new(tassel::Tassel::new(cfg, 0), cycles(*cycles_per_packet, *clock_mhz)))
            }
            SchedulerSpec::SePieo { flows, cycles_per_packet } => {
                let cfg = tassel::Config { link_bps: link.0, ..Default::default() };
                Scheduler::SePieo(SePieoSched::new(tassel::Monolithic::new(cfg, 0), cycles(*cycles_per_packet, se_pieo_mhz(*flows))))
            }
        }
    }
}

/// A NIC's scheduler, dispatched by enum. (One per NIC, asked on every packet: Tassel's variant
/// is large, and boxing it would add a pointer chase to each decision.)
#[allow(clippy::large_enum_variant)]
pub enum Scheduler {
    Commodity(Commodity),
    Tassel(TasselSched),
    SePieo(SePieoSched),
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Scheduler::Commodity($s) => $e,
            Scheduler::Tassel($s) => $e,
            Scheduler::SePieo($s) => $e,
        }
    };
}

impl QpScheduler for Scheduler {
    #[inline]
    fn push(&mut self, qp: u32, at: Time, now: Time) {
        each!(self, s => s.push(qp, at, now))
    }
    #[inline]
    fn pop(&mut self, now: Time, src: &mut dyn WqeSource) -> Pick {
        each!(self, s => s.pop(now, src))
    }
    #[inline]
    fn sent(&mut self, qp: u32, bytes: u32, message_end: bool) {
        each!(self, s => s.sent(qp, bytes, message_end))
    }
    #[inline]
    fn set_rate(&mut self, qp: u32, bps: u64, now: Time) {
        each!(self, s => s.set_rate(qp, bps, now))
    }
    #[inline]
    fn rate_limits(&self) -> bool {
        each!(self, s => s.rate_limits())
    }
    fn set_paused(&mut self, paused: bool, now: Time) {
        each!(self, s => s.set_paused(paused, now))
    }
    fn remove(&mut self, qp: u32) {
        each!(self, s => s.remove(qp))
    }
    fn reschedule(&mut self, qp: u32, at: Time, now: Time) {
        each!(self, s => s.reschedule(qp, at, now))
    }
    #[inline]
    fn decision_time(&self) -> Time {
        each!(self, s => s.decision_time())
    }
    fn fetch_stats(&self) -> (u64, u64) {
        each!(self, s => s.fetch_stats())
    }
    fn state_bytes(&self) -> u64 {
        each!(self, s => s.state_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_clocks() {
        assert!((se_pieo_mhz(1024) - 258.0).abs() < 1e-9);
        assert!((se_pieo_mhz(16384) - 138.0).abs() < 1e-9);
        // 4 cycles at 138 MHz: 29 ns per packet, 34.5 Mpps.
        assert_eq!(cycles(4, 138.0), Time(28_986));
        // Tassel's register array: 2 cycles at 250 MHz, 8 ns, 125 Mpps.
        assert_eq!(cycles(2, 250.0), Time::from_ns(8));
    }
}
