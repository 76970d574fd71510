//! Fabric wiring: port serialization, link propagation, carrying out a switch's decisions
//! ([`crate::fabric::switch`]: forwarding, admission, PFC, ECN), and link failures with delayed
//! route recomputation.

use super::{NodeRole, World, PFC_FRAME_BYTES};
use crate::fabric::lb::{LbAction, LbPolicy, LoadBalancer};
use crate::nic::verbs::VerbsError;
use crate::fabric::paths::NO_PATH;
use crate::fabric::switch::{pause_quanta, pause_time, FabricView, Forward, Switch};
use crate::wire::packet::{Packet, PacketId, PacketKind};
use crate::wire::roce::Family;
use crate::fabric::routing::Routes;
use crate::scenario::schema::{LinkState, PathChoice};
use crate::units::Time;
use crate::fabric::port::CLASSES;
use rand::Rng as _;

impl World {
    /// Starts serializing the next eligible packet if the port is idle; the packet goes onto the
    /// link at once, and the timer is armed for the end of serialization if more are waiting.
    #[inline]
    pub(super) fn port_start(&mut self, p: u32) {
        if let NodeRole::Host(h) = self.roles[self.ports[p as usize].node as usize] {
            return self.host_port_start(p, h);
        }
        let now = self.now;
        let port = &mut self.ports[p as usize];
        if !port.is_idle(now) {
            self.timers.arm_if_later(port.timer, port.busy_until);
            return;
        }
        let Some((id, class)) = port.dequeue(now, &self.pool) else {
            if let Some(t) = port.next_unpause(now) {
                self.timers.arm(port.timer, t);
            }
            return;
        };
        let done = port.start_tx(now, self.pool.get(id).size);
        if port.has_queued() {
            self.timers.arm(port.timer, done);
        }
        let node = port.node;
        if let Some(class) = class {
            if let NodeRole::Switch(s) = self.roles[node as usize] {
                self.switch_dequeued(s, p, id, class);
            }
        }
        self.capture(p, id);
        self.link_send(p, id, done);
    }

    /// A data packet leaves a switch queue: ECN marking, INT stamp, buffer release (RESUME).
    #[inline]
    fn switch_dequeued(&mut self, s: u32, p: u32, id: PacketId, class: u8) {
        let sw = &mut self.switches[s as usize];
        let pkt = self.pool.get_mut(id);
        let resume = sw.dequeued(p, &mut self.ports[p as usize], class, pkt);
        let ingress = pkt.ingress_port;
        // INT is stamped on data packets only (ns-3's `SwitchNode::SwitchNotifyDequeue` pushes
        // a hop onto UDP data, never onto ACKs): an ACK carries back the data path's hops, so
        // HPCC reacts to the links its data crosses, not to the ACKs' way back.
        if self.int_enabled && pkt.kind == PacketKind::Roce && matches!(pkt.roce.opcode.family(), Family::Send | Family::Write | Family::ReadResponse) {
            let whole_port = self.nic_spec.profile == crate::nic::NicProfile::Ns3;
            let hop = Switch::int_hop(&self.ports[p as usize], p, class, whole_port, self.now);
            self.pool.int_mut(id).push(hop);
        }
        if resume {
            self.resume(s, ingress, class);
        }
    }

    /// Switch `s`'s buffer let `ingress`'s `class` fall to XON: RESUME, unless the pause it would
    /// end ran out already ([`Switch::pause_lapsed`]).
    fn resume(&mut self, s: u32, ingress: u32, class: u8) {
        let p = (self.switches[s as usize].first_port + ingress) as usize;
        if !self.switches[s as usize].pause_lapsed(ingress, class, self.now, &mut self.ports[p]) {
            self.send_pfc(s, ingress, class, 0);
        }
    }

    /// 1 if losing packet `id` on a link counts as a drop, else 0. PFC frames are not packets of
    /// `packets_sent`, so their losses count in no drop counter (`pfc_frames_sent -
    /// pfc_frames_received` holds them). (The transport's ACKs, NAKs and CNPs are not in it
    /// either, but their losses are drops, as a port sees them.)
    #[inline]
    fn counts_as_drop(&self, id: PacketId) -> u64 {
        !matches!(self.pool.get(id).kind, PacketKind::Pause { .. }) as u64
    }

