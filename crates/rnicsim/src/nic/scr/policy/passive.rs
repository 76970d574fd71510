//! The passive policy: SCR collects and handles TX events (so event rates and coalescing
//! granularity are measured, paper §6.1) but never acts; the NIC's own QP scheduler decides
//! (§5.1's "default RNIC QP scheduler").

use super::{Env, Policy, Verdict};
use crate::nic::scr::event::{Kind, ScrEvent};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassiveParams {
    /// Core cycles per handled event (reading the event and counting it).
    #[serde(default = "default_cycles")]
    pub cycles: u32,
}

fn default_cycles() -> u32 {
    100
}

impl Default for PassiveParams {
    fn default() -> Self {
        PassiveParams { cycles: default_cycles() }
    }
}

pub struct Passive(pub PassiveParams);

impl Policy for Passive {
    type Flow = ();
    fn name(&self) -> &'static str {
        "passive"
    }
    fn subscribes(&self, kind: Kind) -> bool {
        kind == Kind::Tx
    }
    fn cycles(&self, _ev: &ScrEvent) -> u32 {
        self.0.cycles
    }
    fn on_event(&mut self, _ev: &ScrEvent, _flow: &mut (), _env: &mut Env) -> Verdict {
        Verdict::Stable
    }
}
