//! Turning a validated scenario and its topology into a ready-to-run [`World`].

use crate::nic::state_cache::{NicStateCache, WhenFull};
use super::{HostState, NodeRole, RunStats, Wake, World};
use crate::fabric::buffer::{PfcSettings, SharedBuffer};
use crate::fabric::paths::PathTable;
use crate::fabric::switch::Switch;
use crate::fabric::lb::{EcmpHasher, LoadBalancer};
use crate::fabric::link::Link;
use std::collections::HashMap;
use crate::wire::packet::PacketPool;
use crate::fabric::port::{ClassService, Port, CLASSES};
use crate::fabric::routing::{Adjacent, Routes};
use crate::fabric::topology::{NodeKind, Topology};
use crate::host::apps::{Flows, Perftests, Rpcs, Sources, Yama};
use crate::nic::verbs::Access;
use crate::nic::Nic;
use crate::output::Recorder;
use crate::scenario::schema::ServiceKind;
use crate::scenario::{LoadedScenario, ScenarioError};
use crate::sim::rng;
use crate::sim::TimerQueue;
use crate::units::{BitsPerSec, Time};

/// Bytes of a standard Ethernet MTU: a weighted class's quantum, and the least frame the
/// default PFC headroom allows for.
const MTU: u64 = 1500;

/// The largest frame a port may have to take after it sent PAUSE, for the default PFC
/// headroom: a standard MTU, or the NIC's MTU with its headers (StaR's, the ordering
/// layer's and the telemetry's included), or a raw `[[traffic]]` packet, whichever is largest. (With 9000 B
/// frames, headroom for two 1500 B ones let the lossless class drop.)
fn largest_frame(s: &crate::scenario::Scenario) -> u64 {
    let roce = crate::wire::roce::full_packet_bytes(s.nic.mtu) + (crate::wire::star::HEADER_BYTES + crate::nic::ordering::HEADER_BYTES + s.nic.telemetry_bytes) as u64;
    s.traffic.iter().map(|t| t.packet_size.0).chain([MTU, roce]).max().unwrap_or(MTU)
}

impl World {
    /// Builds the world a scenario describes; every error is the scenario's.
    pub fn build(loaded: &LoadedScenario) -> Result<World, ScenarioError> {
        let topo = loaded.topology()?;
        let mut w = World::from_topology(loaded, &topo);
        w.check_pfc_headroom(loaded)?;
        w.check_reachable(loaded)?;
        w.apps.sources = Sources::build(&mut w, loaded)?;
        w.add_nics(loaded);
        w.apps.flows = Flows::build(&mut w, loaded)?;
        w.apps.perftests = Perftests::build(&mut w, loaded);
        w.apps.yama = Yama::build(&mut w, loaded);
        w.apps.rpc = Rpcs::build(&mut w, loaded);
        w.apps.nvmf = crate::host::apps::nvmf::Nvmf::build(&mut w, loaded);
        w.check_limits(loaded)?;
        w.add_captures(loaded)?;
        Ok(w)
    }