    /// Packet `id` is lost on port `p`'s failed link (queued on it, crossing it, or sent into
    /// it): counted at the port, and its flow met a failure.
    #[cold]
    #[inline(never)]
    fn lose_on_down_link(&mut self, p: u32, id: PacketId) {
        self.ports[p as usize].counters.drops_link_down += self.counts_as_drop(id);
        self.failure_met(id);
        self.pool.free(id);
    }

    /// Packet `id` is lost to a failed link, or leaves its carried path around one: its queue
    /// pair's flow met a failure (`rdma/met_failure`).
    #[cold]
    #[inline(never)]
    fn failure_met(&mut self, id: PacketId) {
        let pkt = self.pool.get(id);
        if pkt.kind == PacketKind::Roce {
            crate::host::apps::flows::record_failure_hit(&mut self.apps.flows.failure_hits, pkt.flow, self.now);
        }
    }

    /// Puts a packet whose serialization ends at `done` on the port's link.
    #[inline]
    pub(super) fn link_send(&mut self, p: u32, id: PacketId, done: Time) {
        let link = &mut self.links[p as usize];
        if !link.up {
            self.lose_on_down_link(p, id);
            return;
        }
        if let Some(rng) = &mut self.link_rngs[p as usize] {
            if rng.random::<f64>() < link.loss_rate {
                self.ports[p as usize].counters.drops_corrupt += self.counts_as_drop(id);
                self.pool.free(id);
                return;
            }
        }
        let at = done + link.delay;
        link.in_flight.push_back((at, id));
        if link.in_flight.len() == 1 {
            self.timers.arm(self.link_timers[p as usize], at);
        }
    }

    /// A link's timer: its oldest packet arrives at the far end.
    pub(super) fn link_fire(&mut self, l: u32) {
        let link = &mut self.links[l as usize];
        let (_, id) = link.in_flight.pop_front().expect("a link fires only with packets in flight");
        if let Some(&(next, following)) = link.in_flight.front() {
            self.timers.arm(self.link_timers[l as usize], next);
            self.pool.prefetch(following);
        }
        self.stats.packet_hops += 1;
        let in_port = self.ports[l as usize].peer;
        self.receive(in_port, id);
    }

    /// A packet arrives at a node through its port `in_port`.
    #[inline]
    fn receive(&mut self, in_port: u32, id: PacketId) {
        let node = self.ports[in_port as usize].node;
        match self.pool.get(id).kind {
            PacketKind::Pause { priority, quanta } => {
                self.pool.free(id);
                self.pfc_received(in_port, priority, quanta);
            }
            PacketKind::Data | PacketKind::Roce | PacketKind::Star => match self.roles[node as usize] {
                NodeRole::Switch(s) => self.switch_forward(s, in_port, id),
                // Hosts do not forward: a packet for another host is dropped and counted.
                NodeRole::Host(_) if self.pool.get(id).dst != node => {
                    self.stats.drops_misdelivered += 1;
                    self.pool.free(id);
                }
                NodeRole::Host(h) => {
                    match self.pool.get(id).kind {
                        PacketKind::Data => self.host_receive(id),
                        PacketKind::Star => self.star_receive(h, id),
                        _ => self.nic_receive(h, id),
                    }
                }
            },
        }
    }

    /// A packet arrives at switch `s`: the switch decides, the world queues or drops.
    #[inline(always)]
    fn switch_forward(&mut self, s: u32, in_port: u32, id: PacketId) {
        if self.path_choice != PathChoice::Connection {
            self.choose_packet_path(s, in_port, id);
        }
        self.leave_broken_path(s, in_port, id);
        let sw = &mut self.switches[s as usize];
        let path = match &self.paths {
            Some(t) => match self.pool.path(id) {
                NO_PATH => None,
                pid => Some(t.ports(pid)),
            },
            None => None,
        };
        let view = FabricView { now: self.now, ports: &self.ports, links: &self.links, is_host: &self.is_host, routes: &self.routes };
        let tagged = sw.lb.uses_tags();
        let verdict = if tagged {
            let (pkt, tag) = self.pool.with_lb_tag(id);
            sw.forward(&view, in_port, pkt, path, Some(tag))
        } else {
            sw.forward(&view, in_port, self.pool.get_mut(id), path, None)
        };
        self.carry_out(s, id, verdict);
        if tagged {
            self.lb_actions(s);
        }
        if self.switches[s as usize].lb_timer.is_some() {
            self.rearm_lb(s);
        }
    }

