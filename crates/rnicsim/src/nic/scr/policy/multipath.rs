//! Multipath monitoring and path selection on SCR (paper A.7, after MP-RDMA and PLB).
//!
//! Each flow has up to [`MAX_PATHS`] candidate paths, each named by a UDP source port (ECMP
//! hashes the port, so a port is a path): the ports given, or ports drawn from the flow id
//! ("a random generation approach"). The policy probes one path at a time, in turn, every
//! `interval` / paths (later if the last probe is still out: answers arriving together would
//! coalesce into one RTT event), with an out-of-band probe on that port ([`Action::ProbePath`]); the peer
//! answers, and the answer comes back as an RTT event carrying the port. A probe unanswered
//! for `timeout` (A.7: 100 µs) marks its path failed; a later answer on it marks it recovered.
//! The flow's data is pinned to the live path with the lowest RTT (`Action::SetSport`, as
//! `mlx5dv_modify_qp_udp_sport` does per QP), moving only when another path is better by more
//! than `hysteresis` or its own has failed.
//!
//! The policy runs on the flow's ACK events and on probe answers; the answers of the live paths
//! keep it running (and so probing, and timing out the dead ones) when the data's own path has
//! failed and its ACKs stopped. Times are kept as wrapping 32-bit nanoseconds in the 48-byte
//! context, good for gaps below 4.29 s.

use super::{Action, Env, FlowEntry, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// The most candidate paths a flow keeps (its context is 48 bytes).
pub const MAX_PATHS: usize = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultipathParams {
    /// The candidate UDP source ports (A.7's testbed: 5101 and 5102); empty: `paths` ports
    /// drawn from each flow's id.
    #[serde(default)]
    pub sports: Vec<u16>,
    /// How many ports to draw when `sports` is empty.
    #[serde(default = "default_paths")]
    pub paths: u32,
    /// Every path is probed once per interval (the probes are spread over it).
    #[serde(default = "default_interval")]
    pub interval: Time,
    /// An unanswered probe marks its path failed after this long (A.7: 100 µs).
    #[serde(default = "default_timeout")]
    pub timeout: Time,
    /// Another path must be faster by more than this for the data to move.
    #[serde(default = "default_hysteresis")]
    pub hysteresis: Time,
    #[serde(default = "default_cycles")]
    pub cycles: u32,
}

fn default_paths() -> u32 {
    2
}
fn default_interval() -> Time {
    Time::from_us(20)
}
fn default_timeout() -> Time {
    Time::from_us(100)
}
fn default_hysteresis() -> Time {
    Time::from_us(1)
}
fn default_cycles() -> u32 {
    300
}

impl Default for MultipathParams {
    fn default() -> Self {
        MultipathParams { sports: Vec::new(), paths: default_paths(), interval: default_interval(), timeout: default_timeout(), hysteresis: default_hysteresis(), cycles: default_cycles() }
    }
}

impl MultipathParams {
    /// What is wrong with the parameters, if anything (key, why).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let n = if self.sports.is_empty() { self.paths as usize } else { self.sports.len() };
        if !(1..=MAX_PATHS).contains(&n) {
            return Err((if self.sports.is_empty() { "paths" } else { "sports" }, format!("1 to {MAX_PATHS} paths, got {n}")));
        }
        if self.interval.0 == 0 || self.timeout.0 == 0 || self.timeout.0 >= (u32::MAX as u64) * 1000 {
            return Err(("timeout", "interval and timeout must be above 0, the timeout below 4.29 s".into()));
        }
        Ok(())
    }
}

const NO_RTT: u32 = u32::MAX;

/// The per-flow context (44 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct MpFlow {
    /// Each path's last RTT (ns; `NO_RTT`: failed or not yet answered).
    pub rtt_ns: [u32; MAX_PATHS],
    /// When each path's outstanding probe left (wrapping ns).
    pub sent_ns: [u32; MAX_PATHS],
    /// When the next probe is due.
    pub next_probe: Time,
    /// The path the data is on, the next path to probe, and bit masks of paths with a probe
    /// outstanding and of paths known failed.
    pub current: u8,
    pub turn: u8,
    pub outstanding: u8,
    pub failed: u8,
}

pub struct Multipath {
    p: MultipathParams,
    n: usize,
    switches: u64,
    failures: u64,
    recoveries: u64,
    first_failure: Option<Time>,
    first_recovery: Option<Time>,
}

impl Multipath {
    pub fn new(p: MultipathParams) -> Multipath {
        let n = if p.sports.is_empty() { p.paths as usize } else { p.sports.len() }.clamp(1, MAX_PATHS);
        Multipath { p, n, switches: 0, failures: 0, recoveries: 0, first_failure: None, first_recovery: None }
    }

    /// Path `i`'s port for `flow`.
    pub fn sport(&self, flow: u32, i: usize) -> u16 {
        match self.p.sports.get(i) {
            Some(&s) => s,
            // A port in the dynamic range, drawn from the flow and the path index.
            None => 49152 + (crate::sim::rng::mix64(((flow as u64) << 8) | i as u64) % 16384) as u16,
        }
    }

