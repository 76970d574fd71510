//! Static allocation (paper §5.1): every flow's dequeue rate is the line rate over the number
//! of flows, never below a floor (§6.2: rate limiting far below 1 Gbps costs utilization on the
//! NIC, so Fig. 12 bounds it at 1 Gbps). Recomputed for every flow when one joins or leaves.

use super::{bps, mbps, Action, Env, FlowEntry, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::BitsPerSec;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticParams {
    /// No flow is set below this rate ("0bps": no floor, Fig. 12's Static-NoBound).
    #[serde(default = "default_min_rate")]
    pub min_rate: BitsPerSec,
    /// Core cycles per handled TX event, and per rate set on a join or leave.
    #[serde(default = "default_cycles")]
    pub cycles: u32,
    #[serde(default = "default_set_cycles")]
    pub set_cycles: u32,
}

fn default_min_rate() -> BitsPerSec {
    BitsPerSec::gbps(1)
}
fn default_cycles() -> u32 {
    150
}
fn default_set_cycles() -> u32 {
    20
}

impl Default for StaticParams {
    fn default() -> Self {
        StaticParams { min_rate: default_min_rate(), cycles: default_cycles(), set_cycles: default_set_cycles() }
    }
}

pub struct StaticShare(pub StaticParams);

/// The per-flow context: the rate installed.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaticFlow {
    pub rate_mbps: u32,
}

impl StaticShare {
    /// Sets every live flow to max(⌈line / n⌉, floor): rounded up, since n shares rounded down
    /// to whole Mbps leave up to n Mbps of the port idle (150 flows on 1 Gbps got 6 Mbps each,
    /// 90% of the line), where n rounded up ask at most n Mbps more than the port, which its
    /// round robin shares out.
    fn share(&self, flows: &mut [FlowEntry<StaticFlow>], env: &mut Env) -> u32 {
        let n = flows.iter().filter(|f| !f.left).count().max(1) as u32;
        let share = mbps(env.line_rate).div_ceil(n).max(mbps(self.0.min_rate)).max(1);
        let mut sets = 0;
        for f in flows.iter_mut().filter(|f| !f.left && f.ctx.rate_mbps != share) {
            f.ctx.rate_mbps = share;
            env.actions.push(Action::SetRate { flow: f.flow, bps: bps(share) });
            sets += 1;
        }
        sets * self.0.set_cycles
    }
}

impl Policy for StaticShare {
    type Flow = StaticFlow;
    fn name(&self) -> &'static str {
        "static"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        kind == Kind::Tx
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.0.cycles
    }
    fn on_join(&mut self, flows: &mut [FlowEntry<StaticFlow>], env: &mut Env) -> u32 {
        self.share(flows, env)
    }
    fn on_leave(&mut self, _slot: usize, flows: &mut [FlowEntry<StaticFlow>], env: &mut Env) -> u32 {
        self.share(flows, env)
    }
    fn on_event(&mut self, _ev: &ScrEvent, _flow: &mut StaticFlow, _env: &mut Env) -> Verdict {
        Verdict::Stable
    }
}