    /// Local failover on a carried path: when the path leaves switch `s` by a port of its own
    /// whose link is down, the packet takes another of the k shortest paths from this switch to
    /// its destination's (one picked by its flow hash among those whose first link is up, whose
    /// other links were up at the last route computation, and that do not lead back to the
    /// switch it came from), as the source switch's per-packet choice does. With none left it
    /// drops the path and follows the switch's routes from here (which leave that port at once).
    /// Keeping the path would lose the packet on the dead link until routes are recomputed: the
    /// routes hold only equal-cost next hops, and under k-shortest paths the others are often
    /// longer (Jellyfish, a direct link between two switches). A detour back where the packet
    /// came from could meet that switch's own dead link and be sent back again, to and fro
    /// until its time to live ran out.
    #[inline(always)]
    fn leave_broken_path(&mut self, s: u32, in_port: u32, id: PacketId) {
        let sw = &self.switches[s as usize];
        if sw.local_failover && sw.ports_down > 0 {
            self.leave_broken_carried_path(s, in_port, id);
        }
    }

    #[cold]
    #[inline(never)]
    fn leave_broken_carried_path(&mut self, s: u32, in_port: u32, id: PacketId) {
        let sw = &self.switches[s as usize];
        let Some(table) = &self.paths else { return };
        let pid = self.pool.path(id);
        if pid == NO_PATH {
            return;
        }
        let node = sw.node;
        let broken = table.ports(pid).iter().any(|&p| self.ports[p as usize].node == node && !self.links[p as usize].up);
        if broken {
            self.failure_met(id);
            let from = self.ports[self.ports[in_port as usize].peer as usize].node;
            let detour = self.detour_path(node, from, id);
            self.pool.set_path(id, detour);
        }
    }

    /// A path from switch `here` to packet `id`'s destination switch among the k shortest
    /// whose first link is up now, whose other links were up at the last route computation and
    /// whose first hop is not `from` (the node the packet came from), picked by the packet's
    /// flow hash (as a connection picks at its start), or `NO_PATH`.
    #[cold]
    #[inline(never)]
    fn detour_path(&mut self, here: u32, from: u32, id: PacketId) -> crate::fabric::paths::PathId {
        let pkt = self.pool.get(id);
        let hash = pkt.flow_hash;
        let Some(to) = self.first_hop(pkt.dst) else { return NO_PATH };
        if to == here {
            return NO_PATH;
        }
        let mut ids = [0u32; 64];
        let live = self.live_paths_from(here, to, true, Some(from), &mut ids);
        if live == 0 {
            return NO_PATH;
        }
        ids[(crate::sim::rng::mix64(hash as u64) % live as u64) as usize]
    }

    /// Puts into `ids` the k shortest paths (at most 64, kept on the stack) from switch `here`
    /// to switch `to` whose links were up at the last route computation, whose first link is up
    /// now if `first_up` (the switch's own ports, which local failover knows at once), and
    /// whose first hop is not `not_toward`; returns how many.
    fn live_paths_from(&mut self, here: u32, to: u32, first_up: bool, not_toward: Option<u32>, ids: &mut [u32; 64]) -> usize {
        let Some(table) = self.paths.as_mut() else { return 0 };
        let all = table.between(&self.adjacency, &self.is_host, here, to);
        let n = all.len().min(ids.len());
        ids[..n].copy_from_slice(&all[..n]);
        let mut live = 0;
        for i in 0..n {
            let first = table.ports(ids[i])[0] as usize;
            let first_ok = (!first_up || self.links[first].up) && not_toward.is_none_or(|f| self.ports[self.ports[first].peer as usize].node != f);
            if first_ok && table.is_up(ids[i], &self.routed_up) {
                ids[live] = ids[i];
                live += 1;
            }
        }
        live
    }

