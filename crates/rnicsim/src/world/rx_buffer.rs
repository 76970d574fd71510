//! Wires each NIC's receive buffer ([`crate::nic::rx_buffer`]) to its port: an arrival with
//! payload that does not fit is dropped; in pause mode the NIC sends PFC PAUSE to its switch
//! while the buffer is above its high mark and RESUME once it drains below its low mark.

use super::{World, PFC_FRAME_BYTES};
use crate::fabric::switch::{pause_quanta, pause_time};
use crate::units::Time;
use crate::nic::rx_buffer::{drained_to, held, idle, pause_frame};
use crate::nic::state_cache::WhenFull;
use crate::wire::packet::{Packet, PacketId, PacketKind};

impl World {
    /// Whether host `h`'s NIC takes packet `id` into its receive buffer; if not, it is dropped
    /// and counted. The buffer holds the write channels' backlog (packets the state cache holds
    /// for their state are in its own buffer).
    #[inline]
    pub(super) fn rx_admit(&mut self, h: u32, id: PacketId) -> bool {
        let nic = &self.nics[h as usize];
        let now = self.now;
        if idle(&nic.pcie, nic.gpu.as_ref(), now) {
            return true;
        }
        // RoCE and StaR packets carry their data bytes in `roce.payload` (none for ACKs, NAKs,
        // CNPs, READ requests, GDs).
        let pkt = self.pool.get(id);
        let payload = if matches!(pkt.kind, PacketKind::Roce | PacketKind::Star) { pkt.roce.payload as u64 } else { 0 };
        if payload == 0 {
            return true;
        }
        let nic = &mut self.nics[h as usize];
        if held(&nic.pcie, nic.gpu.as_ref(), now) + payload <= nic.rx.capacity {
            return true;
        }
        nic.rx.drops += 1;
        self.pool.free(id);
        false
    }

    /// After host `h`'s NIC took a packet in (or its buffer's timer fired): records the
    /// buffer's peak and, in pause mode, pauses or resumes the link partner.
    #[inline]
    pub(super) fn rx_check(&mut self, h: u32) {
        let nic = &self.nics[h as usize];
        let now = self.now;
        if nic.rx.paused_until.is_none() && idle(&nic.pcie, nic.gpu.as_ref(), now) {
            return;
        }
        self.rx_pause(h);
    }

    /// Host `h`'s receive-buffer timer.
    pub(super) fn rx_timer(&mut self, h: u32) {
        self.rx_pause(h);
    }

    /// The quanta of a PAUSE host `h`'s NIC sends, and how long it holds: `switch.pfc.pause_time`
    /// at the NIC's link rate when set (as each switch port converts it), else `switch.pfc.quanta`.
    pub(super) fn nic_pause(&self, h: u32) -> (u16, Time) {
        let rate = self.ports[self.nics[h as usize].port as usize].rate.0;
        let quanta = match self.pfc_pause_time {
            Some(t) => pause_quanta(t, rate),
            None => self.pfc_quanta,
        };
        (quanta, pause_time(quanta, rate))
    }

    pub(super) fn rx_pause(&mut self, h: u32) {
        let now = self.now;
        let nic = &mut self.nics[h as usize];
        let in_buffer = held(&nic.pcie, nic.gpu.as_ref(), now);
        nic.rx.peak = nic.rx.peak.max(in_buffer);
        if nic.rx.mode != WhenFull::Pause {
            return;
        }
        // (Only a pausing NIC needs its frame's quanta: a 128-bit division at most arrivals.)
        let (pfc_quanta, full) = self.nic_pause(h);
        let nic = &mut self.nics[h as usize];
        let Some(quanta) = pause_frame(nic.rx.paused_until, in_buffer, nic.rx.pause_marks(), now, full, pfc_quanta) else {
            // A pause held, its refresh not yet due.
            if nic.rx.paused_until.is_some() {
                self.rx_rearm(h);
            }
            return;
        };
        nic.rx.paused_until = (quanta > 0).then(|| now + full);
        nic.rx.pauses_sent += (quanta > 0) as u64;
        self.nic_send_pfc(h, quanta);
        self.rx_rearm(h);
    }

    /// Host `h`'s NIC sends PAUSE (`quanta > 0`) or RESUME for the classes it pauses
    /// ([`crate::nic::rx_buffer::pause_classes`]) to its link partner, for its receive buffer or
    /// its state cache's, whichever asked (each records its own pause first). A RESUME waits
    /// while the other still holds the link paused. The port counts pauses and paused time as a
    /// switch's does.
    pub(super) fn nic_send_pfc(&mut self, h: u32, quanta: u16) {
        let now = self.now;
        let nic = &mut self.nics[h as usize];
        let p = nic.port as usize;
        let counters = &mut self.ports[p].counters;
        if quanta > 0 {
            if nic.pfc_since.is_none() {
                nic.pfc_since = Some(now);
                counters.pause_tx += 1;
            }
        } else {
            if nic.rx.paused_until.is_some() || nic.state.as_ref().is_some_and(|s| s.paused_until.is_some()) {
                return;
            }
            let Some(since) = nic.pfc_since.take() else { return };
            counters.paused_tx_ps += (now - since).0;
            counters.resume_tx += 1;
        }
        let classes = nic.pfc_classes;
        for class in (0..8u8).filter(|c| classes & 1 << c != 0) {
            let id = self.pool.alloc(Packet::pause(class, quanta, PFC_FRAME_BYTES));
            self.stats.pfc_frames_sent += 1;
            self.ports[p].enqueue_control(id, &mut self.pool);
        }
        self.kick_host_port(h);
    }

    /// Host `h`'s NIC forgets the PAUSE it asserted (for its receive buffer and its state
    /// cache's): its link failed, and with it the pause the switch obeyed. The time paused is
    /// counted as a RESUME would count it; no frame goes out.
    pub(super) fn nic_forget_pause(&mut self, h: u32) {
        let now = self.now;
        let nic = &mut self.nics[h as usize];
        nic.rx.paused_until = None;
        if let Some(st) = nic.state.as_mut() {
            st.paused_until = None;
        }
        if let Some(since) = nic.pfc_since.take() {
            let counters = &mut self.ports[nic.port as usize].counters;
            counters.paused_tx_ps += (now - since).0;
            counters.resume_tx += 1;
        }
        self.rx_rearm(h);
    }

    /// Arms host `h`'s receive-buffer timer while it pauses its link partner: for when the
    /// write channels drain to the resume mark, or the pause needs refreshing, whichever comes
    /// first.
    fn rx_rearm(&mut self, h: u32) {
        let now = self.now;
        let (_, full) = self.nic_pause(h);
        let nic = &self.nics[h as usize];
        let Some(timer) = nic.rx.timer else { return };
        let Some(until) = nic.rx.paused_until else {
            self.timers.cancel(timer);
            return;
        };
        let (_, low) = nic.rx.pause_marks();
        let refresh = until.saturating_sub(Time(full.0 / 2)).max(now);
        let drained = drained_to(&nic.pcie, nic.gpu.as_ref(), now, low);
        let at = if drained > now { drained.min(refresh) } else { refresh };
        if self.timers.deadline(timer) != Some(at) {
            self.timers.arm(timer, at);
        }
    }
}
