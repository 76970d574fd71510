//! Plain packet sources and sinks for fabric-only studies (`[[traffic]]`), below the RDMA
//! transport: a source paces packets at a fraction of its link rate (evenly or as a Poisson
//! process) and backs off while its NIC queue is full, as a NIC would when the fabric pauses it;
//! the sink records per-flow delivery.

use super::{Application, SOURCES};
use crate::fabric::lb::flow_hash;
use crate::scenario::schema::{Arrival, Pattern};
use crate::scenario::{LoadedScenario, ScenarioError};
use crate::sim::rng::{self, det_ln, Rng};
use crate::sim::TimerId;
use crate::units::Time;
use crate::wire::packet::{Packet, PacketKind, ECN_CE, ECN_ECT0, ECN_NOT_ECT, TTL};
use crate::world::World;
use rand::Rng as _;

/// How many raw packets of one class a host NIC queue holds before its sources wait. The RDMA
/// packets the transmit pipeline (`nic.tx_pipeline`) queues in the same class do not take its
/// room: on a NIC they are a queue of their own, which the port's FIFO class queue here merges
/// with the raw one, and a source held to eight packets behind a full pipeline would get eight
/// packets per pipeline drain time, far below its rate.
pub const NIC_QUEUE_PACKETS: u32 = 8;

/// One sender of a traffic entry (a flow from `src` to `dst`).
pub struct Source {
    pub traffic: u32,
    pub src: u32,
    pub dst: u32,
    pub dst_host: u32,
    /// The host's egress port.
    pub port: u32,
    pub size: u32,
    pub priority: u8,
    pub ecn: u8,
    pub udp_sport: u16,
    pub flow_hash: u32,
    /// Mean gap between packets.
    pub gap: Time,
    pub poisson: bool,
    pub rng: Rng,
    pub stop: Time,
    pub byte_limit: u64,
    pub timer: TimerId,
    pub done: bool,
    pub sent_packets: u64,
    pub sent_bytes: u64,
}

impl Source {
    /// The gap to the next packet.
    pub fn next_gap(&mut self) -> Time {
        if !self.poisson {
            return self.gap;
        }
        let u: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
        Time((self.gap.0 as f64 * -det_ln(u)).round() as u64)
    }
}

/// What a sink saw of one flow.
#[derive(Clone, Copy, Debug)]
pub struct FlowStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub first_rx: Time,
    pub last_rx: Time,
    pub latency_sum: u128,
    pub latency_min: Time,
    pub latency_max: Time,
    pub ecn_ce: u64,
}

impl Default for FlowStats {
    fn default() -> Self {
        FlowStats { rx_packets: 0, rx_bytes: 0, first_rx: Time::ZERO, last_rx: Time::ZERO, latency_sum: 0, latency_min: Time::MAX, latency_max: Time::ZERO, ecn_ce: 0 }
    }
}

impl FlowStats {
    pub fn record(&mut self, now: Time, sent_at: Time, bytes: u32, ce: bool) {
        if self.rx_packets == 0 {
            self.first_rx = now;
        }
        self.rx_packets += 1;
        self.rx_bytes += bytes as u64;
        self.last_rx = now;
        let lat = now - sent_at;
        self.latency_sum += lat.0 as u128;
        self.latency_min = self.latency_min.min(lat);
        self.latency_max = self.latency_max.max(lat);
        self.ecn_ce += ce as u64;
    }
}

/// The traffic entries of a scenario: one source per (sender, receiver), and what each sink saw.
#[derive(Default)]
pub struct Sources {
    pub list: Vec<Source>,
    pub stats: Vec<FlowStats>,
}