    /// Per-packet path choice (`routing.path_choice`): at the switch a data packet enters from
    /// its host, one of the k shortest paths to the destination's switch, at random or the less
    /// queued first port of two different random ones.
    #[cold]
    #[inline(never)]
    fn choose_packet_path(&mut self, s: u32, in_port: u32, id: PacketId) {
        let pkt = self.pool.get(id);
        let from = self.ports[self.ports[in_port as usize].peer as usize].node;
        if !pkt.carries_data() || !self.is_host[from as usize] || self.pool.path(id) != NO_PATH {
            return;
        }
        let here = self.ports[in_port as usize].node;
        let Some(to) = self.first_hop(pkt.dst).filter(|_| self.paths.is_some()) else { return };
        if to == here {
            return;
        }
        // Paths through a link known to be down are not taken (none left: the routes). The
        // source switch knows its own ports' links at once (local failover); the rest of a path
        // as of the last route computation.
        let sw = &self.switches[s as usize];
        let local = sw.local_failover && sw.ports_down > 0;
        let mut ids = [0u32; 64];
        let live = self.live_paths_from(here, to, local, None, &mut ids);
        let set = &ids[..live];
        if set.is_empty() {
            return;
        }
        let Some(table) = &self.paths else { return };
        let rng = &mut self.path_rngs[s as usize];
        let a = rng.random_range(0..set.len());
        let path = if self.path_choice == PathChoice::PacketPowerOfTwo && set.len() > 1 {
            // Two distinct paths are compared (the second drawn from the others).
            let (a, b) = (set[a], set[(a + 1 + rng.random_range(0..set.len() - 1)) % set.len()]);
            let queued = |p: u32| self.ports[table.ports(p)[0] as usize].total_bytes();
            if queued(b) < queued(a) { b } else { a }
        } else {
            set[a]
        };
        self.pool.set_path(id, path);
    }

    /// Carries out switch `s`'s verdict on packet `id`: queue it, hold it, or drop and count it.
    #[inline(always)]
    fn carry_out(&mut self, s: u32, id: PacketId, verdict: Forward) {
        match verdict {
            Forward::Queue { out, class, size, iface, pause, deflected } => {
                if deflected {
                    self.stats.deflected += 1;
                }
                if pause {
                    self.send_pfc(s, iface, class, self.pfc_quanta);
                }
                self.ports[out as usize].enqueue(class, id, size, &mut self.pool);
                self.port_start(out);
            }
            Forward::Unroutable => {
                self.stats.drops_unroutable += 1;
                self.pool.free(id);
            }
            Forward::TtlExpired => {
                self.stats.drops_ttl += 1;
                self.pool.free(id);
            }
            Forward::LinkDown(out) => self.lose_on_down_link(out, id),
            Forward::BufferFull(out) => {
                self.ports[out as usize].counters.drops_buffer += 1;
                self.pool.free(id);
            }
            Forward::Held { key, out } => self.switches[s as usize].held.entry(key).or_default().push((id, out)),
            Forward::Consumed => self.pool.free(id),
        }
    }

    /// Does what switch `s`'s load balancer asked for: sends its control packets, and forwards
    /// the packets it releases (admitted to the buffer now, as they were held outside it).
    #[cold]
    #[inline(never)]
    fn lb_actions(&mut self, s: u32) {
        let mut actions = std::mem::take(&mut self.switches[s as usize].lb_actions);
        self.switches[s as usize].lb.actions(&mut actions);
        for a in actions.drain(..) {
            match a {
                LbAction::Emit { mut pkt, tag, ingress } => {
                    let NodeRole::Host(h) = self.roles[pkt.dst as usize] else { continue };
                    pkt.dst_host = h;
                    let id = self.pool.alloc(pkt);
                    *self.pool.with_lb_tag(id).1 = tag;
                    self.switch_forward(s, ingress, id);
                }
                LbAction::Release { key } => {
                    let Some(held) = self.switches[s as usize].held.remove(&key) else { continue };
                    for (id, out) in held {
                        let view = FabricView { now: self.now, ports: &self.ports, links: &self.links, is_host: &self.is_host, routes: &self.routes };
                        let pkt = self.pool.get_mut(id);
                        let iface = pkt.ingress_port;
                        let verdict = self.switches[s as usize].admit(&view, iface, out, pkt);
                        self.carry_out(s, id, verdict);
                    }
                }
            }
        }
        self.switches[s as usize].lb_actions = actions;
    }

