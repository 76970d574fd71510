//! Multipath monitoring and path selection on SCR (paper A.7, after MP-RDMA and PLB).
//!
//! Each flow has up to [`MAX_PATHS`] candidate paths, each named by a UDP source port (ECMP
//! hashes the port, so a port is a path): the ports given, or ports drawn from the flow id
//! ("a random generation approach"). The policy probes one path at a time, in turn, every
//! `interval` / paths, with an out-of-band probe on that port ([`Action::ProbePath`]); the
//! peer answers, and the answer comes back as an RTT event carrying the port. A probe
//! unanswered for `timeout` (A.7: 100 µs) marks its path failed; a later answer on it marks it
//! recovered. Only one probe is out at a time (a dead path's holds the others back for the
//! timeout): answers arriving together would fold into one RTT event (its queue keeps the
//! latest), losing one; if that happens anyway, no outstanding probe is held against its path.
//! The flow's data is pinned to the live path with the lowest RTT (`Action::SetSport`, as
//! `mlx5dv_modify_qp_udp_sport` does per QP), moving only when another path is better by more
//! than `hysteresis` or its own has failed.
//!
//! The policy runs on the flow's ACK events, probe answers and its own wake-ups
//! ([`Action::Wake`], one per probe round), so probing and timeouts go on when the data's own
//! path has failed and its ACKs stopped. Times are kept as wrapping 32-bit nanoseconds in the
//! 48-byte context, good for gaps below 4.29 s.

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
        if self.interval.0 < 1000 * n as u64 {
            return Err(("interval", format!("at least 1 ns per path, got {}", self.interval)));
        }
        if self.timeout.0 < 1000 || self.timeout.0 >= (u32::MAX as u64) * 1000 {
            return Err(("timeout", format!("expected 1 ns to 4.29 s, got {}", self.timeout)));
        }
        let mut seen = self.sports.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != self.sports.len() {
            return Err(("sports", "each port names one path; a port is listed twice".into()));
        }
        Ok(())
    }
}

const NO_RTT: u32 = u32::MAX;