impl Sources {
    /// Expands every traffic entry into one source per (sender, receiver), first packets armed.
    pub fn build(w: &mut World, loaded: &LoadedScenario) -> Result<Sources, ScenarioError> {
        let s = &loaded.scenario;
        let mut out = Sources::default();
        let hosts = w.host_nodes().to_vec();
        for (ti, t) in s.traffic.iter().enumerate() {
            let pairs: Vec<(u32, u32)> = match &t.pattern {
                Pattern::Permutation => {
                    let perm = rng::derangement(&hosts, &mut rng::stream(s.seed, "permutation", ti as u64));
                    hosts.iter().copied().zip(perm).collect()
                }
                Pattern::Incast { receiver, senders } => match senders {
                    Some(list) => list.iter().map(|&h| (h, *receiver)).collect(),
                    None => hosts.iter().filter(|&&h| h != *receiver).map(|&h| (h, *receiver)).collect(),
                },
                Pattern::Pairs { pairs } => pairs.iter().map(|&[a, b]| (a, b)).collect(),
            };
            for (src, dst) in pairs {
                let dst_host = w.host_of(dst).expect("validated as a host");
                let Some(port) = w.host_port(src) else {
                    return Err(loaded.error_at(&format!("traffic[{ti}].pattern"), format!("host {src} has no link to send on")));
                };
                let id = out.list.len() as u32;
                let mut r = rng::stream(s.seed, "source", id as u64);
                let udp_sport = 49152 + r.random_range(0..16384u16);
                let rate = w.ports[port as usize].rate.scaled(t.load);
                if rate.0 == 0 {
                    return Err(loaded.error_at(&format!("traffic[{ti}].load"), format!("{} of host {src}'s {} link is below 1 bit/s", t.load, w.ports[port as usize].rate)));
                }
                let mut source = Source {
                    traffic: ti as u32,
                    src,
                    dst,
                    dst_host,
                    port,
                    size: t.packet_size.0 as u32,
                    priority: t.priority,
                    ecn: if t.ecn_capable { ECN_ECT0 } else { ECN_NOT_ECT },
                    udp_sport,
                    flow_hash: flow_hash(src, dst, udp_sport, 4791),
                    gap: rate.tx_time(t.packet_size.0).max(Time(1)),
                    poisson: t.arrival == Arrival::Poisson,
                    rng: r,
                    stop: t.stop.unwrap_or(s.duration).min(s.duration),
                    byte_limit: t.bytes.map_or(u64::MAX, |b| b.0),
                    timer: w.add_app_timer(SOURCES, id),
                    done: false,
                    sent_packets: 0,
                    sent_bytes: 0,
                };
                let first = if source.poisson { t.start + source.next_gap() } else { t.start };
                w.arm(source.timer, first);
                out.list.push(source);
                out.stats.push(FlowStats::default());
            }
        }
        Ok(out)
    }
}

impl Application for Sources {
    /// A source's timer: emit one packet if the NIC queue has room, then schedule the next.
    fn on_timer(&mut self, w: &mut World, s: u32) {
        let now = w.now;
        let src = &mut self.list[s as usize];
        if src.done || now >= src.stop {
            src.done = true;
            return;
        }
        if w.raw_queue_full(src.port, src.priority, NIC_QUEUE_PACKETS) {
            // Woken again when the host's port sends a packet.
            w.wake_on_room(src.port, src.timer);
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
            ttl: TTL,
            roce: Default::default(),
        };
        src.sent_packets += 1;
        src.sent_bytes += src.size as u64;
        w.enqueue_raw(src.port, pkt);
        if src.sent_bytes >= src.byte_limit {
            src.done = true;
        } else {
            let next = now + src.next_gap();
            if next < src.stop {
                w.arm(src.timer, next);
            } else {
                src.done = true;
            }
        }
        w.start_port(src.port);
    }

    /// The sink: a data packet reached its destination host.
    #[inline]
    fn on_packet(&mut self, now: Time, pkt: &Packet) {
        self.stats[pkt.flow as usize].record(now, pkt.sent_at, pkt.size, pkt.ecn == ECN_CE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_stats_latency() {
        let mut f = FlowStats::default();
        f.record(Time(100), Time(40), 1000, false);
        f.record(Time(200), Time(100), 1000, true);
        assert_eq!((f.rx_packets, f.rx_bytes, f.ecn_ce), (2, 2000, 1));
        assert_eq!((f.latency_min, f.latency_max, f.latency_sum), (Time(60), Time(100), 160));
        assert_eq!((f.first_rx, f.last_rx), (Time(100), Time(200)));
    }
}