    fn from_topology(loaded: &LoadedScenario, topo: &Topology) -> World {
        let s = &loaded.scenario;
        let seed = s.seed;
        let n = topo.nodes();
        let mut timers = TimerQueue::new();

        // Interfaces per node in link order, then contiguous global port ids node by node.
        let mut ifaces: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
        for (i, l) in topo.links.iter().enumerate() {
            ifaces[l.a as usize].push((i, true));
            ifaces[l.b as usize].push((i, false));
        }
        let mut first_port = vec![0u32; n + 1];
        for v in 0..n {
            first_port[v + 1] = first_port[v] + ifaces[v].len() as u32;
        }
        let mut port_of_link = vec![(0u32, 0u32); topo.links.len()]; // (port at a, port at b)
        for (v, list) in ifaces.iter().enumerate() {
            for (k, &(li, at_a)) in list.iter().enumerate() {
                let p = first_port[v] + k as u32;
                if at_a {
                    port_of_link[li].0 = p;
                } else {
                    port_of_link[li].1 = p;
                }
            }
        }
        // Strict priority, or deficit round robin by weights (quantum weight × MTU).
        let service = |weights: Option<[u32; 8]>| weights.map_or(ClassService::Strict, |weights| ClassService::Weighted { weights, quantum: MTU as u32 });
        let switch_service = match s.switch.service {
            ServiceKind::RoundRobin => ClassService::ZeroThenRoundRobin,
            kind => service((kind == ServiceKind::Weighted).then_some(s.switch.weights)),
        };
        let total_ports = first_port[n] as usize;
        let mut ports = Vec::with_capacity(total_ports);
        let mut links = Vec::with_capacity(total_ports);
        let mut link_timers = Vec::with_capacity(total_ports);
        let mut link_rngs = Vec::with_capacity(total_ports);
        let mut adjacency = vec![Vec::new(); n];
        for (v, list) in ifaces.iter().enumerate() {
            for (k, &(li, at_a)) in list.iter().enumerate() {
                let p = first_port[v] + k as u32;
                let l = &topo.links[li];
                let (peer, neighbor) = if at_a { (port_of_link[li].1, l.b) } else { (port_of_link[li].0, l.a) };
                let svc = if topo.kinds[v] == NodeKind::Switch { switch_service.clone() } else { service(s.nic.weights) };
                let mut port = Port::new(v as u32, k as u32, peer, l.rate, timers.add_timer(Wake::Port(p)), svc);
                if topo.kinds[v] == NodeKind::Switch {
                    port.set_order(s.switch.queue_order);
                }
                port.set_serialization(s.links.serialization);
                ports.push(port);
                links.push(Link::new(l.delay, l.loss));
                link_timers.push(timers.add_timer(Wake::Link(p)));
                link_rngs.push((l.loss > 0.0).then(|| rng::stream(seed, "link-loss", p as u64)));
                adjacency[v].push(Adjacent { port: p, neighbor });
            }
        }

        let mut roles = Vec::with_capacity(n);
        let mut switches = Vec::new();
        let mut hosts = Vec::new();
        let mut host_nodes = Vec::new();
        let pfc = &s.switch.pfc;
        let frame = largest_frame(s);
        let mut lossless = [false; CLASSES];
        for &c in &pfc.classes {
            lossless[c as usize] = true;
        }
        let pfc_settings = PfcSettings {
            enabled: pfc.enabled,
            lossless,
            dynamic_alpha: if pfc.xoff.is_some() { None } else { Some(pfc.alpha) },
            xoff: pfc.xoff.unwrap_or_default(),
            xon_offset: pfc.xon_offset,
            resend: pfc.resend,
            port_reserve: pfc.port_reserve.0,
            ingress_reserve: pfc.ingress_reserve.0,
            headroom_apart: pfc.headroom_apart,
        };
        // `switch.pfc.alpha_by_rate`: each switch port's doublings of α, by its rate against the
        // first host's link (HPCC's `get_nic_rate`, and its `pfc_a_shift` loop in `third.cc`).
        let nic_rate = (0..n).find(|&v| topo.kinds[v] == NodeKind::Host && first_port[v] < first_port[v + 1]).map(|v| ports[first_port[v] as usize].rate.0);
        let alpha_doublings = |range: std::ops::Range<u32>| -> Vec<u8> {
            let Some(nic) = nic_rate.filter(|_| pfc.alpha_by_rate) else { return Vec::new() };
            range
                .map(|p| {
                    let (mut rate, mut d) = (ports[p as usize].rate.0, 0u8);
                    while rate > nic && d < 16 {
                        rate /= 2;
                        d += 1;
                    }
                    d
                })
                .collect()
        };
        for v in 0..n {
            let range = first_port[v]..first_port[v + 1];
            match topo.kinds[v] {
                NodeKind::Host => {
                    roles.push(NodeRole::Host(hosts.len() as u32));
                    hosts.push(HostState { port: if range.is_empty() { u32::MAX } else { range.start }, room_waiters: Vec::new(), raw_queued: [0; 8] });
                    host_nodes.push(v as u32);
                }
                NodeKind::Switch => {
                    roles.push(NodeRole::Switch(switches.len() as u32));
                    let headroom: Vec<u64> = range
                        .clone()
                        .map(|p| {
                            let bdp = ports[p as usize].rate.bytes_in(links[p as usize].delay);
                            pfc.headroom.map(|h| h.0).unwrap_or_else(|| pfc.headroom_bdps.map_or(2 * bdp + 2 * frame, |k| k as u64 * bdp))
                        })
                        .collect();
                    let ecn = range
                        .clone()
                        .map(|p| {
                            let rate = ports[p as usize].rate;
                            s.switch.ecn.enabled.then(|| {
                                s.switch.ecn.per_rate.iter().find(|(k, _)| k.parse::<BitsPerSec>().ok() == Some(rate)).map(|(_, c)| *c).unwrap_or(s.switch.ecn.curve())
                            })
                        })
                        .collect();
                    let lb = s.switch.load_balancer.build(seed, v as u32, s.switch.ecmp_hash, s.switch.flowlet_gap, s.switch.drill, s.switch.conga, s.switch.conweave);
                    let lb_timer = lb.uses_timer().then(|| timers.add_timer(Wake::Lb(switches.len() as u32)));
                    switches.push(Switch {
                        node: v as u32,
                        first_port: range.start,
                        port_count: range.len() as u32,
                        buffer: SharedBuffer::with_alpha_doublings(s.switch.buffer, s.switch.dt_alpha, pfc_settings.clone(), &headroom, alpha_doublings(range.clone())),
                        lb,
                        lb_timer,
                        control_hash: s.switch.control_by_hash.then(|| EcmpHasher { kind: s.switch.ecmp_hash, seed: rng::stream_seed(seed, "ecmp", v as u64) }),
                        held: HashMap::new(),
                        lb_actions: Vec::new(),
                        deflect: s.switch.deflection.then(|| rng::stream(seed, "deflect", v as u64)),
                        local_failover: s.routing.local_failover,
                        ports_down: 0,
                        up_candidates: Vec::new(),
                        route_buf: Vec::new(),
                        ecn,
                        ecn_rng: rng::stream(seed, "ecn", v as u64),
                        pause_since: vec![[Time::MAX; CLASSES]; range.len()],
                        pause_lapse: vec![[Time::ZERO; CLASSES]; range.len()],
                        pfc_refresh: range.clone().map(|p| timers.add_timer(Wake::PfcRefresh(p))).collect(),
                    });
                }
            }
        }
        let is_host: Vec<bool> = topo.kinds.iter().map(|&k| k == NodeKind::Host).collect();
        let routes = Routes::compute(&adjacency, &is_host, &host_nodes, |_| true);

        let mut link_events = s.link_events.clone();
        if let Some(f) = &s.failures {
            link_events.extend(f.events(topo, s.duration, seed));
            // Stable: the scenario's own events first among equal times, then the generated
            // ones in their order (ups before downs).
            link_events.sort_by_key(|e| e.at);
        }
        for (i, e) in link_events.iter().enumerate() {
            let t = timers.add_timer(Wake::LinkEvent(i as u32));
            timers.arm(t, e.at);
        }
        let reroute_timer = timers.add_timer(Wake::Reroute);
        let sampler = s.outputs.queue_interval.map(|iv| {
            let t = timers.add_timer(Wake::Sampler);
            timers.arm(t, Time::ZERO);
            (t, iv)
        });
        // A full data packet (a WRITE's first: headers and RETH) serialized on the slowest link:
        // the stall detector's patience.
        let full_packet = crate::wire::roce::full_packet_bytes(s.nic.mtu);
        let slowest_packet = ports.iter().filter(|p| p.rate.0 > 0).map(|p| p.rate.tx_time(full_packet)).max().unwrap_or(Time::ZERO);
        let path_rngs = switches.iter().map(|sw: &Switch| rng::stream(seed, "path-choice", sw.node as u64)).collect();
        World {
            now: Time::ZERO,
            end: s.duration,
            seed,
            timers,
            pool: PacketPool::default(),
            ports,
            links,
            link_timers,
            link_rngs,
            roles,
            switches,
            hosts,
            adjacency,
            is_host,
            host_nodes,
            routes,
            paths: s.routing.k_shortest_paths.map(|k| PathTable::new(k as usize)),
            path_choice: s.routing.path_choice,
            path_rngs,
            pfc_quanta: pfc.quanta,
            pfc_pause_time: pfc.pause_time,
            pfc_held: pfc.resend == crate::scenario::schema::PfcResend::UntilResume,
            link_events,
            link_holds: Default::default(),
            reroute_timer,
            reroute_at: Vec::new(),
            routed_up: vec![true; total_ports],
            recompute_delay: s.routing.recompute_delay,
            sampler,
            record: Recorder::new(s.outputs.pfc_events),
            stats: RunStats::default(),
            nic_spec: s.nic.clone(),
            nics: Vec::new(),
            qps: Default::default(),
            star: Default::default(),
            tap: Default::default(),
            outbox: Default::default(),
            outbox_spare: Vec::new(),
            int_enabled: s.nic.cc.needs_int(),
            rtt_cache: Default::default(),
            app_mr: Vec::new(),
            apps: Default::default(),
            apps_busy: [false; 256],
            apps_pending: Default::default(),
            rate_sampler: None,
            capture_ports: Vec::new(),
            capture: Vec::new(),
            stall_quiet: super::stall::quiet_threshold(s.duration, slowest_packet, s.nic.scheduler.batch_interval()),
            idle_seen: Time::ZERO,
            stop_on_stall: s.stop_on_stall,
            stop_when_flows_done: s.stop_when_flows_done,
            stopped_at: None,
            finalized: false,
        }
    }
}

