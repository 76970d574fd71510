//! Host handlers: packet sources emit into their NIC queue; sinks record what arrives.

use super::World;
use crate::wire::packet::{Packet, PacketId, PacketKind, ECN_CE};
use crate::host::NIC_QUEUE_PACKETS;

impl World {
    /// A source's timer: emit one packet if the NIC queue has room, then schedule the next.
    pub(super) fn source_fire(&mut self, s: u32) {
        let now = self.now;
        let src = &mut self.sources[s as usize];
        if src.done || now >= src.stop {
            src.done = true;
            return;
        }
        let port = &mut self.ports[src.port as usize];
        if port.queue_packets(src.priority) >= NIC_QUEUE_PACKETS {
            if !src.blocked {
                src.blocked = true;
                let super::NodeRole::Host(h) = self.roles[port.node as usize] else { unreachable!("sources sit on hosts") };
                self.hosts[h as usize].blocked.push(s);
            }
            return;
        }
        let pkt = Packet {
            kind: PacketKind::Data,
            src: src.src,
            dst: src.dst,
            dst_host: src.dst_host,
            size: src.size,
            priority: src.priority,
            ecn: src.ecn,
            udp_sport: src.udp_sport,
            udp_dport: 4791,
            flow_hash: src.flow_hash,
            flow: s,
            seq: src.sent_packets,
            sent_at: now,
            ingress_port: u32::MAX,
            roce: Default::default(),
        };
        let id = self.pool.alloc(pkt);
        src.sent_packets += 1;
        src.sent_bytes += src.size as u64;
        self.stats.packets_sent += 1;
        port.enqueue(src.priority, id, src.size);
        if src.sent_bytes >= src.byte_limit {
            src.done = true;
        } else {
            let next = now + src.next_gap();
            if next < src.stop {
                self.timers.arm(src.timer, next);
            } else {
                src.done = true;
            }
        }
        let p = src.port;
        self.port_start(p);
    }

    /// A host's NIC sent a packet: sources waiting for room may go on.
    #[inline]
    pub(super) fn host_dequeued(&mut self, h: u32) {
        if self.hosts[h as usize].blocked.is_empty() {
            return;
        }
        let mut waiting = std::mem::take(&mut self.hosts[h as usize].blocked);
        for &s in &waiting {
            let src = &mut self.sources[s as usize];
            src.blocked = false;
            self.timers.arm(src.timer, self.now);
        }
        waiting.clear();
        self.hosts[h as usize].blocked = waiting;
    }

    /// A data packet reaches its destination host.
    #[inline]
    pub(super) fn host_receive(&mut self, id: PacketId) {
        let pkt = *self.pool.get(id);
        self.pool.free(id);
        self.stats.packets_delivered += 1;
        self.source_stats[pkt.flow as usize].record(self.now, pkt.sent_at, pkt.size, pkt.ecn == ECN_CE);
    }
}

impl World {
    /// Records every queue pair's rate and window.
    pub(super) fn sample_rates(&mut self) {
        let Some((timer, interval)) = self.rate_sampler else { return };
        for (i, qp) in self.qps.iter() {
            if qp.state == crate::nic::qp::QpState::Ready && qp.snd_una < qp.next_psn {
                use crate::nic::cc::CongestionControl;
                self.record.rate_sample(self.now, i, qp.node, qp.peer_node, qp.cc.rate().0, qp.cc.window());
            }
        }
        self.timers.arm(timer, self.now + interval);
    }

    /// Keeps a copy of a packet leaving a captured port.
    #[inline]
    pub(super) fn capture(&mut self, p: u32, id: PacketId) {
        if self.capture_ports.is_empty() || !self.capture_ports[p as usize] {
            return;
        }
        let packet = *self.pool.get(id);
        let payload = self.pool.payload(id).to_vec();
        self.capture.push(crate::wire::pcap::Captured { at: self.now, port: p, packet, payload });
    }
}