/// The per-flow context (48 bytes with padding).
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
            None => Self::drawn(flow, i),
        }
    }

    /// The `i`-th of a flow's drawn ports: ports in the dynamic range drawn from the flow id,
    /// redrawn past any of its earlier paths' ports, so the paths' ports differ.
    fn drawn(flow: u32, i: usize) -> u16 {
        let mut ports = [0u16; MAX_PATHS];
        for j in 0..=i.min(MAX_PATHS - 1) {
            ports[j] = (0u64..)
                .map(|attempt| 49152 + (crate::sim::rng::mix64(((flow as u64) << 16) | (attempt << 3) | j as u64) % 16384) as u16)
                .find(|s| !ports[..j].contains(s))
                .expect("16,384 ports for at most 4 paths");
        }
        ports[i.min(MAX_PATHS - 1)]
    }

    fn ns(t: Time) -> u32 {
        t.as_ns() as u32
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
        matches!(kind, Kind::Ack | Kind::Rtt | Kind::Timer)
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
        if ev.kind == Kind::Rtt {
            if let Some(i) = (0..self.n).find(|&i| self.sport(ev.flow, i) as u32 == ev.value) {
                // A probe's answer: its path's RTT, and a recovery if it had failed.
                f.rtt_ns[i] = ev.rtt.as_ns().min(NO_RTT as u64 - 1) as u32;
                f.outstanding &= !(1 << i);
                if f.failed & (1 << i) != 0 {
                    f.failed &= !(1 << i);
                    self.recoveries += 1;
                    self.first_recovery.get_or_insert(env.now);
                }
            }
            if ev.count > 1 {
                // Answers that arrived together folded into this one: any outstanding probe may
                // have been answered, so none of them is held against its path this time.
                f.outstanding = 0;
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
        // Every interval / paths: the next path's probe, once the last one is answered or timed
        // out (one at a time: two answers arriving together would fold into one RTT event and
        // one of them would be lost), and a wake-up for the next round, so probing and timeouts
        // go on when no packet comes.
        if env.now >= f.next_probe {
            let step = Time(self.p.interval.0 / self.n as u64);
            if f.outstanding == 0 {
                let i = f.turn as usize % self.n;
                f.outstanding |= 1 << i;
                f.sent_ns[i] = now;
                f.turn = ((i + 1) % self.n) as u8;
                env.actions.push(Action::ProbePath { flow: ev.flow, sport: self.sport(ev.flow, i) });
            }
            f.next_probe = env.now + step;
            env.actions.push(Action::Wake { flow: ev.flow, after: step });
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
        // A figure of something that has not happened (no failure yet, a path never answered)
        // is left out, so a claim about it reads as missing rather than as a number.
        let us = |t: Time| t.0 as f64 / 1e6;
        let mut out = vec![("switches", self.switches as f64), ("failures", self.failures as f64), ("recoveries", self.recoveries as f64)];
        out.extend(self.first_failure.map(|t| ("first_failure_us", us(t))));
        out.extend(self.first_recovery.map(|t| ("first_recovery_us", us(t))));
        out.push(("current_path", live.iter().map(|f| f.ctx.current as f64).sum::<f64>() / live.len().max(1) as f64));
        for (i, name) in NAMES.iter().enumerate().take(self.n) {
            let known: Vec<f64> = live.iter().filter(|f| f.ctx.rtt_ns[i] != NO_RTT).map(|f| f.ctx.rtt_ns[i] as f64 / 1e3).collect();
            if !known.is_empty() {
                out.push((name, known.iter().sum::<f64>() / known.len() as f64));
            }
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

    fn env(now_us: u64, actions: &mut Vec<Action>) -> Env<'_> {
        super::super::test_env(Time::from_us(now_us), actions)
    }

    fn ev(kind: Kind, at_us: u64, rtt_ns: u64, value: u32) -> ScrEvent {
        let at = Time::from_us(at_us);
        ScrEvent { kind, flow: 3, at, first_at: at, bytes: 0, count: 1, rtt: Time::from_ns(rtt_ns), value, aux: 0 }
    }

    /// Runs the policy for one flow from time 0 to `until_us`: its wake-ups, the answers to its
    /// probes (`answer(port, at_ns)`: the RTT, or None if lost) and, if `acks`, an ACK every
    /// 5 µs. Returns each move of the data (time in ns, port).
    fn drive(p: &mut Multipath, f: &mut MpFlow, until_us: u64, answer: &dyn Fn(u16, u64) -> Option<u64>, acks: bool) -> Vec<(u64, u16)> {
        let mut pending: Vec<(u64, ScrEvent)> = vec![(0, ev(Kind::Timer, 0, 0, 0))];
        if acks {
            pending.extend((0..until_us / 5).map(|k| (k * 5000, ev(Kind::Ack, k * 5, 0, 0))));
        }
        let mut moves = Vec::new();
        while let Some(k) = (0..pending.len()).min_by_key(|&k| (pending[k].0, k)) {
            let (t, mut e) = pending.remove(k);
            if t > until_us * 1000 {
                break;
            }
            e.at = Time::from_ns(t);
            let mut a = Vec::new();
            p.on_event(&e, f, &mut super::super::test_env(Time::from_ns(t), &mut a));
            for x in a {
                match x {
                    Action::ProbePath { sport, .. } => {
                        if let Some(rtt) = answer(sport, t) {
                            pending.push((t + rtt, ScrEvent { rtt: Time::from_ns(rtt), ..ev(Kind::Rtt, 0, 0, sport as u32) }));
                        }
                    }
                    Action::Wake { after, .. } => pending.push((t + after.as_ns(), ev(Kind::Timer, 0, 0, 0))),
                    Action::SetSport { sport, .. } => moves.push((t, sport)),
                    _ => {}
                }
            }
        }
        moves
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
        // 5101 answers in 12 µs; 5102 in 2 µs until 300 µs, then never again (its path failed,
        // and with it the data's ACKs: no ACK events at all), and again from 600 µs.
        let answer = |port: u16, at: u64| match port {
            5101 => Some(12_000),
            _ if !(300_000..600_000).contains(&at) => Some(2000),
            _ => None,
        };
        let moves = drive(&mut p, &mut f, 900, &answer, false);
        // A round every 10 µs, one probe out at a time: 5101 at 0 (answered at 12 µs), so 5102
        // waits for the round at 20 µs; answered at 22 µs, faster: the data moves.
        assert_eq!(moves[0], (22_000, 5102));
        // Then 5102 goes out every 30 µs (20, 50, 80, ...): the first lost leaves at 320 µs;
        // its timeout is seen at the round 100 µs later, and the data moves back to 5101.
        assert_eq!(p.first_failure, Some(Time::from_us(420)));
        assert_eq!(moves[1], (420_000, 5101));
        // Probes stay one at a time: a dead path costs a timeout per round, so the first probe
        // after 600 µs goes out within a timeout and a round; it is answered: recovered, and
        // faster, so the data returns.
        assert_eq!(p.recoveries, 1);
        let back = moves[2].0;
        assert!((602_000..=602_000 + 100_000 + 30_000).contains(&back), "{moves:?}");
        assert_eq!(moves.len(), 3);
        assert_eq!((p.failures, f.current, f.failed), (1, 1, 0));
        let r = p.report(&[FlowEntry { flow: 3, left: false, ctx: f }]);
        assert!(r.contains(&("switches", 3.0)) && r.contains(&("path1_rtt_us", 2.0)) && r.contains(&("rtt_spread_us", 10.0)), "{r:?}");
    }

    #[test]
    fn answers_that_fold_together_do_not_fail_a_path() {
        // 5101's probe is out; an RTT event that stands for two (count 2, carrying another
        // port's sample) may have folded 5101's answer in: its probe must not time out for it.
        let mut p = Multipath::new(MultipathParams { sports: vec![5101, 5102], ..Default::default() });
        let mut f = MpFlow { rtt_ns: [NO_RTT; MAX_PATHS], ..Default::default() };
        let mut a = Vec::new();
        p.on_event(&ev(Kind::Timer, 0, 0, 0), &mut f, &mut env(0, &mut a));
        assert_eq!(f.outstanding, 0b01);
        let folded = ScrEvent { count: 2, ..ev(Kind::Rtt, 1, 1000, 5102) };
        p.on_event(&folded, &mut f, &mut env(1, &mut a));
        assert_eq!(f.outstanding, 0);
        p.on_event(&ev(Kind::Timer, 200, 0, 0), &mut f, &mut env(200, &mut a));
        assert_eq!((f.failed, p.failures), (0, 0));
        // Unfolded, the same silence is a failure.
        let mut g = MpFlow { rtt_ns: [NO_RTT; MAX_PATHS], ..Default::default() };
        p.on_event(&ev(Kind::Timer, 0, 0, 0), &mut g, &mut env(0, &mut a));
        p.on_event(&ev(Kind::Timer, 200, 0, 0), &mut g, &mut env(200, &mut a));
        assert_eq!(g.failed, 0b01);
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
