//! Host wiring: room in a host port's queue wakes the applications waiting for it; raw packets
//! reach their sink; queue-pair rate sampling and packet capture.

use super::World;
use crate::host::apps::Application;
use crate::wire::packet::PacketId;

impl World {
    /// A host's NIC sent a packet: applications waiting for room in its queue go on.
    #[inline]
    pub(super) fn host_dequeued(&mut self, h: u32) {
        if self.hosts[h as usize].room_waiters.is_empty() {
            return;
        }
        let mut waiting = std::mem::take(&mut self.hosts[h as usize].room_waiters);
        for &t in &waiting {
            self.timers.arm(t, self.now);
        }
        waiting.clear();
        self.hosts[h as usize].room_waiters = waiting;
    }

    /// A raw data packet reaches its destination host: its sink records it.
    #[inline]
    pub(super) fn host_receive(&mut self, id: PacketId) {
        self.stats.packets_delivered += 1;
        self.stats.last_delivery = self.now;
        self.apps.sources.on_packet(self.now, self.pool.get(id));
        self.pool.free(id);
    }
}

impl World {
    /// Records every queue pair's rate and window.
    pub(super) fn sample_rates(&mut self) {
        let Some((timer, interval)) = self.rate_sampler else { return };
        if self.record.rates.time.len() >= self.record.rates.cap {
            self.record.rates.stopped_at = Some(self.now);
            return;
        }
        for (i, qp) in self.qps.iter() {
            // A queue pair with sends unacknowledged, or READ responses to send (a responder's
            // rate governs them).
            if qp.state == crate::nic::qp::QpState::Ready && (qp.snd_una < qp.next_psn || !qp.reads.is_empty()) {
                use crate::nic::cc::CongestionControl;
                self.record.rate_sample(self.now, i, qp.node, qp.peer_node, qp.cc.rate().0, qp.cc.window());
            }
        }
        self.timers.arm(timer, self.now + interval);
    }

    /// Keeps a copy of a packet leaving a captured port.
    #[inline(always)]
    pub(super) fn capture(&mut self, p: u32, id: PacketId) {
        if !self.capture_ports.is_empty() && self.capture_ports[p as usize] {
            self.capture_packet(p, id);
        }
    }

    #[cold]
    #[inline(never)]
    fn capture_packet(&mut self, p: u32, id: PacketId) {
        let packet = *self.pool.get(id);
        let payload = match packet.kind {
            crate::wire::packet::PacketKind::Star => self.pool.star(id).udp_payload(self.pool.payload(id), packet.size - crate::wire::star::FRAME_OVERHEAD),
            _ => self.pool.payload(id).to_vec(),
        };
        self.capture.push(crate::wire::pcap::Captured { at: self.now, port: p, packet, payload });
    }
}
