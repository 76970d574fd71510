//! Run outputs: what is recorded during a run ([`Recorder`]), the tables and summary derived
//! from a finished world ([`tables`], [`Summary`]), and the directory they are written to
//! atomically ([`RunDir`]). The schema is documented in `docs/outputs.md`.

mod run_dir;
pub mod fct_compare;
pub mod hpcc_text;
pub mod paper;
pub mod stream;
pub mod summary;
pub mod tables;

pub use run_dir::{RunDir, MARKER as RUN_MARKER};
pub use summary::{Summary, TrafficSummary};

use crate::fabric::port::{Port, CLASSES};
use crate::units::Time;

/// Time series and event logs filled while the simulation runs (columns, appended in place).
#[derive(Default)]
pub struct Recorder {
    pfc_enabled: bool,
    /// PFC frames recorded but not yet written out (all of them unless streaming).
    pub pfc: PfcLog,
    pub pfc_stream: Option<PfcStream>,
    pub queues: QueueLog,
    pub rates: RateLog,
    pub state_cache: StateCacheLog,
    pub ordering: OrderingLog,
}

/// Periodic samples of every NIC's ordering layer (with `[nic.ordering]`, at the queue
/// sampler's interval): bytes in use and its answers so far.
#[derive(Default)]
pub struct OrderingLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub bytes: Vec<u64>,
    pub bitmap_bytes: Vec<u64>,
    pub sacks: Vec<u64>,
    pub nacks: Vec<u64>,
}

/// Periodic samples of every NIC's connection-state cache (with `[nic.state_cache]`, at the
/// queue sampler's interval): its counters so far and what its pipelines hold.
#[derive(Default)]
pub struct StateCacheLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub lookups: Vec<u64>,
    pub hits: Vec<u64>,
    pub misses: Vec<u64>,
    pub stall_ps: Vec<u64>,
    pub rx_drops: Vec<u64>,
    pub rx_held_bytes: Vec<u64>,
    pub tx_held_bytes: Vec<u64>,
}

/// Per-queue-pair rate and window samples, kept in memory until the end of the run.
pub struct RateLog {
    pub time: Vec<u64>,
    pub qp: Vec<u32>,
    pub src: Vec<u32>,
    pub dst: Vec<u32>,
    pub rate_bps: Vec<u64>,
    pub window: Vec<Option<u64>>,
    /// Sampling stops once this many rows are held ([`MAX_RATE_ROWS`]): how many queue pairs
    /// are active is only known as the run goes, so the scenario check cannot bound it.
    pub cap: usize,
    /// When sampling stopped at the cap (the run's warnings say so).
    pub stopped_at: Option<Time>,
}

/// The most rows `rates.parquet` holds: about 450 MB in memory.
pub const MAX_RATE_ROWS: usize = 10_000_000;

impl Default for RateLog {
    fn default() -> RateLog {
        RateLog { time: Vec::new(), qp: Vec::new(), src: Vec::new(), dst: Vec::new(), rate_bps: Vec::new(), window: Vec::new(), cap: MAX_RATE_ROWS, stopped_at: None }
    }
}

impl RateLog {
    /// The warning of a log that reached its cap.
    pub fn warning(&self) -> Option<String> {
        self.stopped_at.map(|t| format!("outputs.rate_interval: rates.parquet stops at {t}, where it reached its cap of {} rows; sample less often or over a shorter run", self.cap))
    }
}

/// Where a streaming run writes its PFC frames: `pfc.parquet`, and `pfc.txt` if asked for.
pub struct PfcStream {
    /// Frames are written out once this many are held.
    pub spill_rows: usize,
    pub table: stream::TableFile,
    pub text: Option<std::io::BufWriter<std::fs::File>>,
    /// Per node id: whether it is a switch (`pfc.txt` says).
    pub is_switch: Vec<bool>,
    pub error: Option<std::io::Error>,
}

impl PfcStream {
    fn write(&mut self, l: &PfcLog) -> std::io::Result<()> {
        self.write_text(l)?;
        self.table.write(&tables::pfc_batch(l))
    }

    /// `pfc.txt` lines for the frames of `l`, if the run writes that file.
    fn write_text(&mut self, l: &PfcLog) -> std::io::Result<()> {
        match &mut self.text {
            Some(t) => hpcc_text::write_pfc(t, l, |n| self.is_switch.get(n as usize).copied().unwrap_or(false)),
            None => Ok(()),
        }
    }
}

/// Every PFC frame received, at the port it paused or resumed.
#[derive(Default)]
pub struct PfcLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub iface: Vec<u32>,
    pub class: Vec<u8>,
    pub quanta: Vec<u16>,
}