impl World {
    /// One NIC per host, with an application region over all of its memory.
    fn add_nics(&mut self, loaded: &LoadedScenario) {
        // An unsized cc_window is ns-3's maxBdp, and HPCC's fabric-wide T its maxRtt, known
        // once the fabric is built.
        let unsized_window = self.nic_spec.cc_window.is_some_and(|w| w.bytes.is_none());
        let fabric_t = matches!(&self.nic_spec.cc, crate::nic::cc::CcSpec::Hpcc(h) if h.fabric_rtt && h.base_rtt.is_none());
        // ns-3's IRN window is one fabric-wide value (`IrnBdp`, which ConWeave's
        // `network-load-balance.cc` asserts equal to maxBdp; `RdmaQueuePair::CanIrnTransmit`),
        // not each pair's own BDP: the `ns3` profile's selective repeat takes maxBdp unless
        // `nic.window` is set.
        let irn_window = self.nic_spec.profile == crate::nic::NicProfile::Ns3 && self.nic_spec.recovery == crate::nic::Recovery::SelectiveRepeat && self.nic_spec.window.is_none();
        if unsized_window || fabric_t || irn_window {
            let (rtt, bdp) = self.fabric_rtt_and_bdp();
            if let Some(w) = self.nic_spec.cc_window.as_mut().filter(|w| w.bytes.is_none()) {
                w.bytes = Some(bdp);
            }
            if irn_window {
                self.nic_spec.window = Some(bdp);
            }
            if let crate::nic::cc::CcSpec::Hpcc(h) = &mut self.nic_spec.cc {
                if h.fabric_rtt && h.base_rtt.is_none() {
                    h.base_rtt = Some(rtt);
                }
            }
        }
        let spec = &loaded.scenario.nic;
        for (h, &node) in self.host_nodes.iter().enumerate() {
            let port = self.hosts[h].port;
            let link = self.ports.get(port as usize).map_or(crate::units::BitsPerSec(1), |p| p.rate);
            let mut nic = Nic::new(h as u32, node, port, spec, link);
            nic.serialization = loaded.scenario.links.serialization;
            // Workloads get one region over the whole memory; verbs users register their own.
            if !loaded.scenario.flows.is_empty() || !loaded.scenario.perftest.is_empty() || loaded.scenario.yama.is_some() || !loaded.scenario.rpc.is_empty() || !loaded.scenario.nvmf.is_empty() {
                let mr = nic.memory.register(h as u32, 0, spec.memory_size.0, Access::ALL).expect("the whole memory is a valid region");
                self.app_mr.push((mr.lkey, mr.rkey));
            }
            self.nics.push(nic);
        }
        if loaded.scenario.outputs.nic_events {
            self.tap.log = Some(Default::default());
        }
        if let Some(scr) = &self.nic_spec.scr {
            let on = |node: u32| scr.hosts.as_ref().is_none_or(|l| l.contains(&node));
            let cores: Vec<_> = self.nics.iter().map(|n| on(n.node).then(|| scr.build(n.line_rate))).collect();
            let mut timers = Vec::new();
            let mut telemetry_timers = Vec::new();
            for (h, c) in cores.iter().enumerate() {
                let host = h as u32;
                timers.push(self.timers.add_timer(Wake::Scr(host)));
                // The first sample one period in (it reads the counters since time 0).
                telemetry_timers.push(match (c, scr.telemetry) {
                    (Some(_), Some(period)) => {
                        let t = self.timers.add_timer(Wake::ScrTelemetry(host));
                        self.timers.arm(t, period);
                        Some(t)
                    }
                    _ => None,
                });
            }
            let meters = vec![crate::nic::scr::telemetry::Meter::first_at(scr.telemetry.unwrap_or_default()); cores.len()];
            // The counters' window opens at the warmup's end, or at once without one.
            let baseline = if scr.warmup > Time::ZERO {
                let t = self.timers.add_timer(Wake::ScrWarmup);
                self.timers.arm(t, scr.warmup);
                vec![None; cores.len()]
            } else {
                vec![Some(Default::default()); cores.len()]
            };
            self.tap.scr = Some(crate::nic::scr::Scr { cores, timers, telemetry_timers, meters, telemetry_log: Vec::new(), rate_log: Default::default(), rtt_log: Default::default(), nodes: self.nics.iter().map(|n| n.node).collect(), baseline });
        }
        // A full receive buffer pauses its switch where the data's class is lossless.
        let pfc = &loaded.scenario.switch.pfc;
        let mode = crate::nic::rx_buffer::when_full(self.nic_spec.rx_when_full, pfc.enabled, &pfc.classes, self.nic_spec.priority);
        let classes = crate::nic::rx_buffer::pause_classes(pfc.enabled, &pfc.classes, self.nic_spec.priority);
        for h in 0..self.nics.len() as u32 {
            let timer = (mode == WhenFull::Pause).then(|| self.timers.add_timer(Wake::RxBuffer(h)));
            self.nics[h as usize].rx = crate::nic::rx_buffer::RxBuffer::new(self.nic_spec.rx_buffer, mode, timer);
            self.nics[h as usize].pfc_classes = classes;
        }
        if let Some(sc) = &self.nic_spec.state_cache {
            for h in 0..self.nics.len() as u32 {
                let timer = self.timers.add_timer(Wake::StateCache(h));
                self.nics[h as usize].state = Some(NicStateCache::new(sc, self.nic_spec.qp_context_bytes, self.seed, h, timer));
            }
        }
        if let Some(iv) = loaded.scenario.outputs.rate_interval {
            let t = self.timers.add_timer(Wake::RateSampler);
            self.timers.arm(t, Time::ZERO);
            self.rate_sampler = Some((t, iv));
        }
    }

