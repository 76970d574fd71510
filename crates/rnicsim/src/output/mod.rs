//! Run outputs: what is recorded during a run ([`Recorder`]), the tables and summary derived
//! from a finished world ([`tables`], [`Summary`]), and the directory they are written to
//! atomically ([`RunDir`]). The schema is documented in `docs/outputs.md`.

mod run_dir;
mod summary;
pub mod tables;

pub use run_dir::RunDir;
pub use summary::{Summary, TrafficSummary};

use crate::units::Time;

/// Time series and event logs filled while the simulation runs (columns, appended in place).
#[derive(Default)]
pub struct Recorder {
    pfc_enabled: bool,
    pub pfc: PfcLog,
    pub queues: QueueLog,
}

/// Every PFC frame received, at the port it paused or resumed.
#[derive(Default)]
pub struct PfcLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub iface: Vec<u32>,
    pub class: Vec<u8>,
    pub quanta: Vec<u16>,
}

/// Periodic samples of every port's queue.
#[derive(Default)]
pub struct QueueLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub iface: Vec<u32>,
    pub port: Vec<u32>,
    pub bytes: Vec<u64>,
    pub paused: Vec<bool>,
}

impl Recorder {
    pub fn new(pfc_events: bool) -> Recorder {
        Recorder { pfc_enabled: pfc_events, ..Default::default() }
    }

    #[inline]
    pub fn pfc_event(&mut self, now: Time, node: u32, iface: u32, class: u8, quanta: u16) {
        if self.pfc_enabled {
            let l = &mut self.pfc;
            l.time.push(now.0);
            l.node.push(node);
            l.iface.push(iface);
            l.class.push(class);
            l.quanta.push(quanta);
        }
    }

    pub fn queue_sample(&mut self, now: Time, node: u32, iface: u32, port: u32, bytes: u64, paused: bool) {
        let q = &mut self.queues;
        q.time.push(now.0);
        q.node.push(node);
        q.iface.push(iface);
        q.port.push(port);
        q.bytes.push(bytes);
        q.paused.push(paused);
    }
}