/// Periodic samples of every port: queue length and pause state, and its counters so far.
#[derive(Default)]
pub struct QueueLog {
    pub time: Vec<u64>,
    pub node: Vec<u32>,
    pub iface: Vec<u32>,
    pub port: Vec<u32>,
    pub bytes: Vec<u64>,
    pub paused: Vec<bool>,
    pub tx_bytes: Vec<u64>,
    pub drops: Vec<u64>,
    pub ecn_marks: Vec<u64>,
    pub paused_rx_ps: Vec<u64>,
    pub paused_tx_ps: Vec<u64>,
}

impl Recorder {
    pub fn new(pfc_events: bool) -> Recorder {
        Recorder { pfc_enabled: pfc_events, ..Default::default() }
    }

    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn rate_sample(&mut self, now: Time, qp: u32, src: u32, dst: u32, rate: u64, window: Option<u64>) {
        let l = &mut self.rates;
        l.time.push(now.0);
        l.qp.push(qp);
        l.src.push(src);
        l.dst.push(dst);
        l.rate_bps.push(rate);
        l.window.push(window);
    }

    pub fn pfc_event(&mut self, now: Time, node: u32, iface: u32, class: u8, quanta: u16) {
        if self.pfc_enabled {
            let l = &mut self.pfc;
            l.time.push(now.0);
            l.node.push(node);
            l.iface.push(iface);
            l.class.push(class);
            l.quanta.push(quanta);
            if self.pfc_stream.as_ref().is_some_and(|s| l.time.len() >= s.spill_rows) {
                self.spill_pfc();
            }
        }
    }

    /// Streaming: writes the PFC frames recorded so far and forgets them.
    fn spill_pfc(&mut self) {
        let Some(st) = &mut self.pfc_stream else { return };
        if st.error.is_none() {
            if let Err(e) = st.write(&self.pfc) {
                st.error = Some(e);
            }
        }
        self.pfc = PfcLog::default();
    }

    /// Streaming: writes the frames left and closes the files.
    pub fn finish_pfc_stream(&mut self) -> std::io::Result<()> {
        let Some(mut st) = self.pfc_stream.take() else { return Ok(()) };
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        st.write_text(&self.pfc)?;
        st.table.finish(&tables::pfc(self))?;
        if let Some(mut t) = st.text.take() {
            std::io::Write::flush(&mut t)?;
        }
        Ok(())
    }

    /// Records a NIC's ordering layer at `now`.
    pub fn ordering_sample(&mut self, now: Time, node: u32, o: &crate::nic::ordering::NicOrdering) {
        let l = &mut self.ordering;
        let (bytes, bitmaps) = o.bytes();
        let c = o.counters(now);
        l.time.push(now.0);
        l.node.push(node);
        l.bytes.push(bytes);
        l.bitmap_bytes.push(bitmaps);
        l.sacks.push(c.sacks);
        l.nacks.push(c.nacks);
    }

    /// Records a NIC's connection-state cache at `now`.
    pub fn state_cache_sample(&mut self, now: Time, node: u32, st: &crate::nic::state_cache::NicStateCache) {
        let l = &mut self.state_cache;
        l.time.push(now.0);
        l.node.push(node);
        let s = st.cache.stats_at(now);
        l.lookups.push(s.lookups);
        l.hits.push(s.hits);
        l.misses.push(s.misses);
        l.stall_ps.push(s.stall_ps);
        l.rx_drops.push(st.rx_drops);
        l.rx_held_bytes.push(st.rx.bytes);
        l.tx_held_bytes.push(st.tx.bytes);
    }

    /// Records port `id` at `now`; `paused_tx_ps` is the pause its node has asserted so far.
    pub fn port_sample(&mut self, now: Time, id: u32, port: &Port, paused_tx_ps: u64) {
        let q = &mut self.queues;
        let c = &port.counters;
        q.time.push(now.0);
        q.node.push(port.node);
        q.iface.push(port.iface);
        q.port.push(id);
        q.bytes.push(port.total_bytes());
        q.paused.push((0..CLASSES).any(|k| port.is_paused(k, now)));
        q.tx_bytes.push(c.tx_bytes);
        q.drops.push(c.drops_buffer + c.drops_link_down + c.drops_corrupt);
        q.ecn_marks.push(c.ecn_marks);
        // Pause time is accounted ahead while a pause runs; sample only what has elapsed.
        q.paused_rx_ps.push(c.paused_rx_ps.saturating_sub(port.paused_beyond(now)));
        q.paused_tx_ps.push(paused_tx_ps);
    }
}
