//! Applications: what runs on the hosts and drives the NICs.
//!
//! An application implements [`Application`]. It posts verbs through the world's API
//! ([`crate::world::World::connect_app`], `post_send`, `post_recv`, `destroy_qp`, …), arms its
//! own timers ([`crate::world::World::add_app_timer`]), and is called back with one kind of
//! event, [`AppEvent`]: one of its timers fired, a completion of one of its queue pairs, or a
//! whole message landed in its memory. The NIC knows an application
//! only as an opaque [`Owner`] (application id and the application's own tag) stored on each
//! queue pair.
//!
//! Shipped: [`flows`] (a connection per flow, from a flow-size CDF with Poisson arrivals or from
//! a flow file), [`perftest`] (perftest-like bandwidth and latency tests) and [`sources`] (plain
//! packet sources and sinks for fabric-only studies) and [`yama`] (entities posting work to
//! offload chains, through libYama or not) and [`rpc`] (StaR's RPC and parameter-server
//! workloads over RDMA, StaR or ScalaRDMA) and [`nvmf`] (NVMe-oF writes to a null device). A program using the library adds its own
//! with [`crate::world::World::add_application`].

pub mod flows;
pub mod nvmf;
pub mod perftest;
pub mod rpc;
pub mod sources;
pub mod yama;

pub use flows::{FlowRecord, Flows};
pub use perftest::{Perftest, Perftests};
pub use rpc::Rpcs;
pub use sources::{FlowStats, Source, Sources};
pub use yama::Yama;

pub use crate::nic::qp::Owner;

use crate::nic::verbs::Completion;
use crate::units::Time;
use crate::wire::packet::Packet;
use crate::world::World;

/// Which application: the shipped ones have fixed ids, library-added ones follow.
pub type AppId = u8;
pub const FLOWS: AppId = 0;
pub const PERFTEST: AppId = 1;
pub const SOURCES: AppId = 2;
pub const YAMA: AppId = 3;
pub const RPC: AppId = 4;
pub const NVMF: AppId = 5;
/// The first id of an application added through the library.
pub const FIRST_CUSTOM: AppId = 6;

/// The name an unnamed `[[rpc]]` or `[[nvmf]]` entry `i` goes by in outputs and metric paths
/// (`table` is "rpc" or "nvmf"); validation checks explicit names against it.
pub fn default_name(table: &str, i: usize) -> String {
    format!("{table} {i}")
}

/// What an application is woken for.
#[derive(Clone, Copy, Debug)]
pub enum AppEvent {
    /// Its timer with this tag fired.
    Timer(u32),
    /// A completion of a queue pair it owns with this tag.
    Completion(u32, Completion),
    /// A whole message landed in its memory (through a queue pair with this tag) at `placed`.
    Message(u32, Time),
}

/// An application on the hosts. Every method has a do-nothing default.
pub trait Application {
    fn on_timer(&mut self, _w: &mut World, _tag: u32) {}
    fn on_completion(&mut self, _w: &mut World, _tag: u32, _c: Completion) {}
    fn on_message(&mut self, _w: &mut World, _tag: u32, _placed: Time) {}
    /// A raw (non-RDMA) packet it sent reached its destination host at `now` (only the packet
    /// sources send raw packets; a sink needs nothing of the world, so this is the cheap path).
    fn on_packet(&mut self, _now: Time, _pkt: &Packet) {}
    /// The run ended (close measurement windows).
    fn on_end(&mut self, _w: &World) {}

    /// Routes an event to the method above.
    fn handle(&mut self, w: &mut World, ev: AppEvent) {
        match ev {
            AppEvent::Timer(tag) => self.on_timer(w, tag),
            AppEvent::Completion(tag, c) => self.on_completion(w, tag, c),
            AppEvent::Message(tag, placed) => self.on_message(w, tag, placed),
        }
    }
}

/// The applications of a world. The shipped ones are fields, so outputs read them directly.
#[derive(Default)]
pub struct Apps {
    pub flows: Flows,
    pub perftests: Perftests,
    pub sources: Sources,
    pub yama: Yama,
    pub rpc: Rpcs,
    pub nvmf: nvmf::Nvmf,
    /// Added through the library; `None` while one is being called.
    pub(crate) custom: Vec<Option<Box<dyn Application + Send>>>,
}
