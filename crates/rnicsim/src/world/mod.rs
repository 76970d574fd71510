//! The simulated world: the components, and the run loop that wakes them.
//!
//! Every component owns its timer slots (see [`crate::sim::TimerQueue`]); [`Wake`] names who is
//! woken. The loop pops the earliest slot, dispatches on its tag (the handler may re-arm it) and
//! repeats until the scenario's duration. The world holds wiring, not mechanism: `nic.rs` calls
//! the NIC transport ([`crate::nic::transport`]) and carries out its outbox, and feeds the host
//! port from the QP scheduler; `fabric.rs` moves packets between ports, links and switches and
//! carries out the switches' decisions; `apps.rs` routes events to the applications
//! ([`crate::host::apps`]) and gives them their API; `hosts.rs` wakes applications waiting for
//! room and hands raw packets to their sink; `build.rs` turns a scenario into a world.

mod apps;
mod build;
mod fabric;
mod hosts;
mod nic;
mod rx_buffer;
mod estimate;
mod scr;
mod stall;
mod star;
mod state_cache;

pub use crate::host::apps::{FlowRecord, Perftest};
pub use estimate::Estimate;
pub use stall::{Stall, StuckPort};

use crate::fabric::link::Link;
use crate::fabric::paths::PathTable;
use crate::fabric::switch::Switch;
use crate::wire::packet::PacketPool;
use crate::fabric::port::Port;
use crate::fabric::routing::{Adjacent, Routes};
use crate::host::apps::{AppEvent, AppId, Apps};
use crate::output::Recorder;
use crate::scenario::schema::LinkEventSpec;
use crate::sim::rng::Rng;
use crate::sim::{TimerId, TimerQueue};
use crate::units::Time;

/// Who a timer wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A port finished serializing with more waiting, or a pause on it expired: start the next.
    Port(u32),
    /// The oldest packet on a link arrives.
    Link(u32),
    /// Re-send PFC PAUSE for the classes still congested at a switch port.
    PfcRefresh(u32),
    /// Sample queue lengths.
    Sampler,
    /// A scheduled link state change.
    LinkEvent(u32),
    /// Recompute routes after link changes.
    Reroute,
    /// A queue pair's retransmission or congestion-control timer.
    Qp(u32),
    /// An application's timer, with the application's own tag.
    App { app: AppId, tag: u32 },
    /// Sample queue pairs' rates.
    RateSampler,
    /// A switch's load-balancer timer.
    Lb(u32),
    /// A host's SCR processor is due: a decision of it may take effect.
    Scr(u32),
    /// A host's SCR telemetry samples, or a ping-pong of it comes back.
    ScrTelemetry(u32),
    /// `nic.scr.warmup` is over: the SCR counters' window opens.
    ScrWarmup,
    /// Connection state a host's NIC fetched has arrived: packets held for it go on.
    StateCache(u32),
    /// A StaR connection end's timer.
    Star(u32),
    /// A host's receive buffer drained to its resume mark, or its PAUSE needs a refresh.
    RxBuffer(u32),
}

pub(crate) struct HostState {
    pub port: u32,
    /// Application timers to fire when the port next sends (room in its queue).
    pub room_waiters: Vec<TimerId>,
    /// Raw packets (`[[traffic]]`) queued at the port, per class: the sources' own queue,
    /// apart from the RDMA transmit pipeline that shares the port's class queues.
    pub raw_queued: [u32; 8],
}

/// What a node is, for dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NodeRole {
    Host(u32),
    Switch(u32),
}

