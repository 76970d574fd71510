//! Wiring of SCR ([`crate::nic::scr`]) to the event loop: a thread's timer lets it take its next
//! event; the install timer carries out decisions that have taken effect, through the same
//! control interface any subscriber uses.

use super::World;
use crate::nic::scr::policy::Action;

impl World {
    pub(super) fn scr_thread(&mut self, host: u32, thread: u32) {
        let now = self.now;
        let Some(scr) = self.tap.scr.as_mut() else { return };
        let Some(core) = scr.cores[host as usize].as_mut() else { return };
        if let Some(at) = core.run_thread(now, thread) {
            self.timers.arm_if_later(scr.thread_timers[host as usize][thread as usize], at);
        }
        if let Some(at) = core.next_install() {
            self.timers.arm_if_later(scr.install_timers[host as usize], at);
        }
    }

    pub(super) fn scr_install(&mut self, host: u32) {
        let now = self.now;
        let mut kick = false;
        loop {
            let Some(scr) = self.tap.scr.as_mut() else { return };
            let Some(a) = scr.cores[host as usize].as_mut().and_then(|c| c.pop_install(now)) else { break };
            // A queue pair that closed since the decision is left alone (the verbs refuse it).
            match a {
                Action::SetRate { flow, bps } => kick |= self.set_rate_limit(flow, bps).is_ok(),
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
                Action::Signal { flow, value, bytes } => {
                    let _ = self.send_signal(flow, value, bytes);
                }
            }
        }
        if kick {
            self.kick_host_port(host);
        }
        let scr = self.tap.scr.as_ref().expect("checked above");
        if let Some(at) = scr.cores[host as usize].as_ref().and_then(|c| c.next_install()) {
            self.timers.arm(scr.install_timers[host as usize], at);
        }
    }
}
