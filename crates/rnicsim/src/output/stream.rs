//! Streamed outputs: the tables that grow with simulated time (one row per flow, one per PFC
//! frame) go to the run folder in row groups while the run goes on, so a run's memory does not
//! grow with its length; the rest is written when it ends. A world that is not streaming (the
//! library's default, and the tests') keeps everything in memory until
//! [`crate::write_outputs`].

use crate::host::apps::flows::FlowRecord;
use crate::units::Time;
use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Rows a growing table keeps in memory before they are written out as a row group.
pub const SPILL_ROWS: usize = 1 << 14;

/// The writer properties of every Parquet file a run writes.
pub fn parquet_properties() -> WriterProperties {
    WriterProperties::builder().set_compression(parquet::basic::Compression::SNAPPY).set_created_by("rnicsim".into()).build()
}

/// A Parquet file written one row group per [`TableFile::write`].
pub struct TableFile {
    path: PathBuf,
    writer: Option<ArrowWriter<File>>,
}

impl TableFile {
    pub fn new(path: PathBuf) -> TableFile {
        TableFile { path, writer: None }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> io::Result<()> {
        if self.writer.is_none() {
            let file = File::create(&self.path)?;
            self.writer = Some(ArrowWriter::try_new(file, batch.schema(), Some(parquet_properties())).map_err(io::Error::other)?);
        }
        let w = self.writer.as_mut().expect("created above");
        w.write(batch).map_err(io::Error::other)?;
        // End the row group here: its rows leave memory.
        w.flush().map_err(io::Error::other)
    }

    /// Writes the last rows (the first, if nothing was written yet) and closes the file.
    pub fn finish(mut self, last: &RecordBatch) -> io::Result<()> {
        self.write(last)?;
        self.writer.take().expect("written above").close().map_err(io::Error::other)?;
        Ok(())
    }
}

/// A text file, buffered.
pub fn text_file(path: &Path) -> io::Result<BufWriter<File>> {
    Ok(BufWriter::with_capacity(1 << 16, File::create(path)?))
}

/// Where a streaming flow workload writes its finished flows.
pub struct FlowStream {
    /// Finished flows are written out once this many are held.
    pub spill_rows: usize,
    pub table: TableFile,
    /// `fct.txt`, in completion order; completions not yet safe to write wait in `pending`
    /// (only while there is a `fct.txt` to write).
    pub fct: Option<BufWriter<File>>,
    pub fct_dialect: super::hpcc_text::FctDialect,
    pub pending: Vec<FlowRecord>,
    /// The slowdowns and FCTs (ps) of the flows written out (raw f64), for exact percentiles
    /// at the end.
    pub slowdowns: Spill,
    pub fcts: Spill,
    /// The first write error; streaming stops and the run's output reports it.
    pub error: Option<io::Error>,
}

impl FlowStream {
    /// Writes the completions that no later one can precede: those visible before `now` (a
    /// completion is never visible before the moment it is made), in (finish, flow) order.
    pub fn write_completed(&mut self, now: Time) {
        let Some(out) = self.fct.as_mut() else { return };
        if self.pending.iter().all(|r| r.finish >= now) {
            return;
        }
        self.pending.sort_by_key(|r| (r.finish, r.id));
        let n = self.pending.partition_point(|r| r.finish < now);
        let dialect = self.fct_dialect;
        let r = self.pending.drain(..n).try_for_each(|r| super::hpcc_text::fct_line(out, &r, dialect));
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }
}

/// A spill file of f64 values, read back in full passes.
pub struct Spill {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    pub len: u64,
}

impl Spill {
    pub fn new(path: PathBuf) -> Spill {
        Spill { path, out: None, len: 0 }
    }

    pub fn push(&mut self, v: f64) -> io::Result<()> {
        if self.out.is_none() {
            self.out = Some(text_file(&self.path)?);
        }
        self.len += 1;
        self.out.as_mut().expect("opened above").write_all(&v.to_le_bytes())
    }

    /// Makes every value pushed so far readable by [`Spill::for_each`].
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.as_mut().map_or(Ok(()), |o| o.flush())
    }