/// Totals of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    pub events: u64,
    /// Packets carried across one link.
    pub packet_hops: u64,
    /// Data packets handed to host ports: raw packets, RDMA requests (WRITE, SEND, READ
    /// request) and READ responses, first sends and resends alike (not ACKs, NAKs, CNPs).
    pub packets_sent: u64,
    /// Of those, the ones that reached their destination host.
    pub packets_delivered: u64,
    /// When the last of them arrived (the stall detector's clock).
    pub last_delivery: Time,
    /// Packets a switch had no route for.
    pub drops_unroutable: u64,
    /// Packets a switch deflected off their chosen port (`switch.deflection`), and packets that
    /// ran out of time to live.
    pub deflected: u64,
    pub drops_ttl: u64,
    /// Packets that reached a host other than their destination (hosts do not forward).
    pub drops_misdelivered: u64,
    /// PFC frames (PAUSE, RESUME and refreshes) switches sent, and those that reached the port
    /// they were for (a frame can be lost on a failing link or still be in flight at the end).
    pub pfc_frames_sent: u64,
    pub pfc_frames_received: u64,
    /// The most packets alive at once.
    pub peak_packets: u64,
    pub flows_completed: u64,
    pub flows_failed: u64,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    Finished,
    Interrupted,
    /// `stop_on_stall` ended the run when it stalled (its end is moved there; outputs hold).
    Stalled,
}

/// A snapshot for progress displays.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub now: Time,
    pub end: Time,
    pub events: u64,
    /// Since when the run has been stalled, once the stall detector sees it (see [`Stall`]).
    pub stalled_since: Option<Time>,
    /// Flows finished (completed or failed) and flows in all, when the run ends with its
    /// listed flows (`stop_when_flows_done` with flow files and no generators: an ns-3
    /// config's run, whose `duration` is only a safety limit).
    pub flows: Option<(u64, u64)>,
}

pub struct World {
    pub now: Time,
    pub end: Time,
    pub seed: u64,
    pub(crate) timers: TimerQueue<Wake>,
    pub(crate) pool: PacketPool,
    pub ports: Vec<Port>,
    pub links: Vec<Link>,
    pub(crate) link_timers: Vec<TimerId>,
    pub(crate) link_rngs: Vec<Option<Rng>>,
    pub(crate) roles: Vec<NodeRole>,
    pub(crate) switches: Vec<Switch>,
    pub(crate) hosts: Vec<HostState>,
    pub(crate) adjacency: Vec<Vec<Adjacent>>,
    pub(crate) is_host: Vec<bool>,
    pub(crate) host_nodes: Vec<u32>,
    pub(crate) routes: Routes,
    /// Who picks a packet's carried path (`routing.path_choice`), and each source switch's
    /// own random stream for it (by switch index: one switch's traffic never shifts another's
    /// draws).
    pub(crate) path_choice: crate::scenario::schema::PathChoice,
    pub(crate) path_rngs: Vec<crate::sim::rng::Rng>,
    /// Carried paths (`routing.k_shortest_paths`); `None` when packets follow the routes only.
    pub(crate) paths: Option<PathTable>,
    pub(crate) pfc_quanta: u16,
    /// `switch.pfc.pause_time` (each port's quanta at its rate).
    pub(crate) pfc_pause_time: Option<Time>,
    /// `switch.pfc.resend = "until_resume"`: a PAUSE received holds until its RESUME, whatever
    /// its quanta (HPCC's ns-3 NIC, `QbbNetDevice::Receive`).
    pub(crate) pfc_held: bool,
    pub(crate) link_events: Vec<LinkEventSpec>,
    /// By link (its two nodes, the lower first): who holds it down, the scenario (1) and
    /// `[failures]` (2).
    pub(crate) link_holds: std::collections::BTreeMap<[u32; 2], u8>,
    pub(crate) reroute_timer: TimerId,
    pub(crate) reroute_at: Vec<Time>,
    /// Whether each port's link was up when routes were last computed: what carried-path
    /// choices know of failures (they learn of them after `recompute_delay`, as the routes do).
    pub(crate) routed_up: Vec<bool>,
    pub(crate) recompute_delay: Time,
    pub(crate) sampler: Option<(TimerId, Time)>,
    pub record: Recorder,
    pub stats: RunStats,
    // ---- RDMA NICs ----
    pub nic_spec: crate::nic::NicSpec,
    pub nics: Vec<crate::nic::Nic>,
    pub qps: crate::nic::qp_table::QpTable,
    /// StaR connection ends ([`crate::nic::star`]).
    pub star: crate::nic::star::StarEndpoints,
    /// Subscribers to the NICs' transport events besides congestion control.
    pub tap: crate::nic::events::EventTap,
    /// What the transport asked for and the world has not done yet, and reusable buffers for it.
    pub(crate) outbox: crate::nic::transport::Outbox,
    pub(crate) outbox_spare: Vec<Vec<crate::nic::transport::Action>>,
    pub(crate) int_enabled: bool,
    pub(crate) rtt_cache: std::collections::HashMap<(u32, u32), Time>,
    /// Per host: (lkey, rkey) of the application region covering its memory.
    pub(crate) app_mr: Vec<(u32, u32)>,
    /// The applications on the hosts, and which are being called now (by id) with the events
    /// that wait for them.
    pub apps: Apps,
    pub(crate) apps_busy: [bool; 256],
    pub(crate) apps_pending: std::collections::VecDeque<(AppId, AppEvent)>,
    pub(crate) rate_sampler: Option<(TimerId, Time)>,
    /// Ports whose transmitted packets are captured, and the capture.
    pub(crate) capture_ports: Vec<bool>,
    pub capture: Vec<crate::wire::pcap::Captured>,
    /// The stall detector's quiet time, and whether a stall ends the run (`stop_on_stall`).
    pub(crate) stall_quiet: Time,
    /// The last progress report that found no work pending: quiet before it is not a stall.
    pub(crate) idle_seen: Time,
    pub stop_on_stall: bool,
    /// End the run once every `[[flows]]` flow has finished (`stop_when_flows_done`).
    pub stop_when_flows_done: bool,
    pub(crate) stopped_at: Option<Time>,
    finalized: bool,
}

