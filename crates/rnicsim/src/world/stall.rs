//! The stall detector: a run in which nothing reached its destination for a stretch while work
//! was pending (packets alive, flows started and unfinished, queue pairs with work posted) says
//! so, with the ports and classes held by PFC and the flows left waiting. A request its
//! responder refuses for want of a posted receive (an RNR NAK) has not reached it.

use super::World;
use crate::nic::qp::QpState;
use crate::units::Time;
use serde::Serialize;

/// How long nothing must arrive before a run with pending work counts as stalled: a tenth of
/// the run, at least 100 µs, at least eight times a full packet's serialization on the
/// slowest link (`slowest_packet`), so that a slow link busy with one packet after another
/// (a full 4 KB packet takes 335 µs at 100 Mbps) is not taken for a stalled one, and at least
/// two of the scheduler's batch intervals (`batch`: Tassel's `latency`, whose queue pairs send
/// a batch per interval and wait out the rest).
pub(super) fn quiet_threshold(duration: Time, slowest_packet: Time, batch: Time) -> Time {
    Time((duration.0 / 10).max(Time::from_us(100).0).max(slowest_packet.0.saturating_mul(8)).max(batch.0.saturating_mul(2)))
}

/// A port class that is paused with packets waiting in it.
#[derive(Clone, Debug, Serialize)]
pub struct StuckPort {
    pub node: u32,
    pub iface: u32,
    pub class: u8,
    pub queued_bytes: u64,
    /// When the current pause runs out unless refreshed.
    pub paused_until_ps: u64,
}

/// What a stalled run reports (`summary.json` key `stall`, and the terminal).
#[derive(Clone, Debug, Serialize)]
pub struct Stall {
    /// The last time anything reached its destination host (0: never).
    pub since_ps: u64,
    pub packets_alive: u64,
    /// Flows started and not finished.
    pub waiting_flows: u64,
    /// The first of them (flow ids).
    pub waiting_flow_ids: Vec<u32>,
    /// Queue pairs with work posted and not completed (flows, perftests, verbs users).
    pub waiting_qps: u64,
    /// StaR connection ends with work under way (omitted when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub waiting_star_ends: u64,
    /// Requests refused for want of a posted receive (RNR NAKs) in the run so far: a sender
    /// retrying a SEND at a peer that posts no receive (with `nic.rnr_retry = 7`, forever)
    /// delivers nothing, and is stalled. Omitted when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub rnr_naks: u64,
    /// Paused port classes with packets waiting: how many, and the first 20, switch ports
    /// before host ports (a cycle of pauses among switches, a PFC deadlock, shows there; the
    /// hosts' ports it holds back follow from it).
    pub paused_count: u64,
    pub paused: Vec<StuckPort>,
    /// When `stop_on_stall` ended the run here, the time it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at_ps: Option<u64>,
}

impl World {
    /// Since when the run has been stalled, judged now: work is pending (packets alive, flows
    /// started and unfinished, queue pairs or StaR connection ends with work posted) and
    /// nothing has reached its destination for the quiet time, and for eight packet times of
    /// the slowest-paced waiting queue pair, counted from the last delivery or the last
    /// progress report that found nothing pending, whichever is later (work that starts after
    /// an idle stretch is not stalled by it; reports are at most a quarter of the quiet time
    /// apart). Cheap enough to ask at every progress report.
    pub fn stalled_since(&self) -> Option<Time> {
        let since = self.stats.last_delivery.max(self.idle_seen);
        if self.now.saturating_sub(since) < self.stall_quiet {
            return None;
        }
        if !self.work_pending() {
            return None;
        }
        // A queue pair paced far below its link (a rate limit, or congestion control holding it
        // low) sends one packet long after another: quiet is a stall only once it has lasted
        // eight of the slowest waiting queue pair's packets.
        (self.now.saturating_sub(since).0 >= self.slowest_pace().0.saturating_mul(8)).then_some(since)
    }

    /// Whether anything is under way: packets alive, flows started and unfinished, queue pairs
    /// or StaR connection ends with work posted (the cheap questions first).
    fn work_pending(&self) -> bool {
        self.pool.live() > 0 || self.apps.flows.started() > self.stats.flows_completed + self.stats.flows_failed || self.star.waiting() > 0 || self.waiting_qps() > 0
    }

    /// At a progress report: with nothing pending, quiet up to now is not a stall.
    pub(super) fn note_idle(&mut self) {
        if !self.work_pending() {
            self.idle_seen = self.now;
        }
    }

    /// The time a full data packet takes at the lowest rate any waiting queue pair is held to.
    fn slowest_pace(&self) -> Time {
        let full_packet = crate::wire::roce::full_packet_bytes(self.nic_spec.mtu);
        self.waiting()
            .map(|q| q.rate_in_force())
            .filter(|&rate| rate > 0)
            .map(|rate| crate::units::BitsPerSec(rate).tx_time(full_packet))
            .max()
            .unwrap_or(Time::ZERO)
    }

    /// The queue pairs with work posted and not completed.
    fn waiting(&self) -> impl Iterator<Item = &crate::nic::qp::Qp> {
        self.qps.iter().map(|(_, q)| q).filter(|q| q.state == QpState::Ready && !q.sq.is_empty())
    }

    fn waiting_qps(&self) -> u64 {
        self.waiting().count() as u64
    }

    /// The stall report now (at the end of a finished run: how it ended), if stalled.
    pub fn stall(&self) -> Option<Stall> {
        let since = self.stalled_since()?;
        let waiting: Vec<u32> = self.apps.flows.records.iter().filter(|r| r.status.is_none()).map(|r| r.id).collect();
        let mut paused = Vec::new();
        let mut paused_count = 0;
        for switches in [true, false] {
            for p in self.ports.iter().filter(|p| matches!(self.roles[p.node as usize], super::NodeRole::Switch(_)) == switches) {
                for c in 0..crate::fabric::port::CLASSES {
                    if p.is_paused(c, self.now) && p.queue_packets(c as u8) > 0 {
                        paused_count += 1;
                        if paused.len() < 20 {
                            paused.push(StuckPort { node: p.node, iface: p.iface, class: c as u8, queued_bytes: p.queue_bytes(c as u8), paused_until_ps: p.paused_until(c).0 });
                        }
                    }
                }
            }
        }
        let stopped_at_ps = self.stopped_at.map(|t| t.0);
        Some(Stall { since_ps: since.0, packets_alive: self.pool.live() as u64, waiting_flows: waiting.len() as u64, waiting_flow_ids: waiting.into_iter().take(10).collect(), waiting_qps: self.waiting_qps(), waiting_star_ends: self.star.waiting() as u64, rnr_naks: self.nics.iter().map(|n| n.rnr_naks).sum(), paused_count, paused, stopped_at_ps })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