    /// Sends PAUSE (`quanta > 0`) or RESUME for `class` out of switch `s`'s port `iface`.
    pub(super) fn send_pfc(&mut self, s: u32, iface: u32, class: u8, quanta: u16) {
        let sw = &mut self.switches[s as usize];
        let p = sw.first_port + iface;
        // A pause given as a time: the quanta that last it at this port's rate.
        let quanta = match self.pfc_pause_time {
            Some(t) if quanta > 0 => pause_quanta(t, self.ports[p as usize].rate.0),
            _ => quanta,
        };
        let refresh = sw.pfc_sent(iface, class, quanta, self.now, &mut self.ports[p as usize]);
        // One refresh timer per port, for every class it pauses: the first class paused starts
        // it anew, the others keep the earliest, and the last RESUME stops it. (A timer left
        // from an earlier episode refreshed the next one early: an extra PAUSE 10 us into an
        // episode, 168 us after the first one's.)
        let (timer, asserted) = (sw.pfc_refresh[iface as usize], sw.asserted(iface).iter().filter(|&&a| a).count());
        match refresh {
            Some(at) if asserted <= 1 => self.timers.arm(timer, at),
            Some(at) => self.timers.arm_if_later(timer, at),
            None if asserted == 0 => self.timers.cancel(timer),
            None => {}
        }
        let id = self.pool.alloc(Packet::pause(class, quanta, PFC_FRAME_BYTES));
        self.stats.pfc_frames_sent += 1;
        self.ports[p as usize].enqueue_control(id, &mut self.pool);
        self.port_start(p);
    }

    /// Installs load balancer `lb` at switch `node` in place of the scenario's policy (a policy
    /// written against the library; see [`crate::fabric::lb`]).
    pub fn set_load_balancer(&mut self, node: u32, lb: Box<dyn LoadBalancer + Send>) -> Result<(), VerbsError> {
        let Some(NodeRole::Switch(s)) = self.roles.get(node as usize).copied() else { return Err(VerbsError::NotASwitch(node)) };
        let sw = &mut self.switches[s as usize];
        sw.lb = LbPolicy::Custom(lb);
        if sw.lb.uses_timer() && sw.lb_timer.is_none() {
            sw.lb_timer = Some(self.timers.add_timer(super::Wake::Lb(s)));
        }
        self.rearm_lb(s);
        Ok(())
    }

    /// A switch's load-balancer timer.
    pub(super) fn lb_timer(&mut self, s: u32) {
        self.switches[s as usize].lb.on_timer(self.now);
        if self.switches[s as usize].lb.uses_tags() {
            self.lb_actions(s);
        }
        self.rearm_lb(s);
    }

    /// Arms switch `s`'s load-balancer timer for when its policy next wants it.
    fn rearm_lb(&mut self, s: u32) {
        let sw = &self.switches[s as usize];
        if let (Some(t), Some(at)) = (sw.lb_timer, sw.lb.next_timer()) {
            self.timers.arm(t, at.max(self.now));
        }
    }

    /// Refresh timer of a switch port: re-send PAUSE for every class still asserted there.
    pub(super) fn pfc_refresh(&mut self, p: u32) {
        let NodeRole::Switch(s) = self.roles[self.ports[p as usize].node as usize] else { return };
        let iface = p - self.switches[s as usize].first_port;
        let classes = self.switches[s as usize].asserted(iface);
        for c in 0..8u8 {
            if classes[c as usize] {
                self.send_pfc(s, iface, c, self.pfc_quanta);
            }
        }
    }