/// Bytes of a PFC frame on the wire (a minimum Ethernet frame).
pub const PFC_FRAME_BYTES: u32 = 64;

impl World {
    /// Runs to the scenario's end. `progress` is called every 2^16 events and every quarter of
    /// the stall detector's quiet time; returning false stops the run early
    /// ([`RunEnd::Interrupted`]). With `stop_on_stall`, a stall ends it ([`RunEnd::Stalled`]).
    pub fn run(&mut self, mut progress: impl FnMut(Progress) -> bool) -> RunEnd {
        // Progress is also reported every quarter of the stall detector's quiet time of
        // simulated time, events or not, so a run is seen stalling while it stalls.
        let step = Time((self.stall_quiet.0 / 4).max(1));
        // ns-3 (ConWeave's fork, `stop_simulation_middle`) looks whether the flows are done
        // every 100 µs from FLOWGEN_START_TIME (whole seconds in its configs): at every multiple
        // of 100 µs here, and reports land on that grid too.
        let done_grid = Time::from_us(100);
        let next_done_check = |now: Time| Time((now.0 / done_grid.0 + 1) * done_grid.0);
        let mut done_check = if self.stop_when_flows_done { next_done_check(self.now) } else { Time::MAX };
        let mut next_report = (self.now + step).min(done_check);
        loop {
            let limit = next_report.min(self.end);
            match self.timers.pop_until(limit) {
                Some((t, wake)) => {
                    self.now = t;
                    self.dispatch(wake);
                    self.stats.events += 1;
                    if self.stats.events & 0xffff != 0 && t < next_report {
                        continue;
                    }
                }
                // Nothing happens before the next report: the clock moves there anyway.
                None if limit < self.end => self.now = limit,
                None => break,
            }
            self.note_idle();
            let p = self.progress();
            if !progress(p) {
                self.scr_catch_up();
                return RunEnd::Interrupted;
            }
            if self.now >= done_check {
                if self.apps.flows.all_done(self.now) {
                    self.end = self.now;
                    break;
                }
                done_check = next_done_check(self.now);
            }
            next_report = (self.now + step).min(done_check);
            if self.stop_on_stall && p.stalled_since.is_some() {
                self.end = self.now;
                self.stopped_at = Some(self.now);
                self.finalize();
                return RunEnd::Stalled;
            }
        }
        self.now = self.end;
        self.finalize();
        progress(self.progress());
        RunEnd::Finished
    }

