//! An output-queued switch: forwarding (a carried path, else the shortest-path candidates and
//! the load balancer), shared-buffer admission, PFC XOFF/XON decisions and their pause-time
//! bookkeeping, and ECN marking at dequeue.
//!
//! Deflection (`switch.deflection`, DIBS: Zarifis et al., EuroSys 2014, §3): a packet the buffer
//! refuses at its chosen port is sent instead out of another port that leads to a switch, is up
//! and admits it, starting from a random one; only when none does is it dropped. Every switch
//! decrements the packet's time to live, so a packet bounced around a hot spot ends.
//!
//! The switch decides; [`crate::world`] carries out (queues the packet, sends PFC frames, arms
//! timers). Marking happens at dequeue on the DCQCN curve of the egress port's rate, as HPCC's
//! ns-3 switch does; INT is stamped at dequeue too ([`Switch::int_hop`]).

use super::buffer::{Admit, SharedBuffer};
use super::ecn::EcnCurve;
use super::lb::{EcmpHasher, LbAction, LbContext, LbDecision, LbPolicy, LoadBalancer};
use super::link::Link;
use super::port::{Port, CLASSES};
use super::routing::{Candidates, Routes};
use crate::sim::rng::Rng;
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::int::IntHop;
use crate::wire::packet::{LbTag, Packet, PacketId, PacketKind, ECN_CE, ECN_ECT0};
use std::collections::HashMap;
use rand::Rng as _;

pub struct Switch {
    pub node: u32,
    /// Global id of the switch's first port; its ports are consecutive.
    pub first_port: u32,
    pub port_count: u32,
    pub buffer: SharedBuffer,
    pub lb: LbPolicy,
    /// With `switch.control_by_hash`: the flow hash that transport control packets (ACKs, NAKs,
    /// CNPs) follow instead of the load balancer, as ns-3's switch sends them
    /// (`SwitchNode::GetOutDev`), so that a flow's ACKs and NAKs stay in order.
    pub control_hash: Option<EcmpHasher>,
    /// The load balancer's timer, for policies that use one.
    pub lb_timer: Option<TimerId>,
    /// Packets the load balancer holds back, by its key, with their egress ports.
    pub held: HashMap<u64, Vec<(PacketId, u32)>>,
    /// Scratch for the load balancer's actions, kept to reuse.
    pub lb_actions: Vec<LbAction>,
    /// Deflection on a full buffer (DIBS), with the switch's own random stream.
    pub deflect: Option<Rng>,
    /// Whether ports whose links are down leave the candidate sets at once (local failover),
    /// and how many of this switch's ports are down now (the world keeps the count).
    pub local_failover: bool,
    pub ports_down: u32,
    /// Scratch for the candidates whose links are up (local failover), kept to reuse.
    pub up_candidates: Vec<u32>,
    /// Scratch for candidates the routing table keeps as a mask.
    pub route_buf: Vec<u32>,
    /// ECN curve per local port (`None`: marking off).
    pub ecn: Vec<Option<EcnCurve>>,
    pub ecn_rng: Rng,
    /// Per local port: when PAUSE was first asserted for each class (for pause-time counters).
    pub pause_since: Vec<[Time; CLASSES]>,
    /// Per local port: when the last PAUSE sent for each class runs out.
    pub pause_lapse: Vec<[Time; CLASSES]>,
    /// Per local port: the timer that re-sends PAUSE while a class stays congested.
    pub pfc_refresh: Vec<TimerId>,
}

/// The parts of the fabric a switch reads to forward.
pub struct FabricView<'a> {
    pub now: Time,
    pub ports: &'a [Port],
    pub links: &'a [Link],
    pub is_host: &'a [bool],
    pub routes: &'a Routes,
}

