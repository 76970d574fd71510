//! Wires each NIC's connection-state cache ([`crate::nic::state_cache`], StaR §II-B) into its
//! pipelines: an arriving packet is looked up and waits in the receive buffer until its
//! connection's state is on the NIC; a scheduled packet waits for its state before the wire; a
//! miss that finds every fetch slot busy stalls its pipeline. In pause mode the NIC sends PFC
//! PAUSE to its switch while the receive buffer is above its high mark.

use super::World;
use crate::nic::rx_buffer::pause_frame;
use crate::nic::state_cache::WhenFull;
use crate::wire::packet::PacketId;
use crate::units::Time;

impl World {
    /// A RoCE packet reached host `h`'s NIC, which has a limited state cache. Returns whether
    /// it goes on to the transport now; otherwise it is held for its state or was dropped.
    pub(super) fn state_rx(&mut self, h: u32, id: PacketId) -> bool {
        let now = self.now;
        // Held packets whose state is on the NIC by now go first: the timer that releases them
        // may come later in this same instant, and an arrival that hits the state they waited
        // for must not overtake them (a connection's packets keep their order).
        // The timer would also have woken the port for a transmit packet ready by now; a hold
        // below may move that timer later.
        if self.state_release(h) {
            self.state_wake_tx(h);
        }
        let pkt = self.pool.get(id);
        let (q, size, src) = (pkt.flow, pkt.size, pkt.src);
        let (q, known) = if pkt.kind == crate::wire::packet::PacketKind::Star {
            (crate::nic::star::STAR_HANDLE | q, self.star_known(q, h, src))
        } else {
            (q, self.qps.accepts(q, h, src))
        };
        let st = self.nics[h as usize].state.as_mut().expect("a NIC with a state cache");
        if st.rx.bytes + size as u64 > st.spec.rx_buffer.0 {
            st.rx_drops += 1;
            self.pool.free(id);
            return false;
        }
        let at = now.max(st.rx_resume);
        // Packets of no open connection need no state: the transport drops them.
        let ready = if known {
            let l = st.cache.lookup(q, at, now);
            st.rx_resume = st.rx_resume.max(l.resume);
            l.ready
        } else {
            at
        };
        if ready <= now {
            return true;
        }
        st.rx.push(ready, id, size);
        self.state_rearm(h);
        self.state_pause_check(h);
        false
    }

    /// Host `h`'s NIC scheduled packet `id` of queue pair `q`: returns it if its state is on
    /// the NIC now; otherwise holds it until it is.
    pub(super) fn state_tx(&mut self, h: u32, q: u32, id: PacketId) -> Option<PacketId> {
        let now = self.now;
        let st = self.nics[h as usize].state.as_mut().expect("a NIC with a state cache");
        let l = st.tx_lookup(q, now);
        if l.ready <= now {
            return Some(id);
        }
        st.tx.push(l.ready, id, self.pool.get(id).size);
        self.state_rearm(h);
        None
    }

    /// Whether host `h`'s transmit pipeline must wait before the scheduler may pick again (a
    /// stall, or as many bytes held for their state as the pipeline holds); if so, until when.
    pub(super) fn state_tx_blocked(&self, h: u32) -> Option<Time> {
        let st = self.nics[h as usize].state.as_ref()?;
        let now = self.now;
        let limit = self.hold_limit();
        let next = st.tx.next_ready();
        if st.tx_resume > now {
            return Some(next.map_or(st.tx_resume, |t| t.min(st.tx_resume)));
        }
        (st.tx.bytes >= limit).then(|| next.unwrap_or(now))
    }

    /// A held packet of host `h`'s transmit pipeline whose state is on the NIC now.
    #[inline]
    pub(super) fn state_tx_ready(&mut self, h: u32) -> Option<PacketId> {
        let now = self.now;
        let id = self.nics[h as usize].state.as_mut()?.tx.pop_ready(now)?;
        self.state_rearm(h);
        Some(id)
    }

    /// Host `h`'s state-cache timer: held packets whose state arrived go on.
    pub(super) fn state_timer(&mut self, h: u32) {
        self.state_release(h);
        self.rx_check(h);
        self.state_wake_tx(h);
        self.state_pause_check(h);
        self.state_rearm(h);
    }

    /// Delivers host `h`'s held received packets whose state is on the NIC by now, in order;
    /// returns whether there were any.
    fn state_release(&mut self, h: u32) -> bool {
        let now = self.now;
        let mut released = false;
        while let Some(id) = self.nics[h as usize].state.as_mut().and_then(|st| st.rx.pop_ready(now)) {
            self.nic_deliver(h, id);
            released = true;
        }
        released
    }

    /// Wakes host `h`'s port if a held transmit packet's state is on the NIC by now.
    fn state_wake_tx(&mut self, h: u32) {
        if self.nics[h as usize].state.as_ref().and_then(|st| st.tx.next_ready()).is_some_and(|t| t <= self.now) {
            self.kick_host_port(h);
        }
    }

    /// Arms host `h`'s state-cache timer for the next held packet to become ready: received
    /// ones are released by the timer; a transmit one that is ready already waits for the
    /// port to pull it (the port looks whenever it has room), so only a later one needs a wake.
    fn state_rearm(&mut self, h: u32) {
        let now = self.now;
        let Some(st) = &self.nics[h as usize].state else { return };
        let tx = st.tx.next_ready().filter(|&t| t > now);
        let next = [st.rx.next_ready(), tx].into_iter().flatten().min();
        match next {
            Some(t) => {
                let t = t.max(self.now);
                if self.timers.deadline(st.timer) != Some(t) {
                    self.timers.arm(st.timer, t);
                }
            }
            None => self.timers.cancel(st.timer),
        }
    }

    /// Pause mode: PAUSE the data class at the link partner while the receive buffer is above
    /// its high mark (refreshed before it runs out), RESUME once it is below its low mark.
    pub(super) fn state_pause_check(&mut self, h: u32) {
        let now = self.now;
        let (pfc_quanta, full) = self.nic_pause(h);
        let Some(st) = self.nics[h as usize].state.as_mut() else { return };
        if st.spec.when_full != WhenFull::Pause {
            return;
        }
        let Some(quanta) = pause_frame(st.paused_until, st.rx.bytes, st.pause_marks(), now, full, pfc_quanta) else { return };
        st.paused_until = (quanta > 0).then(|| now + full);
        st.pauses_sent += (quanta > 0) as u64;
        self.nic_send_pfc(h, quanta);
    }
}
