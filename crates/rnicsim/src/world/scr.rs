//! Wiring of SCR ([`crate::nic::scr`]) to the event loop: one timer per processor, armed when
//! it is due ([`crate::nic::scr::processor::ScrCore::due`]), lets its runs catch up and carries
//! out the decisions that have taken effect, through the same control interface any subscriber
//! uses.

use super::World;
use crate::nic::scr::policy::external::{External, ExternalPolicy};
use crate::nic::scr::policy::Action;
use crate::nic::scr::processor::Processor;

impl World {
    /// Hands each SCR NIC an outside policy (`[nic.scr.policy.external]`): `make(host node)`.
    /// Returns how many NICs took one; an error if the scenario's policy is not `external`.
    pub fn set_scr_policy(&mut self, mut make: impl FnMut(u32) -> Box<dyn ExternalPolicy>) -> Result<u32, String> {
        let nodes = self.host_nodes().to_vec();
        let Some(scr) = self.tap.scr.as_mut() else { return Err("the scenario has no [nic.scr]".into()) };
        let mut n = 0;
        for (h, core) in scr.cores.iter_mut().enumerate() {
            let Some(core) = core else { continue };
            let Some(p) = core.as_any_mut().downcast_mut::<Processor<External>>() else {
                return Err(format!("the scenario's SCR policy is `{}`; an outside policy needs [nic.scr.policy.external]", core.policy_name()));
            };
            p.policy.inner = make(nodes[h]);
            p.policy.set = true;
            n += 1;
        }
        Ok(n)
    }

    /// Whether a NIC runs `[nic.scr.policy.external]` with no policy handed over yet.
    pub fn scr_policy_missing(&self) -> bool {
        self.tap.scr.iter().flat_map(|s| s.cores.iter().flatten()).any(|c| c.as_any().downcast_ref::<Processor<External>>().is_some_and(|p| !p.policy.set))
    }

    /// Every SCR processor's runs due by now are done (at the end of a run, before its
    /// counters are read).
    pub(super) fn scr_catch_up(&mut self) {
        let now = self.now;
        for core in self.tap.scr.iter_mut().flat_map(|s| s.cores.iter_mut().flatten()) {
            core.advance(now);
        }
    }

    /// `nic.scr.warmup` is over: every processor's runs due by now are done, and its counters
    /// are kept as the window's baseline.
    pub(super) fn scr_warmup_over(&mut self) {
        self.scr_catch_up();
        let Some(scr) = self.tap.scr.as_mut() else { return };
        let now = self.now;
        for (b, core) in scr.baseline.iter_mut().zip(&scr.cores) {
            // Runs under way now count in the window for the part after it, and so do the
            // events waiting in the queues, which the window handles.
            *b = core.as_ref().map(|c| {
                let mut s = c.stats().clone();
                s.busy_ps = s.busy_ps.saturating_sub(c.busy_after(now));
                for (collected, waiting) in s.collected.iter_mut().zip(c.waiting()) {
                    *collected -= waiting;
                }
                s
            });
        }
    }

    /// A host's telemetry timer (`nic.scr.telemetry`): PCIe readings whose pong is back go to
    /// the processor; if a sample is due, the counters are read, the port's reading goes to the
    /// processor at once and the PCIe one waits for its ping-pong.
    pub(super) fn scr_telemetry(&mut self, host: u32) {
        let now = self.now;
        let h = host as usize;
        let Some(period) = self.nic_spec.scr.as_ref().and_then(|s| s.telemetry) else { return };
        let mut raised = Vec::new();
        let Some(scr) = self.tap.scr.as_mut() else { return };
        let meter = &mut scr.meters[h];
        while meter.pending.front().is_some_and(|e| e.at <= now) {
            raised.extend(meter.pending.pop_front());
        }
        if meter.next <= now {
            let nic = &mut self.nics[h];
            let port = &self.ports[nic.port as usize];
            let rx = self.ports[port.peer as usize].tx_bytes_by(now);
            let r = crate::nic::scr::telemetry::Readings { pcie_read_busy: nic.pcie.read.busy_by(now), pcie_write_busy: nic.pcie.write.busy_by(now), port_tx: port.tx_bytes_by(now), port_rx: rx };
            let rtt = nic.pcie.ping_pong(now);
            let sample = meter.sample(now, r, rtt, nic.line_rate);
            scr.telemetry_log.push(crate::nic::scr::telemetry::Row::new(nic.node, &sample));
            let [pcie, port] = sample;
            raised.push(port);
            meter.pending.push_back(pcie);
            meter.next = now + period;
        }
        let next = meter.pending.front().map_or(meter.next, |e| e.at.min(meter.next));
        self.timers.arm(scr.telemetry_timers[h].expect("a telemetry timer fired"), next);
        let Some(core) = scr.cores[h].as_mut() else { return };
        for e in raised {
            if let Some(at) = core.collect_node(now, e) {
                self.timers.arm_if_later(scr.timers[h], at);
            }
        }
    }

    /// A host's SCR processor is due: its runs catch up with now, and the decisions that
    /// take effect by now are carried out.
    pub(super) fn scr_due(&mut self, host: u32) {
        let now = self.now;
        let mut kick = false;
        if let Some(core) = self.tap.scr.as_mut().and_then(|s| s.cores[host as usize].as_mut()) {
            core.advance(now);
        }
        loop {
            let Some(scr) = self.tap.scr.as_mut() else { return };
            let Some(a) = scr.cores[host as usize].as_mut().and_then(|c| c.pop_install(now)) else { break };
            // A queue pair that closed since the decision is left alone (the verbs refuse it),
            // and so is one of another NIC: a NIC's cores reach only its own queue pairs (an
            // external policy can name any number; it set another host's rate).
            if !matches!(a, Action::Wake { .. }) && self.qps.find(a.flow()).is_none_or(|q| q.host != host) {
                continue;
            }
            match a {
                Action::SetRate { flow, bps } => {
                    if self.set_dequeue_rate(flow, bps).is_ok() {
                        kick = true;
                        let scr = self.tap.scr.as_mut().expect("checked above");
                        let node = scr.nodes[host as usize];
                        scr.rate_log.push(now, crate::nic::scr::RateSet { time: now, node, qp: flow, bps });
                        if let Some(core) = scr.cores[host as usize].as_mut() {
                            core.rate_in_force(now);
                        }
                    }
                }
                Action::ProbeRtt { flow } => {
                    if self.qps.find(flow).is_some() {
                        self.transport().request_rtt_probe(flow);
                    }
                }
                Action::SetSport { flow, sport } => {
                    let _ = self.set_udp_sport(flow, sport);
                }
                Action::ProbePath { flow, sport } => {
                    let _ = self.send_path_probe(flow, sport);
                }
                // The processor keeps its wake-ups on its own timeline.
                Action::Wake { .. } => {}
                Action::Signal { flow, value, bytes } => {
                    let _ = self.send_signal(flow, value, bytes);
                }
            }
        }
        if kick {
            self.kick_host_port(host);
        }
        let scr = self.tap.scr.as_ref().expect("checked above");
        if let Some(at) = scr.cores[host as usize].as_ref().and_then(|c| c.due()) {
            self.timers.arm(scr.timers[host as usize], at);
        }
    }
}