    /// A PFC frame arrives at `port`'s node: pause or resume that port's class.
    fn pfc_received(&mut self, p: u32, class: u8, quanta: u16) {
        let now = self.now;
        self.stats.pfc_frames_received += 1;
        let port = &mut self.ports[p as usize];
        let until = match quanta {
            0 => now,
            // Held to the RESUME: an hour stands for "until then" (the paused time is counted as
            // projected and taken back by the RESUME, so it must stay finite).
            _ if self.pfc_held => now + Time::from_ms(3_600_000),
            _ => now + pause_time(quanta, port.rate.0),
        };
        let was_paused = port.is_paused(class as usize, now);
        port.apply_pause(class, now, until);
        if quanta == 0 {
            port.counters.resume_rx += 1;
        } else if !was_paused {
            port.counters.pause_rx += 1;
        }
        let (node, iface) = (port.node, port.iface);
        self.record.pfc_event(now, node, iface, class, quanta);
        if let NodeRole::Host(h) = self.roles[node as usize] {
            if class == self.nic_spec.priority {
                self.sync_sched_pause(h);
            }
        }
        if quanta == 0 {
            self.port_start(p);
        }
    }

    /// Takes a link down or up (both directions); routes follow after the recompute delay.
    #[cold]
    #[inline(never)]
    pub(super) fn link_event(&mut self, i: u32) {
        let e = self.link_events[i as usize].clone();
        // Who holds the link down: the scenario's own events and `[failures]` apart. A link
        // comes back only once neither does (a failure set's restore brought back a link the
        // scenario had taken down for good), and a second hold changes nothing.
        let key = [e.between[0].min(e.between[1]), e.between[0].max(e.between[1])];
        let bit = if e.generated { 2 } else { 1 };
        let holds = self.link_holds.entry(key).or_default();
        let before = *holds;
        match e.state {
            LinkState::Down => *holds |= bit,
            LinkState::Up => *holds &= !bit,
        }
        if (e.state == LinkState::Down && before != 0) || (e.state == LinkState::Up && *holds != 0) {
            return;
        }
        let [a, b] = e.between;
        let ports: Vec<u32> = self.adjacency[a as usize].iter().filter(|adj| adj.neighbor == b).map(|adj| adj.port).collect();
        let mut came_up = Vec::new();
        for p in ports {
            for q in [p, self.ports[p as usize].peer] {
                let was_up = self.links[q as usize].up;
                if !was_up && e.state == LinkState::Up {
                    came_up.push(self.ports[q as usize].node);
                }
                match e.state {
                    LinkState::Down => self.take_down(q),
                    LinkState::Up => self.links[q as usize].up = true,
                }
                if let NodeRole::Switch(s) = self.roles[self.ports[q as usize].node as usize] {
                    let sw = &mut self.switches[s as usize];
                    match (was_up, e.state) {
                        (true, LinkState::Down) => sw.ports_down += 1,
                        (false, LinkState::Up) => sw.ports_down -= 1,
                        _ => {}
                    }
                }
            }
        }
        // A NIC that still holds its receive buffer (or its state cache's) above the PAUSE mark
        // asserts PAUSE afresh on the link back up: what it sent while the link was down was
        // lost, and the switch forgot the last PAUSE it obeyed when the link failed.
        // (Only where the link was down: an "up" for a link already up changes nothing, and
        // forgetting a PAUSE still held there left the switch paused with no RESUME to come.)
        for n in came_up {
            if let NodeRole::Host(h) = self.roles[n as usize] {
                self.nic_forget_pause(h);
                self.rx_pause(h);
                self.state_pause_check(h);
            }
        }
        let at = self.now + self.recompute_delay;
        self.reroute_at.push(at);
        self.reroute_at.sort_unstable();
        self.timers.arm(self.reroute_timer, self.reroute_at[0]);
    }