/// What the switch decided for an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    /// Queue it (of `class`, `size` bytes) at egress port `out`; `pause`: its ingress (local
    /// port `iface`, class) just crossed XOFF; `deflected`: the buffer refused it at the port
    /// its route chose and `out` is a detour.
    Queue { out: u32, class: u8, size: u32, iface: u32, pause: bool, deflected: bool },
    /// It arrived with no time to live left.
    TtlExpired,
    /// No route to the destination (or the load balancer named a port of another node).
    Unroutable,
    /// The chosen egress port's link is down.
    LinkDown(u32),
    /// The buffer refused it at the chosen egress port.
    BufferFull(u32),
    /// The load balancer keeps it back under `key`, for egress port `out` (see
    /// [`crate::fabric::lb::LbAction::Release`]).
    Held { key: u64, out: u32 },
    /// It was a control packet for this switch's load balancer.
    Consumed,
}

impl Switch {
    /// Chooses the egress port of `pkt`, which arrived by global port `in_port`, and admits it.
    /// `path` is the path the packet carries (egress ports), if any: the switch follows it when
    /// it is on it. `tag` is the packet's load-balancing header, given when the policy
    /// [`LoadBalancer::uses_tags`].
    #[inline(always)]
    pub fn forward(&mut self, view: &FabricView, in_port: u32, pkt: &mut Packet, path: Option<&[u32]>, tag: Option<&mut LbTag>) -> Forward {
        if pkt.ttl <= 1 {
            return Forward::TtlExpired;
        }
        pkt.ttl -= 1;
        let out = match path.and_then(|p| self.next_on_path(p, view.ports)) {
            Some(out) => out,
            None => {
                let mut candidates = match view.routes.candidates(self.node, pkt.dst_host) {
                    Candidates::Ports(p) => p,
                    mask => mask.as_slice(&mut self.route_buf),
                };
                if candidates.is_empty() {
                    return Forward::Unroutable;
                }
                let routed = candidates;
                // Local failover: a port of this switch whose link is down is out of the group
                // at once (the routes learn of it only after the recompute delay). When every
                // candidate is down the packet goes to the chosen one and is lost there.
                if self.local_failover && self.ports_down > 0 && keep_up(&mut self.up_candidates, view, candidates) {
                    candidates = &self.up_candidates;
                }
                if candidates.len() == 1 && !self.lb.sees_single_paths() {
                    candidates[0]
                } else {
                    let ctx = LbContext { switch: self.node, ingress: in_port, candidates, routed, first_port: self.first_port, port_count: self.port_count, view };
                    let control = self.control_hash.filter(|_| tag.is_none() && pkt.kind == PacketKind::Roce && !pkt.carries_data());
                    let out = match (control, tag) {
                        (Some(h), _) => h.pick(pkt, &ctx),
                        (None, Some(tag)) => match self.lb.decide(pkt, tag, &ctx) {
                            LbDecision::Port(out) => out,
                            LbDecision::Hold { key, port } => {
                                pkt.ingress_port = in_port - self.first_port;
                                return Forward::Held { key, out: port };
                            }
                            LbDecision::Consume => return Forward::Consumed,
                        },
                        (None, None) => self.lb.choose(pkt, &ctx),
                    };
                    // Only a policy written outside the crate can name another node's port.
                    if matches!(self.lb, LbPolicy::Custom(_)) && !ctx.ports().contains(&out) {
                        return Forward::Unroutable;
                    }
                    out
                }
            }
        };
        self.admit(view, in_port - self.first_port, out, pkt)
    }

    /// Admits `pkt`, which came in by local port `iface`, to egress port `out` (or, with
    /// deflection on, to another port if the buffer refuses it there).
    #[inline(always)]
    pub fn admit(&mut self, view: &FabricView, iface: u32, out: u32, pkt: &mut Packet) -> Forward {
        let (class, size) = (pkt.priority, pkt.size);
        // A switch that knows its link is down (local failover) drops at once. One that does not
        // queues and sends as ever, and the link loses what it sends: the port drains at its
        // rate, so a balancer that reads queues does not take it for the emptiest.
        if !view.links[out as usize].up && self.local_failover {
            return Forward::LinkDown(out);
        }
        let mut deflected = false;
        let mut out = out;
        if self.buffer.admit(iface, class, view.ports[out as usize].queue_bytes(class), size) == Admit::Drop {
            match self.deflect_port(view, iface, out, class, size) {
                Some(detour) => (deflected, out) = (true, detour),
                None => return Forward::BufferFull(out),
            }
        }
        pkt.ingress_port = iface;
        Forward::Queue { out, class, size, iface, pause: self.buffer.should_pause(iface, class), deflected }
    }


