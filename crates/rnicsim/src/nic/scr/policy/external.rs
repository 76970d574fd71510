//! A policy written outside the crate (`[nic.scr.policy.external]`): its decisions come from an
//! [`ExternalPolicy`] object handed to the world after it is built (`World::set_scr_policy`),
//! e.g. a Python class for prototyping (the `rnicsim` package's `scr_policy=`). The framework
//! around it is SCR's own: the same collectors, coalescing, threads, cost model and latencies;
//! the scenario states the policy's costs (`cycles` per handled event, `set_cycles` per action
//! of node-level work), since the framework cannot time foreign code as the NIC's cores would.
//! Coalescing keeps the calls few: one per handled (possibly coalesced) event.

use super::{Action, Env, FlowEntry, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use crate::units::Time;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalParams {
    /// The event kinds handed to the policy.
    #[serde(default = "default_kinds")]
    pub kinds: Vec<Kind>,
    /// Core cycles per handled event, and per action of node-level work (joins, leaves).
    #[serde(default = "default_cycles")]
    pub cycles: u32,
    #[serde(default = "default_set_cycles")]
    pub set_cycles: u32,
}

fn default_kinds() -> Vec<Kind> {
    vec![Kind::Tx]
}
fn default_cycles() -> u32 {
    150
}
fn default_set_cycles() -> u32 {
    20
}

impl Default for ExternalParams {
    fn default() -> Self {
        ExternalParams { kinds: default_kinds(), cycles: default_cycles(), set_cycles: default_set_cycles() }
    }
}

/// What an outside policy answers. `flows` lists the NIC's live flows (queue pairs), in the
/// order they joined; each call appends its decisions to `actions`. Node-level events (the
/// telemetry's `pcie` and `port`, if `kinds` lists them) come to `on_event` too, with the flow
/// [`crate::nic::scr::event::NODE_FLOW`].
pub trait ExternalPolicy: Send {
    fn on_join(&mut self, _now: Time, _line_bps: u64, _flows: &[u32], _actions: &mut Vec<Action>) {}
    fn on_leave(&mut self, _now: Time, _line_bps: u64, _flow: u32, _flows: &[u32], _actions: &mut Vec<Action>) {}
    fn on_event(&mut self, now: Time, line_bps: u64, ev: &ScrEvent, actions: &mut Vec<Action>);
}

/// Stands in until the world is handed the real one: decides nothing.
struct Unset;

impl ExternalPolicy for Unset {
    fn on_event(&mut self, _now: Time, _line_bps: u64, _ev: &ScrEvent, _actions: &mut Vec<Action>) {}
}

pub struct External {
    pub p: ExternalParams,
    pub inner: Box<dyn ExternalPolicy>,
    /// Whether a real policy was handed over (a run without one is refused).
    pub set: bool,
}

impl External {
    pub fn new(p: ExternalParams) -> External {
        External { p, inner: Box::new(Unset), set: false }
    }
}

fn live(flows: &[FlowEntry<()>]) -> Vec<u32> {
    flows.iter().filter(|f| !f.left).map(|f| f.flow).collect()
}

impl Policy for External {
    type Flow = ();
    fn name(&self) -> &'static str {
        "external"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        self.p.kinds.contains(&kind)
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.p.cycles
    }
    fn on_join(&mut self, flows: &mut [FlowEntry<()>], env: &mut Env) -> u32 {
        let before = env.actions.len();
        self.inner.on_join(env.now, env.line_rate.0, &live(flows), env.actions);
        (env.actions.len() - before) as u32 * self.p.set_cycles
    }
    fn on_leave(&mut self, slot: usize, flows: &mut [FlowEntry<()>], env: &mut Env) -> u32 {
        let before = env.actions.len();
        self.inner.on_leave(env.now, env.line_rate.0, flows[slot].flow, &live(flows), env.actions);
        (env.actions.len() - before) as u32 * self.p.set_cycles
    }
    fn on_event(&mut self, ev: &ScrEvent, _flow: &mut (), env: &mut Env) -> Verdict {
        self.inner.on_event(env.now, env.line_rate.0, ev, env.actions);
        Verdict::Adjusting
    }
    fn on_node_event(&mut self, ev: &ScrEvent, _flows: &mut [FlowEntry<()>], env: &mut Env) {
        self.inner.on_event(env.now, env.line_rate.0, ev, env.actions);
    }
}