    #[inline]
    fn dispatch(&mut self, wake: Wake) {
        match wake {
            Wake::Port(p) => self.port_start(p),
            Wake::Link(l) => self.link_fire(l),
            Wake::PfcRefresh(p) => self.pfc_refresh(p),
            Wake::Sampler => self.sample(),
            Wake::LinkEvent(i) => self.link_event(i),
            Wake::Reroute => self.reroute(),
            Wake::Qp(q) => self.qp_timer(q),
            Wake::App { app, tag } => self.app_event(app, AppEvent::Timer(tag)),
            Wake::RateSampler => self.sample_rates(),
            Wake::Lb(s) => self.lb_timer(s),
            Wake::Scr(host) => self.scr_due(host),
            Wake::ScrTelemetry(host) => self.scr_telemetry(host),
            Wake::ScrWarmup => self.scr_warmup_over(),
            Wake::StateCache(host) => self.state_timer(host),
            Wake::Star(ep) => self.star_timer(ep),
            Wake::RxBuffer(host) => self.rx_timer(host),
        }
    }

    pub fn progress(&self) -> Progress {
        let listed = self.apps.flows.listed() as u64;
        let flows = (self.stop_when_flows_done && listed > 0 && self.apps.flows.gens.is_empty()).then(|| (self.stats.flows_completed + self.stats.flows_failed, listed));
        Progress { now: self.now, end: self.end, events: self.stats.events, stalled_since: self.stalled_since(), flows }
    }

    /// Closes open intervals (pause times) at the end of the run.
    fn finalize(&mut self) {
        if self.finalized {
            return;
        }
        self.finalized = true;
        let end = self.end;
        for p in &mut self.ports {
            let beyond = p.paused_beyond(end);
            p.counters.paused_rx_ps = p.counters.paused_rx_ps.saturating_sub(beyond);
        }
        for p in 0..self.ports.len() as u32 {
            let open = self.pause_asserted_open(p);
            self.ports[p as usize].counters.paused_tx_ps += open;
        }
        self.stats.peak_packets = self.pool.capacity() as u64;
        self.scr_catch_up();
        let mut apps = std::mem::take(&mut self.apps);
        use crate::host::apps::Application;
        apps.flows.on_end(self);
        apps.perftests.on_end(self);
        apps.sources.on_end(self);
        apps.yama.on_end(self);
        for a in apps.custom.iter_mut().flatten() {
            a.on_end(self);
        }
        self.apps = apps;
    }

    /// Bytes of the routing tables ([`crate::fabric::routing`]).
    pub fn routes_memory_bytes(&self) -> usize {
        self.routes.memory_bytes()
    }

    /// Number of switches.
    pub fn switch_count(&self) -> usize {
        self.switches.len()
    }

    /// Number of hosts.
    pub fn host_count(&self) -> usize {
        self.host_nodes.len()
    }

    /// Node id of each host.
    pub fn host_nodes(&self) -> &[u32] {
        &self.host_nodes
    }

    /// Whether node `n` is a switch.
    pub fn is_switch(&self, n: u32) -> bool {
        matches!(self.roles[n as usize], NodeRole::Switch(_))
    }

    /// Packets alive now (queued, serializing or in flight).
    pub fn packets_alive(&self) -> usize {
        self.pool.live()
    }
}

impl World {
    /// Timer slots allocated (the event queue never holds more entries than this).
    pub fn timers_slots(&self) -> usize {
        self.timers.slots()
    }
}