    /// The largest base RTT between two hosts (ns-3's `maxRtt`, with our packets' headers) and
    /// the largest bandwidth-delay product, each pair's RTT times its path's slowest link
    /// (`maxBdp`, the largest `pairBdp`; [`World::pair_bdp`]). Hosts on the same switch over
    /// alike links are alike, so one pair per pair of such groups is measured.
    fn fabric_rtt_and_bdp(&mut self) -> (Time, crate::units::Bytes) {
        let mut groups: Vec<((u32, Time, u64), Vec<u32>)> = Vec::new();
        for (h, &node) in self.host_nodes.iter().enumerate() {
            let p = self.hosts[h].port;
            let Some(port) = self.ports.get(p as usize) else { continue };
            let key = (self.ports[port.peer as usize].node, self.links[p as usize].delay, port.rate.0);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) if g.len() < 2 => g.push(node),
                Some(_) => {}
                None => groups.push((key, vec![node])),
            }
        }
        let (mut best, mut longest) = (0u64, Time::ZERO);
        for (i, (ka, a)) in groups.iter().enumerate() {
            for (kb, b) in &groups[i..] {
                let (x, y) = if ka == kb { (a[0], *a.get(1).unwrap_or(&a[0])) } else { (a[0], b[0]) };
                if x == y {
                    continue;
                }
                let rtt = self.base_rtt(x, y).max(self.base_rtt(y, x));
                best = best.max(self.pair_bdp(x, y)).max(self.pair_bdp(y, x));
                longest = longest.max(rtt);
            }
        }
        (longest.max(Time(1)), crate::units::Bytes(best.max(1)))
    }

    /// PFC reserves headroom per port and lossless class out of each switch's buffer; what is
    /// left must hold at least one MTU per port, or lossless traffic has nowhere to queue.
    fn check_pfc_headroom(&self, loaded: &LoadedScenario) -> Result<(), ScenarioError> {
        let pfc = &loaded.scenario.switch.pfc;
        if !pfc.enabled || pfc.classes.is_empty() {
            return Ok(());
        }
        for sw in &self.switches {
            let need = sw.port_count as u64 * MTU;
            if sw.buffer.shared() < need {
                // Headroom, and the reserve set aside for every port (`switch.pfc.port_reserve`).
                let reserved = sw.buffer.headroom() + pfc.port_reserve.0 * sw.port_count as u64;
                return Err(loaded.error_at(
                    "switch.buffer",
                    format!(
                        "switch {} needs {reserved} B of PFC headroom (and port reserves) for {} ports × {} lossless classes, leaving {} B of its {} buffer (at least {need} B, one MTU per port, must be shared: a buffer of {} B at least); raise switch.buffer, set a smaller switch.pfc.{} or port_reserve, or use fewer lossless classes",
                        sw.node,
                        sw.port_count,
                        pfc.classes.len(),
                        sw.buffer.shared(),
                        loaded.scenario.switch.buffer,
                        reserved + need,
                        if pfc.headroom.is_none() && pfc.headroom_bdps.is_some() { "headroom_bdps" } else { "headroom" },
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Whether a packet from host `a` can reach host `b` (node ids): hosts do not forward, so
    /// the first hop is `b` itself or a switch with a route to `b`.
    pub fn reachable(&self, a: u32, b: u32) -> bool {
        let (Some(next), Ok(hb)) = (self.first_hop(a), self.host_of(b)) else { return false };
        next == b || (!self.is_host[next as usize] && !self.routes.candidates(next, hb).is_empty())
    }

    /// Every pair a workload may use must be reachable without crossing a host.
    fn check_reachable(&self, loaded: &LoadedScenario) -> Result<(), ScenarioError> {
        use crate::scenario::schema::{FlowPattern, Pattern};
        let s = &loaded.scenario;
        let pair = |path: &str, a: u32, b: u32| -> Result<(), ScenarioError> {
            match self.reachable(a, b) {
                true => Ok(()),
                false => Err(loaded.error_at(path, format!("host {b} cannot be reached from host {a} without crossing a host (hosts do not forward)"))),
            }
        };
        // Links are two-way, so every host reaching one host means every pair is connected.
        let every = |path: &str| -> Result<(), ScenarioError> {
            let Some((&d, rest)) = self.host_nodes.split_first() else { return Ok(()) };
            for &h in rest {
                pair(path, h, d)?;
                pair(path, d, h)?;
            }
            Ok(())
        };
        for (i, t) in s.traffic.iter().enumerate() {
            match &t.pattern {
                Pattern::Pairs { pairs } => {
                    for (j, &[a, b]) in pairs.iter().enumerate() {
                        pair(&format!("traffic[{i}].pattern.pairs.pairs[{j}]"), a, b)?;
                    }
                }
                Pattern::Incast { receiver, senders: Some(list) } => {
                    for (j, &a) in list.iter().enumerate() {
                        pair(&format!("traffic[{i}].pattern.incast.senders[{j}]"), a, *receiver)?;
                    }
                }
                _ => every(&format!("traffic[{i}].pattern"))?,
            }
        }
        for (i, f) in s.flows.iter().enumerate() {
            match &f.pattern {
                Some(FlowPattern::Incast { receiver, senders: Some(list) }) => {
                    for (j, &a) in list.iter().enumerate() {
                        pair(&format!("flows[{i}].pattern.incast.senders[{j}]"), a, *receiver)?;
                        pair(&format!("flows[{i}].pattern.incast.senders[{j}]"), *receiver, a)?;
                    }
                }
                _ if f.cdf.is_some() => every(&format!("flows[{i}].pattern"))?,
                _ => {}
            }
        }
        for (i, p) in s.perftest.iter().enumerate() {
            pair(&format!("perftest[{i}].server"), p.client, p.server)?;
            pair(&format!("perftest[{i}].server"), p.server, p.client)?;
        }
        Ok(())
    }

    fn add_captures(&mut self, loaded: &LoadedScenario) -> Result<(), ScenarioError> {
        let list = &loaded.scenario.outputs.pcap;
        if list.is_empty() {
            return Ok(());
        }
        self.capture_ports = vec![false; self.ports.len()];
        for (i, &[node, iface]) in list.iter().enumerate() {
            let Some(adj) = self.adjacency.get(node as usize).and_then(|a| a.get(iface as usize)) else {
                return Err(loaded.error_at(&format!("outputs.pcap[{i}]"), format!("node {node} has no interface {iface}")));
            };
            self.capture_ports[adj.port as usize] = true;
        }
        Ok(())
    }
}