    /// Port `p`'s link fails: what is queued or in flight on it is lost.
    fn take_down(&mut self, p: u32) {
        self.links[p as usize].up = false;
        self.timers.cancel(self.link_timers[p as usize]);
        let lost: Vec<PacketId> = self.links[p as usize].in_flight.drain(..).map(|(_, id)| id).collect();
        for id in lost {
            self.lose_on_down_link(p, id);
        }
        let queued = self.ports[p as usize].drain_all(&self.pool);
        // (PFC frames, and ACKs that go ahead of the classes, `nic.ack_unpaused`: these are
        // counted as any lost packet is, PFC frames are not.)
        let control = self.ports[p as usize].drain_control(&self.pool);
        for id in control {
            self.lose_on_down_link(p, id);
        }
        for (id, class) in queued {
            match self.roles[self.ports[p as usize].node as usize] {
                NodeRole::Switch(s) => {
                    let pkt = *self.pool.get(id);
                    if self.switches[s as usize].buffer.release(pkt.ingress_port, class, pkt.size) {
                        self.resume(s, pkt.ingress_port, class);
                    }
                }
                NodeRole::Host(h) if self.pool.get(id).kind == PacketKind::Data => self.hosts[h as usize].raw_queued[class as usize] -= 1,
                NodeRole::Host(_) => {}
            }
            self.lose_on_down_link(p, id);
        }
        // A MAC's pause state does not outlive its link: the PAUSE it obeyed came over the link
        // that failed, and a RESUME sent meanwhile was lost on it (the port stayed paused
        // after the link came back, up to the 65,535 quanta of its last PAUSE). Both ends
        // forget it: a switch that still counted its PAUSE as asserted sent no other while
        // the far end, no longer paused, sent freely into a full ingress.
        let now = self.now;
        if let NodeRole::Switch(s) = self.roles[self.ports[p as usize].node as usize] {
            let iface = p - self.switches[s as usize].first_port;
            let asserted = self.switches[s as usize].asserted(iface);
            for c in (0..CLASSES).filter(|&c| asserted[c]) {
                let sw = &mut self.switches[s as usize];
                sw.buffer.clear_xoff(iface, c as u8);
                // The pause ends for the counters, with no frame: the link is down.
                sw.pause_dropped(iface, c as u8, now, &mut self.ports[p as usize]);
            }
        }
        for c in 0..CLASSES {
            if self.ports[p as usize].is_paused(c, now) {
                self.ports[p as usize].apply_pause(c as u8, now, now);
            }
        }
        if let NodeRole::Host(h) = self.roles[self.ports[p as usize].node as usize] {
            self.nic_forget_pause(h);
            self.sync_sched_pause(h);
            // The queue is empty now: applications waiting for room in it go on (they were
            // woken only by a packet leaving, which an emptied queue never sends).
            self.host_dequeued(h);
        }
    }

    /// Recomputes routes over the links that are up now.
    pub(super) fn reroute(&mut self) {
        let now = self.now;
        self.reroute_at.retain(|&t| t > now);
        if let Some(&t) = self.reroute_at.first() {
            self.timers.arm(self.reroute_timer, t);
        }
        self.routes = self.compute_routes();
        for (known, link) in self.routed_up.iter_mut().zip(&self.links) {
            *known = link.up;
        }
        self.repath();
    }

    pub(super) fn compute_routes(&self) -> Routes {
        let links = &self.links;
        Routes::compute(&self.adjacency, &self.is_host, &self.host_nodes, |p| links[p as usize].up)
    }

    /// Records every port's queue length.
    pub(super) fn sample(&mut self) {
        let Some((timer, interval)) = self.sampler else { return };
        for (i, p) in self.ports.iter().enumerate() {
            let open = self.pause_asserted_open(i as u32);
            self.record.port_sample(self.now, i as u32, p, p.counters.paused_tx_ps + open);
        }
        for nic in &self.nics {
            if let Some(st) = &nic.state {
                self.record.state_cache_sample(self.now, nic.node, st);
            }
            if let Some(o) = &nic.ordering {
                self.record.ordering_sample(self.now, nic.node, o);
            }
        }
        self.timers.arm(timer, self.now + interval);
    }
}

impl World {
    /// Time so far of the PAUSEs a switch port is asserting right now (not yet in its counters).
    pub(super) fn pause_asserted_open(&self, p: u32) -> u64 {
        let NodeRole::Switch(s) = self.roles[self.ports[p as usize].node as usize] else { return 0 };
        let sw = &self.switches[s as usize];
        sw.pause_open(p - sw.first_port, self.now)
    }
}
