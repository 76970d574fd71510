//! Streamed outputs are the outputs: a run that writes its flows and PFC frames out in small
//! row groups while it goes on leaves the same tables (flows in the order they finished rather
//! than by id), text files and summary as one that keeps everything in memory until the end.

use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rnicsim::output::RunDir;
use rnicsim::scenario::LoadedScenario;
use rnicsim::world::World;
use std::path::{Path, PathBuf};

/// A Parquet file's rows, however its row groups fall, as one batch.
fn rows(path: &Path) -> RecordBatch {
    let builder = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap();
    let schema = builder.schema().clone();
    let mut batches: Vec<RecordBatch> = builder.with_batch_size(1 << 24).build().unwrap().map(|b| b.unwrap()).collect();
    assert!(batches.len() <= 1, "{}", path.display());
    batches.pop().unwrap_or_else(|| RecordBatch::new_empty(schema))
}

/// A flows table sorted by flow id.
fn by_flow(b: RecordBatch) -> RecordBatch {
    let idx = sort_indices(&b);
    let cols = b.columns().iter().map(|c| arrow_select::take::take(c, &idx, None).unwrap()).collect();
    RecordBatch::try_new(b.schema(), cols).unwrap()
}

fn sort_indices(b: &RecordBatch) -> arrow_array::UInt32Array {
    let ids = b.column_by_name("flow").unwrap().as_any().downcast_ref::<arrow_array::UInt32Array>().unwrap();
    let mut idx: Vec<u32> = (0..ids.len() as u32).collect();
    idx.sort_by_key(|&i| ids.value(i as usize));
    arrow_array::UInt32Array::from(idx)
}

/// How many row groups a Parquet file has.
fn row_groups(path: &Path) -> usize {
    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap()).unwrap().metadata().num_row_groups()
}

fn run(loaded: &LoadedScenario, out: &Path, stream_every: Option<usize>) -> PathBuf {
    let mut w = World::build(loaded).unwrap();
    let dir = RunDir::create(out, false).unwrap();
    if let Some(n) = stream_every {
        rnicsim::stream_outputs_every(&dir, loaded, &mut w, n).unwrap();
    }
    w.run(|_| true);
    rnicsim::write_outputs(&dir, loaded, &mut w, rnicsim::run_baselines(loaded).unwrap()).unwrap();
    dir.commit().unwrap()
}

#[test]
fn streamed_outputs_equal_outputs_written_at_the_end() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let tmp = tempfile::tempdir().unwrap();
    // The quickstart's flows and the PFC incast's frames are each many times 7 rows.
    for (file, duration, spilled) in [("quickstart.toml", "300us", "flows.parquet"), ("examples/incast_pfc.toml", "200us", "pfc.parquet")] {
        let path = root.join(file);
        let loaded = LoadedScenario::from_file(&path).unwrap().with_overrides(&[("duration".into(), format!("\"{duration}\""))]).unwrap();
        let name = file.replace('/', "_");
        let whole = run(&loaded, &tmp.path().join(format!("{name}-whole")), None);
        let streamed = run(&loaded, &tmp.path().join(format!("{name}-streamed")), Some(7));
        assert!(row_groups(&streamed.join(spilled)) > 5, "{file}: {spilled} was written out during the run");
        assert_eq!(rows(&whole.join("flows.parquet")), by_flow(rows(&streamed.join("flows.parquet"))), "{file}: flows");
        assert_eq!(rows(&whole.join("pfc.parquet")), rows(&streamed.join("pfc.parquet")), "{file}: pfc");
        for text in ["fct.txt", "pfc.txt", "summary.json", "queues.parquet", "counters.parquet"] {
            assert_eq!(std::fs::read(whole.join(text)).unwrap(), std::fs::read(streamed.join(text)).unwrap(), "{file}: {text}");
        }
        assert!(!streamed.join(".slowdowns.f64").exists() && !streamed.join(".fcts.f64").exists(), "the spills are cleaned up");
    }
}