    /// With deflection on, another port for a packet that `refused` could not take: the first,
    /// from a random start, that leads to a switch, is up and admits it (the admission is made).
    #[cold]
    #[inline(never)]
    fn deflect_port(&mut self, view: &FabricView, iface: u32, refused: u32, class: u8, size: u32) -> Option<u32> {
        let rng = self.deflect.as_mut()?;
        let n = self.port_count;
        let start = rng.random_range(0..n);
        for i in 0..n {
            let p = self.first_port + (start + i) % n;
            let peer = view.ports[view.ports[p as usize].peer as usize].node;
            if p == refused || !view.links[p as usize].up || view.is_host[peer as usize] {
                continue;
            }
            if self.buffer.admit(iface, class, view.ports[p as usize].queue_bytes(class), size) == Admit::Accept {
                return Some(p);
            }
        }
        None
    }

    /// The egress port a carried path takes at this switch, if the path crosses it.
    #[inline]
    fn next_on_path(&self, path: &[u32], ports: &[Port]) -> Option<u32> {
        path.iter().copied().find(|&p| ports[p as usize].node == self.node)
    }

    /// A data packet of `class` left egress port `p` (`port`): ECN marking on the port's curve,
    /// and buffer release. Returns true if its ingress (port, class) fell below XON (send RESUME).
    #[inline]
    pub fn dequeued(&mut self, p: u32, port: &mut Port, class: u8, pkt: &mut Packet) -> bool {
        let iface = (p - self.first_port) as usize;
        if let Some(curve) = &self.ecn[iface] {
            if pkt.ecn == ECN_ECT0 {
                let q = port.queue_bytes(class);
                // Draw only above Kmin, where a mark is possible.
                if q > curve.kmin.0 && curve.should_mark(q, self.ecn_rng.random()) {
                    pkt.ecn = ECN_CE;
                    port.counters.ecn_marks += 1;
                }
            }
        }
        self.buffer.release(pkt.ingress_port, class, pkt.size)
    }

    /// The INT record this switch stamps into a packet of `class` leaving `port` (HPCC §3.2):
    /// the class's queue, or with `whole_port` every class's, as ns-3's switch stamps the
    /// port's whole queue (`SwitchNode::SwitchNotifyDequeue`: `GetNBytesTotal`).
    #[inline]
    pub fn int_hop(port: &Port, index: u32, class: u8, whole_port: bool, now: Time) -> IntHop {
        let qlen = if whole_port { port.total_bytes() } else { port.queue_bytes(class) };
        IntHop { qlen, tx_bytes: port.counters.tx_bytes, ts: now, rate: port.rate, port: index }
    }

    /// Bookkeeping for a PAUSE (`quanta > 0`) or RESUME the switch sends for `class` out of its
    /// local port `iface` (`port`): pause-time counters. Returns, for a PAUSE, when to refresh
    /// it (half its duration) if the class stays congested; never when the buffer pauses again
    /// for every packet admitted over XOFF instead.
    pub fn pfc_sent(&mut self, iface: u32, class: u8, quanta: u16, now: Time, port: &mut Port) -> Option<Time> {
        let (i, c) = (iface as usize, class as usize);
        if quanta > 0 {
            // A pause renewed after the last one ran out (a switch that pauses for every
            // packet sends no RESUME at a lapse) is a new pause: the old one ended there.
            if self.buffer.pauses_every_packet() && now >= self.pause_lapse[i][c] {
                self.close_pause(i, c, self.pause_lapse[i][c], port);
            }
            self.pause_lapse[i][c] = now + pause_time(quanta, port.rate.0);
            if self.pause_since[i][c] == Time::MAX {
                self.pause_since[i][c] = now;
                port.counters.pause_tx += 1;
            }
            self.buffer.refreshes().then(|| now + Time(pause_time(quanta, port.rate.0).0 / 2))
        } else {
            self.close_pause(i, c, now, port);
            port.counters.resume_tx += 1;
            None
        }
    }