    /// Calls `f` with every value pushed until the last [`Spill::flush`], in order.
    pub fn for_each(&self, mut f: impl FnMut(f64)) -> io::Result<()> {
        if self.out.is_none() {
            return Ok(());
        }
        let mut r = BufReader::with_capacity(1 << 16, File::open(&self.path)?);
        let mut b = [0u8; 8];
        for _ in 0..self.len {
            r.read_exact(&mut b)?;
            f(f64::from_le_bytes(b));
        }
        debug_assert!(r.fill_buf().map(|b| b.is_empty()).unwrap_or(true));
        Ok(())
    }

    pub fn remove(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The 0-based position of the nearest-rank `q`-quantile among `n > 0` sorted values.
pub fn nearest_rank(n: usize, q: f64) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// The nearest-rank `q`-quantile of `v`, which it sorts; 0 when `v` is empty.
pub fn quantile_of(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[nearest_rank(v.len(), q)]
}

/// Nearest-rank quantiles (`q` in (0, 1]) of non-negative values, exact, in a few passes over
/// them and constant memory: non-negative f64s order as their bit patterns do, so each rank is
/// narrowed to the values sharing its top 16 bits, then its top 32, and the few values left
/// are sorted. `pass(f)` must call `f` with every value, the same ones each time.
pub fn quantiles<const N: usize>(n: u64, qs: [f64; N], mut pass: impl FnMut(&mut dyn FnMut(f64)) -> io::Result<()>) -> io::Result<[f64; N]> {
    let mut out = [0.0; N];
    if n == 0 {
        return Ok(out);
    }
    for (k, q) in qs.into_iter().enumerate() {
        let mut rank = nearest_rank(n as usize, q) as u64;
        // The bits fixed so far, and how many of the top bits they cover.
        let (mut prefix, mut fixed) = (0u64, 0u32);
        for _ in 0..2 {
            let shift = 64 - fixed - 16;
            let mut hist = vec![0u64; 1 << 16];
            pass(&mut |v| {
                let b = v.max(0.0).to_bits();
                if fixed == 0 || b >> (64 - fixed) == prefix {
                    hist[((b >> shift) & 0xffff) as usize] += 1;
                }
            })?;
            let mut below = 0;
            let bucket = hist.iter().position(|&c| {
                let hit = rank < below + c;
                if !hit {
                    below += c;
                }
                hit
            });
            let bucket = bucket.expect("the rank is below the count") as u64;
            rank -= below;
            prefix = (prefix << 16) | bucket;
            fixed += 16;
        }
        let mut left = Vec::new();
        pass(&mut |v| {
            if v.max(0.0).to_bits() >> 32 == prefix {
                left.push(v.max(0.0));
            }
        })?;
        left.sort_by(f64::total_cmp);
        out[k] = left[rank as usize];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted_rank(v: &[f64], q: f64) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1]
    }

    proptest! {
        #[test]
        fn quantiles_equal_sorting(v in prop::collection::vec(0.0f64..1e6, 1..2000), spread in 0u32..3) {
            // Many equal or near-equal values stress one bucket.
            let v: Vec<f64> = v.into_iter().map(|x| if spread == 0 { 1.0 + x / 1e12 } else { x }).collect();
            let got = quantiles(v.len() as u64, [0.5, 0.99, 1.0], |f| { v.iter().for_each(|&x| f(x)); Ok(()) }).unwrap();
            prop_assert_eq!(got, [sorted_rank(&v, 0.5), sorted_rank(&v, 0.99), sorted_rank(&v, 1.0)]);
        }
    }

    #[test]
    fn a_spill_reads_back_what_was_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Spill::new(dir.path().join("s"));
        for i in 0..100_000 {
            s.push(i as f64 / 7.0).unwrap();
        }
        let mut got = Vec::new();
        s.flush().unwrap();
        s.for_each(|v| got.push(v)).unwrap();
        assert_eq!(got.len(), 100_000);
        assert!(got.iter().enumerate().all(|(i, &v)| v == i as f64 / 7.0));
        s.remove();
        assert!(!dir.path().join("s").exists());
    }
}
