//! The monolithic baseline, SE-PIEO (Tassel §2.3): WF²Q+ over all flows at once. Each active
//! flow's head packet has a start and finish time; flows not yet eligible wait in a heap by
//! start time, eligible ones in a heap by finish time; every transmitted packet is followed by
//! one fetch and one re-sort of its flow among all flows — one packet per sort.

use crate::clock::VirtualClock;
use crate::{to_kbps, tx_ps, Config, Decision, WqeSource};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, Default)]
struct Head {
    start: u64,
    finish: u64,
    len: u32,
    rate_kbps: u32,
    queued: bool,
}

pub struct Monolithic {
    flows: Vec<Head>,
    waiting: BinaryHeap<Reverse<(u64, u32)>>,
    eligible: BinaryHeap<Reverse<(u64, u32)>>,
    clock: VirtualClock,
    link_free_at: u64,
    scratch: Vec<u32>,
    /// Head packets fetched (one per packet sent, and one per wake of an idle flow).
    pub fetches: u64,
}

impl Monolithic {
    /// Bytes of scheduler state per flow: its head's times and length, and a heap entry.
    pub const STATE_BYTES_PER_FLOW: usize = std::mem::size_of::<Head>() + std::mem::size_of::<(u64, u32)>();

    /// Flow ids this scheduler has room for.
    pub fn flow_capacity(&self) -> usize {
        self.flows.len()
    }

    pub fn new(cfg: Config, flows: usize) -> Monolithic {
        let link_kbps = to_kbps(cfg.link_bps) as u64;
        Monolithic {
            flows: vec![Head { rate_kbps: link_kbps as u32, ..Default::default() }; flows],
            waiting: BinaryHeap::new(),
            eligible: BinaryHeap::new(),
            clock: VirtualClock::new(link_kbps),
            link_free_at: 0,
            scratch: Vec::new(),
            fetches: 0,
        }
    }

    /// Whether `flow` has no head packet queued (its id may then be reused).
    pub fn flow_idle(&self, flow: u32) -> bool {
        !self.flows[flow as usize].queued
    }

    /// Returns idle `flow` to a new flow's state, for reuse of its id.
    pub fn reset_flow(&mut self, flow: u32) {
        debug_assert!(self.flow_idle(flow));
        self.flows[flow as usize] = self.new_flow();
    }

    /// A new flow's state: line rate, nothing queued.
    fn new_flow(&self) -> Head {
        Head { rate_kbps: self.clock.link_kbps() as u32, ..Default::default() }
    }

    /// Makes room for flow ids below `n`.
    pub fn ensure_flows(&mut self, n: usize) {
        if self.flows.len() < n {
            self.flows.resize(n, self.new_flow());
        }
    }

    pub fn set_rate(&mut self, flow: u32, bps: u64, now: u64) {
        self.clock.advance(now);
        let h = &mut self.flows[flow as usize];
        let new = to_kbps(bps);
        if h.queued {
            self.clock.adjust_active(new as u64, h.rate_kbps as u64);
        }
        h.rate_kbps = new;
    }

    pub fn set_paused(&mut self, paused: bool, now: u64) {
        self.clock.advance(now);
        self.clock.set_paused(paused);
    }

    /// Doorbell: `flow` has packets.
    pub fn wake(&mut self, flow: u32, now: u64, src: &mut impl WqeSource) {
        self.clock.advance(now);
        if !self.flows[flow as usize].queued {
            let start = self.flows[flow as usize].finish.max(self.clock.now());
            self.load_head(flow, start, src);
        }
    }

    /// Fetches `flow`'s head packet and sorts the flow in; false if it has none.
    fn load_head(&mut self, flow: u32, start: u64, src: &mut impl WqeSource) -> bool {
        self.scratch.clear();
        src.fetch(flow, 0, 1, &mut self.scratch);
        self.fetches += self.scratch.len() as u64;
        let h = &mut self.flows[flow as usize];
        let Some(&len) = self.scratch.first() else {
            if h.queued {
                h.queued = false;
                self.clock.adjust_active(0, h.rate_kbps as u64);
            }
            return false;
        };
        if !h.queued {
            h.queued = true;
            self.clock.adjust_active(h.rate_kbps as u64, 0);
        }
        h.start = start;
        h.len = len;
        h.finish = start + tx_ps(len, h.rate_kbps);
        if start <= self.clock.now() {
            self.eligible.push(Reverse((h.finish, flow)));
        } else {
            self.waiting.push(Reverse((start, flow)));
        }
        true
    }

    pub fn poll(&mut self, now: u64, src: &mut impl WqeSource) -> Decision {
        self.clock.advance(now);
        let v = self.clock.now();
        while let Some(&Reverse((s, flow))) = self.waiting.peek() {
            if s > v {
                break;
            }
            self.waiting.pop();
            self.eligible.push(Reverse((self.flows[flow as usize].finish, flow)));
        }
        if self.clock.paused() {
            // Nothing leaves a paused port (see `Tassel::poll`).
            return Decision::Idle { until: None };
        }
        if now >= self.link_free_at {
            if let Some(Reverse((finish, flow))) = self.eligible.pop() {
                let len = self.flows[flow as usize].len;
                self.link_free_at = now + tx_ps(len, self.clock.link_kbps() as u32);
                src.consume(flow);
                self.load_head(flow, finish, src);
                return Decision::Send { flow, len };
            }
        }
        let mut until = self.waiting.peek().and_then(|&Reverse((s, _))| self.clock.real_at(s));
        if !self.eligible.is_empty() {
            until = Some(until.map_or(self.link_free_at, |u| u.min(self.link_free_at)));
        }
        Decision::Idle { until: until.map(|u| u.max(now)) }
    }
}