    /// The pause time counters of the pause asserted on local port `i`, class `c`, closed at
    /// `end` (nothing if none is).
    fn close_pause(&mut self, i: usize, c: usize, end: Time, port: &mut Port) {
        let since = std::mem::replace(&mut self.pause_since[i][c], Time::MAX);
        if since != Time::MAX {
            port.counters.paused_tx_ps += end.saturating_sub(since).0;
        }
    }

    /// When the pause asserted on local port `i`, class `c`, stops holding, seen at `now`: now,
    /// or its lapse if it ran out first (a switch that pauses for every packet refreshes none).
    fn pause_end(&self, i: usize, c: usize, now: Time) -> Time {
        if self.buffer.pauses_every_packet() {
            now.min(self.pause_lapse[i][c])
        } else {
            now
        }
    }

    /// The buffer would send RESUME for `class` on local port `iface` (its ingress fell to
    /// XON): whether the PAUSE it would end has run out already, where a switch that pauses
    /// again for every packet over XOFF sends none (ns-3's `SwitchMmu::GetResumeClasses`
    /// resumes only a class its own pause timer still holds, `SetPause` / `SetResume`). Then
    /// the pause's time is counted to its lapse, and no RESUME is counted.
    pub fn pause_lapsed(&mut self, iface: u32, class: u8, now: Time, port: &mut Port) -> bool {
        let (i, c) = (iface as usize, class as usize);
        if !self.buffer.pauses_every_packet() || now < self.pause_lapse[i][c] {
            return false;
        }
        self.close_pause(i, c, self.pause_lapse[i][c], port);
        true
    }

    /// The link of local port `iface` failed while it asserted `class`'s pause: the pause is
    /// over for the counters (at its lapse if it had run out), with no frame sent or counted.
    pub fn pause_dropped(&mut self, iface: u32, class: u8, now: Time, port: &mut Port) {
        let (i, c) = (iface as usize, class as usize);
        self.close_pause(i, c, self.pause_end(i, c, now), port);
    }

    /// Classes whose PAUSE is asserted on local port `iface`.
    pub fn asserted(&self, iface: u32) -> [bool; CLASSES] {
        let mut classes = [false; CLASSES];
        for c in self.buffer.asserted(iface) {
            classes[c as usize] = true;
        }
        classes
    }

    /// Time so far of the PAUSEs asserted on local port `iface` (not yet in its counters).
    pub fn pause_open(&self, iface: u32, now: Time) -> u64 {
        let i = iface as usize;
        self.buffer.asserted(iface).map(|c| self.pause_end(i, c as usize, now).saturating_sub(self.pause_since[i][c as usize]).0).sum()
    }
}

/// How long `quanta` units of 512 bit times last at `rate` bits per second.
pub fn pause_time(quanta: u16, rate: u64) -> Time {
    crate::units::BitsPerSec(rate).tx_time(quanta as u64 * 512 / 8)
}

/// The quanta (512 bit times, at least 1) that pause for `t` at `rate` bits per second, rounded
/// down: the inverse of [`pause_time`].
pub fn pause_quanta(t: Time, rate: u64) -> u16 {
    quanta_in(t, rate).clamp(1, u16::MAX as u128) as u16
}

/// The whole quanta of 512 bit times in `t` at `rate` bits per second, however many (a PAUSE
/// frame carries 1 to 65535 of them: [`pause_quanta`]).
pub fn quanta_in(t: Time, rate: u64) -> u128 {
    t.0 as u128 * rate as u128 / (512 * 1_000_000_000_000u128)
}

/// Local failover: puts the `candidates` whose links are up into `up`; true if some are down and
/// some are up (then those are the candidates).
#[cold]
#[inline(never)]
fn keep_up(up: &mut Vec<u32>, view: &FabricView, candidates: &[u32]) -> bool {
    if candidates.iter().all(|&p| view.links[p as usize].up) {
        return false;
    }
    up.clear();
    up.extend(candidates.iter().copied().filter(|&p| view.links[p as usize].up));
    !up.is_empty()
}