    fn ns(t: Time) -> u32 {
        (t.0 / 1000) as u32
    }

    /// The live path with the lowest RTT, if any is known.
    fn best(&self, f: &MpFlow) -> Option<usize> {
        (0..self.n).filter(|&i| f.failed & (1 << i) == 0 && f.rtt_ns[i] != NO_RTT).min_by_key(|&i| (f.rtt_ns[i], i))
    }
}

impl Policy for Multipath {
    type Flow = MpFlow;
    fn name(&self) -> &'static str {
        "multipath"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        matches!(kind, Kind::Ack | Kind::Rtt)
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.p.cycles
    }
    fn on_join(&mut self, flows: &mut [FlowEntry<MpFlow>], env: &mut Env) -> u32 {
        // The new flow starts on its first path, nothing known yet.
        let f = flows.last_mut().expect("the joining flow is last");
        f.ctx = MpFlow { rtt_ns: [NO_RTT; MAX_PATHS], next_probe: env.now, ..Default::default() };
        env.actions.push(Action::SetSport { flow: f.flow, sport: self.sport(f.flow, 0) });
        0
    }
    fn on_event(&mut self, ev: &ScrEvent, f: &mut MpFlow, env: &mut Env) -> Verdict {
        let now = Self::ns(env.now);
        // A probe's answer: its path's RTT, and a recovery if it had failed.
        if ev.kind == Kind::Rtt {
            if let Some(i) = (0..self.n).find(|&i| self.sport(ev.flow, i) as u32 == ev.value) {
                f.rtt_ns[i] = (ev.rtt.0 / 1000).min(NO_RTT as u64 - 1) as u32;
                f.outstanding &= !(1 << i);
                if f.failed & (1 << i) != 0 {
                    f.failed &= !(1 << i);
                    self.recoveries += 1;
                    self.first_recovery.get_or_insert(env.now);
                }
            }
        }
        // Probes unanswered past the timeout: their paths have failed.
        let timeout = Self::ns(self.p.timeout);
        for i in 0..self.n {
            if f.outstanding & (1 << i) != 0 && now.wrapping_sub(f.sent_ns[i]) >= timeout {
                f.outstanding &= !(1 << i);
                if f.failed & (1 << i) == 0 {
                    f.failed |= 1 << i;
                    f.rtt_ns[i] = NO_RTT;
                    self.failures += 1;
                    self.first_failure.get_or_insert(env.now);
                }
            }
        }
        // The next path's probe, once due and once the last one is answered or timed out: one
        // probe at a time, so answers never coalesce into one RTT event in the flow's queue.
        if env.now >= f.next_probe && f.outstanding == 0 {
            let i = f.turn as usize % self.n;
            f.outstanding |= 1 << i;
            f.sent_ns[i] = now;
            env.actions.push(Action::ProbePath { flow: ev.flow, sport: self.sport(ev.flow, i) });
            f.turn = ((i + 1) % self.n) as u8;
            f.next_probe = env.now + Time(self.p.interval.0 / self.n as u64);
        }
        // Move the data to the best live path when its own failed or another is clearly faster.
        if let Some(b) = self.best(f) {
            let cur = f.current as usize;
            let cur_dead = f.failed & (1 << cur) != 0;
            let better = f.rtt_ns[cur] == NO_RTT || (f.rtt_ns[b] as u64 + Self::ns(self.p.hysteresis) as u64) < f.rtt_ns[cur] as u64;
            if b != cur && (cur_dead || better) {
                f.current = b as u8;
                self.switches += 1;
                env.actions.push(Action::SetSport { flow: ev.flow, sport: self.sport(ev.flow, b) });
            }
        }
        Verdict::Adjusting
    }
    fn report(&self, flows: &[FlowEntry<MpFlow>]) -> Vec<(&'static str, f64)> {
        const NAMES: [&str; MAX_PATHS] = ["path0_rtt_us", "path1_rtt_us", "path2_rtt_us", "path3_rtt_us"];
        let live: Vec<_> = flows.iter().filter(|f| !f.left).collect();
        let us = |t: Option<Time>| t.map_or(-1.0, |t| t.0 as f64 / 1e6);
        let mut out = vec![
            ("switches", self.switches as f64),
            ("failures", self.failures as f64),
            ("recoveries", self.recoveries as f64),
            ("first_failure_us", us(self.first_failure)),
            ("first_recovery_us", us(self.first_recovery)),
            ("current_path", live.iter().map(|f| f.ctx.current as f64).sum::<f64>() / live.len().max(1) as f64),
        ];
        for (i, name) in NAMES.iter().enumerate().take(self.n) {
            let known: Vec<f64> = live.iter().filter(|f| f.ctx.rtt_ns[i] != NO_RTT).map(|f| f.ctx.rtt_ns[i] as f64 / 1e3).collect();
            out.push((name, if known.is_empty() { -1.0 } else { known.iter().sum::<f64>() / known.len() as f64 }));
        }
        // The largest gap between one flow's fastest and slowest known path.
        let spread = live
            .iter()
            .map(|f| {
                let known: Vec<u32> = f.ctx.rtt_ns[..self.n].iter().copied().filter(|&r| r != NO_RTT).collect();
                known.iter().max().zip(known.iter().min()).map_or(0, |(a, b)| a - b)
            })
            .max()
            .unwrap_or(0);
        out.push(("rtt_spread_us", spread as f64 / 1e3));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::BitsPerSec;

    fn env(now_us: u64, actions: &mut Vec<Action>) -> Env<'_> {
        Env { now: Time::from_us(now_us), line_rate: BitsPerSec::gbps(100), install_latency: Time::ZERO, actions }
    }

    fn ev(kind: Kind, at_us: u64, rtt_ns: u64, value: u32) -> ScrEvent {
        let at = Time::from_us(at_us);
        ScrEvent { kind, flow: 3, at, first_at: at, bytes: 0, count: 1, rtt: Time::from_ns(rtt_ns), value }
    }

    #[test]
    fn probes_each_path_in_turn_picks_the_fastest_and_leaves_a_path_that_stops_answering() {
        let params = MultipathParams { sports: vec![5101, 5102], ..Default::default() };
        let mut p = Multipath::new(params);
        let mut a = Vec::new();
        let mut flows = vec![FlowEntry { flow: 3, left: false, ctx: MpFlow::default() }];
        p.on_join(&mut flows, &mut env(0, &mut a));
        assert_eq!(a, vec![Action::SetSport { flow: 3, sport: 5101 }]);
        let mut f = flows[0].ctx;
        a.clear();
        // One probe at a time: 5101 at 0 µs; 5102 only once 5101 has answered and 10 µs
        // (20 µs over two paths) have passed.
        p.on_event(&ev(Kind::Ack, 0, 0, 0), &mut f, &mut env(0, &mut a));
        p.on_event(&ev(Kind::Ack, 10, 0, 0), &mut f, &mut env(10, &mut a));
        assert_eq!(a, vec![Action::ProbePath { flow: 3, sport: 5101 }]);
        // 5101 answers in 12 µs; the data stays on it (nothing better known). 5102 goes out.
        p.on_event(&ev(Kind::Rtt, 12, 12_000, 5101), &mut f, &mut env(12, &mut a));
        assert_eq!(a[1..], [Action::ProbePath { flow: 3, sport: 5102 }]);
        a.clear();
        // 5102 answers in 2 µs: the data moves to it.
        p.on_event(&ev(Kind::Rtt, 14, 2000, 5102), &mut f, &mut env(14, &mut a));
        assert_eq!(a, vec![Action::SetSport { flow: 3, sport: 5102 }]);
        assert_eq!((f.current, f.rtt_ns), (1, [12_000, 2000, NO_RTT, NO_RTT]));
        // 5102 stops answering. 5101 keeps answering (its answers, and ACKs, run the policy); a
        // 5102 probe unanswered for 100 µs marks it failed and the data moves back.
        let mut lost_at = None;
        let mut moved = Vec::new();
        for t in (20..=200).step_by(10) {
            a.clear();
            p.on_event(&ev(Kind::Ack, t, 0, 0), &mut f, &mut env(t, &mut a));
            if a.contains(&Action::ProbePath { flow: 3, sport: 5101 }) {
                p.on_event(&ev(Kind::Rtt, t + 1, 12_000, 5101), &mut f, &mut env(t + 1, &mut a));
            }
            if a.contains(&Action::ProbePath { flow: 3, sport: 5102 }) && lost_at.is_none() {
                lost_at = Some(t);
            }
            moved.extend(a.iter().filter(|x| matches!(x, Action::SetSport { .. })).copied());
        }
        let lost = lost_at.expect("5102 was probed again");
        assert_eq!(f.failed, 0b10);
        // Detected at the first event at least 100 µs after that probe left.
        assert_eq!(p.first_failure, Some(Time::from_us((lost + 100).div_ceil(10) * 10)));
        assert_eq!((f.current, moved.as_slice()), (0, &[Action::SetSport { flow: 3, sport: 5101 }][..]));
        // It answers again: recovered, and faster, so the data returns.
        a.clear();
        p.on_event(&ev(Kind::Rtt, 150, 2000, 5102), &mut f, &mut env(150, &mut a));
        assert_eq!((f.failed, f.current, p.recoveries), (0, 1, 1));
        assert_eq!(a.last(), Some(&Action::SetSport { flow: 3, sport: 5102 }));
        let r = p.report(&[FlowEntry { flow: 3, left: false, ctx: f }]);
        assert!(r.contains(&("switches", 3.0)) && r.contains(&("path1_rtt_us", 2.0)), "{r:?}");
    }

    #[test]
    fn drawn_ports_are_distinct_per_path_and_fixed_per_flow() {
        let p = Multipath::new(MultipathParams { paths: 4, ..Default::default() });
        let ports: Vec<u16> = (0..4).map(|i| p.sport(77, i)).collect();
        assert!(ports.iter().all(|&s| s >= 49152));
        let mut d = ports.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 4, "{ports:?}");
        assert_eq!(ports, (0..4).map(|i| p.sport(77, i)).collect::<Vec<_>>());
    }
}
