//! Running existing ns-3 experiments unchanged: an HPCC/ConWeave-style `config.txt` (one
//! `KEY value…` per line) is translated into a scenario, with the NIC of ns-3 (`nic.profile =
//! "ns3"`). Its TOPOLOGY_FILE and FLOW_FILE resolve
//! against the working directory, as ns-3 does (or, not found there, against the config's own
//! folder, with a warning); FCT_OUTPUT_FILE and PFC_OUTPUT_FILE are written
//! in HPCC's formats. Keys with no equivalent here are listed as warnings; values we cannot
//! honour are errors naming the key and its line.

use super::ScenarioError;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// The traffic class HPCC's and ConWeave's simulators put RDMA data on (lossless, ECN-marked).
const DATA_CLASS: i64 = 3;

/// Whether `text` looks like an ns-3 config: its first meaningful line is `UPPER_CASE value`,
/// or, when TOML cannot read it, a line names its TOPOLOGY_FILE or FLOW_FILE (a first line of
/// words ns-3's reader skips, such as `// notes`, made it read as TOML before).
pub fn is_ns3_config(text: &str) -> bool {
    let key_line = |l: &str| {
        let key = l.split_whitespace().next().unwrap_or("");
        key.len() > 1 && key.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') && l.split_whitespace().count() >= 2 && !l.contains('=')
    };
    if text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).is_some_and(key_line) {
        return true;
    }
    let names_inputs = |l: &str| key_line(l) && matches!(l.split_whitespace().next(), Some("TOPOLOGY_FILE" | "FLOW_FILE"));
    text.lines().map(str::trim).any(names_inputs) && toml::from_str::<toml::Table>(text).is_err()
}

/// Keys that configure only ns-3's tracing and monitors, or that its scratch programs read
/// and do not use: accepted, listed as having no equivalent.
const NO_EQUIVALENT: &[&str] = &[
    "TRACE_FILE", "TRACE_OUTPUT_FILE", "ENABLE_TRACE", "QLEN_MON_FILE", "QLEN_MON_START", "QLEN_MON_END",
    "L2_CHUNK_SIZE", "NIC_DEQUEUE_MODE",
    "PINT_LOG_BASE", "PINT_PROB", "BW_OUTPUT_FILE", "VOQ_OUTPUT_FILE", "UPLINK_OUTPUT_FILE", "CNP_OUTPUT_FILE", "CONN_OUTPUT_FILE",
    "EST_ERROR_OUTPUT_FILE", "ROOT_OUTPUT_FILE", "DST_OUTPUT_FILE", "SEND_OUTPUT_FILE",
    "CW_OUTPUT_FILE", "ENABLE_DEBUG", "DEBUG",
    // ConWeave's monitors and the flow-list copy its scratch program writes, its load label,
    // and the link rate and delay it reads but takes from the topology file instead.
    "FLOW_INPUT_FILE", "VOQ_MON_FILE", "VOQ_MON_DETAIL_FILE", "UPLINK_MON_FILE", "CONN_MON_FILE", "EST_ERROR_MON_FILE",
    "SW_MONITORING_INTERVAL", "LOAD", "DATA_RATE", "LINK_DELAY",
];

/// Keys ConWeave's fork (`network-load-balance.cc`) reads and HPCC's `third.cc` does not.
const CONWEAVE_ONLY: &[&str] = &["ENABLE_PFC", "ENABLE_IRN", "LB_MODE", "FLOWGEN_START_TIME", "FLOWGEN_STOP_TIME"];

/// The translation: scenario TOML plus warnings, and where each of its values came from.
pub struct Translated {
    pub toml: String,
    pub warnings: Vec<String>,
    pub origin: Origin,
}

/// The config's keys and lines, to name the user's own file and line in errors that the
/// translated scenario meets.
#[derive(Clone, Debug, Default)]
pub struct Origin {
    pub file: String,
    keys: Vec<(String, usize)>,
}

/// The ns-3 keys that set a scenario key (matched on its dotted path, most specific first).
const FROM_NS3: &[(&str, &[&str])] = &[
    ("nic.mtu", &["PACKET_PAYLOAD_SIZE"]),
    ("nic.ack_interval", &["L2_ACK_INTERVAL"]),
    ("nic.recovery", &["ENABLE_IRN"]),
    ("nic.ack_priority", &["ACK_HIGH_PRIO"]),
    ("nic.cc_window", &["HAS_WIN", "VAR_WIN", "GLOBAL_T"]),
    ("nic.cc.dcqcn.alpha_interval", &["ALPHA_RESUME_INTERVAL"]),
    ("nic.cc.dcqcn.rate_decrease_interval", &["RATE_DECREASE_INTERVAL"]),
    ("nic.cc.dcqcn.increase_timer", &["RP_TIMER"]),
    ("nic.cc.dcqcn.clamp_target", &["CLAMP_TARGET_RATE"]),
    ("nic.cc.dcqcn.fast_recovery", &["FAST_RECOVERY_TIMES"]),
    ("nic.cc.dcqcn.rate_hai", &["RATE_HAI"]),
    ("nic.cc.timely.rate_hai", &["RATE_HAI"]),
    ("nic.cc.dctcp.rate_ai", &["DCTCP_RATE_AI"]),
    ("nic.cc.timely.delta", &["RATE_AI"]),
    ("nic.cc.dcqcn.rate_ai", &["RATE_AI"]),
    ("nic.cc.hpcc.rate_ai", &["RATE_AI"]),
    ("nic.cc.dcqcn.min_rate", &["MIN_RATE"]),
    ("nic.cc.dctcp.min_rate", &["MIN_RATE"]),
    ("nic.cc.hpcc.min_rate", &["MIN_RATE"]),
    ("nic.cc.timely.min_rate", &["MIN_RATE"]),
    ("nic.cc.dcqcn.g", &["EWMA_GAIN"]),
    ("nic.cc.dctcp.g", &["EWMA_GAIN"]),
    ("nic.cc.hpcc.eta", &["U_TARGET"]),
    ("nic.cc.hpcc.max_stage", &["MI_THRESH"]),
    ("nic.cc.hpcc.int_multi", &["INT_MULTI"]),
    ("nic.cc.hpcc.fabric_rtt", &["GLOBAL_T"]),
    ("nic.cc", &["CC_MODE", "RATE_AI", "MIN_RATE", "EWMA_GAIN"]),
    ("links.loss", &["ERROR_RATE_PER_LINK"]),
    ("switch.buffer", &["BUFFER_SIZE"]),
    ("switch.ecn", &["KMIN_MAP", "KMAX_MAP", "PMAX_MAP", "ENABLE_QCN"]),
    ("switch.pfc.pause_time", &["PAUSE_TIME"]),
    ("switch.pfc", &["ENABLE_PFC", "USE_DYNAMIC_PFC_THRESHOLD"]),
    ("switch.load_balancer", &["LB_MODE"]),
    ("duration", &["SIMULATOR_STOP_TIME"]),
    ("seed", &["RANDOM_SEED"]),
    ("link_events", &["LINK_DOWN"]),
    ("topology", &["TOPOLOGY_FILE"]),
    ("flows", &["FLOW_FILE"]),
    ("outputs.fct_file", &["FCT_OUTPUT_FILE"]),
    ("outputs.pfc_file", &["PFC_OUTPUT_FILE"]),
];

impl Origin {
    /// The error as the user's config would have it: its file, and the line and ns-3 key of
    /// the value at fault when one set it (a key of the config's own, or the scenario key).
    pub fn map(&self, mut e: ScenarioError) -> ScenarioError {
        let key = e.key.clone().unwrap_or_default();
        // A key given twice: the last line stands, as in ns-3, so that is the line at fault.
        let line = |names: &[&str]| names.iter().find_map(|n| self.keys.iter().rev().find(|(k, _)| k == n).map(|(k, l)| (k.clone(), *l)));
        let hit = FROM_NS3.iter().filter(|(path, _)| key == *path || key.starts_with(&format!("{path}.")) || key.starts_with(&format!("{path}["))).find_map(|(_, names)| line(names));
        e.file = self.file.clone();
        e.column = None;
        match hit {
            Some((k, l)) => {
                e.line = Some(l);
                e.key = Some(k);
            }
            None => {
                e.line = None;
                e.message = format!("{} (`{key}` of the scenario this config translates to)", e.message);
                e.key = None;
            }
        }
        e
    }
}

struct Line<'a> {
    no: usize,
    key: &'a str,
    values: Vec<&'a str>,
}

/// Translates a config whose relative paths resolve against `cwd`.
pub fn translate(text: &str, file: &str, cwd: &Path) -> Result<Translated, ScenarioError> {
    let text = crate::input::strip_bom(text);
    let mut lines: Vec<Line> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        // ns-3's reader stops a value at whitespace; `{…}` notes (config_doc.txt) are dropped.
        let l = raw.split('{').next().unwrap_or("").trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut it = l.split_whitespace();
        let key = it.next().expect("non-empty line");
        lines.push(Line { no: i + 1, key, values: it.collect() });
    }
    let err = |l: &Line, m: String| ScenarioError { file: file.to_string(), line: Some(l.no), column: None, key: Some(l.key.to_string()), message: m };
    fn first<'a>(l: &Line<'a>) -> Option<&'a str> {
        l.values.first().copied()
    }
    let one = |l: &Line<'_>| -> Result<String, ScenarioError> { first(l).map(str::to_string).ok_or_else(|| err(l, "expected a value".into())) };
    let num = |l: &Line| -> Result<f64, ScenarioError> {
        let v = one(l)?;
        v.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| err(l, format!("expected a number, got \"{v}\"")))
    };
    let int = |l: &Line| -> Result<i64, ScenarioError> {
        let v = one(l)?;
        v.parse::<u32>().map(i64::from).map_err(|_| err(l, format!("expected a whole number, got \"{v}\"")))
    };
    let flag = |l: &Line| -> Result<bool, ScenarioError> {
        match one(l)?.as_str() {
            "0" => Ok(false),
            "1" => Ok(true),
            v => Err(err(l, format!("expected 0 or 1, got \"{v}\""))),
        }
    };
    let rate = |l: &Line| -> Result<String, ScenarioError> {
        let v = one(l)?;
        let s = v.replace("b/s", "bps");
        // Said in the config's own spelling, not the one it was translated to.
        s.parse::<crate::units::BitsPerSec>().map_err(|_| err(l, format!("expected a rate such as 100Gb/s or 40Mb/s, got \"{v}\"")))?;
        Ok(s)
    };
    let path = |l: &Line| -> Result<String, ScenarioError> { Ok(cwd.join(one(l)?).display().to_string()) };
    // An input not found from the working directory is looked for beside the config (run from
    // elsewhere than ns-3's folder, `validate scenarios/ns3/x/config.txt` found nothing).
    let beside = cwd.join(Path::new(file).parent().unwrap_or(Path::new("")));
    let mut found_beside = Vec::new();
    let mut input = |l: &Line| -> Result<String, ScenarioError> {
        let name = one(l)?;
        let (here, there) = (cwd.join(&name), beside.join(&name));
        if !here.exists() && there.exists() && Path::new(&name).is_relative() {
            found_beside.push(format!("{file}:{}: {} {name} is not in the working directory ({}); read from the config's folder, {}", l.no, l.key, cwd.display(), there.display()));
            return Ok(there.display().to_string());
        }
        Ok(here.display().to_string())
    };

    let mut root = Table::new();
    let mut nic = Table::new();
    let mut switch = Table::new();
    let mut conweave = Table::new();
    let mut pfc = Table::new();
    let mut ecn = Table::new();
    let mut outputs = Table::new();
    let mut dcqcn = Table::new();
    let mut dctcp = Table::new();
    let mut hpcc = Table::new();
    let mut timely = Table::new();
    let mut links = Table::new();
    let mut cc_mode: Option<(usize, u32)> = None;
    let mut flowgen_stop: Option<f64> = None;
    // HAS_WIN and VAR_WIN: the in-flight window of ns-3's NIC (on and fixed unless the config
    // says otherwise: `has_win = 1`, `var_win = false` in both scratch programs).
    let mut has_win = true;
    let mut var_win = false;
    // GLOBAL_T 1 (both scratch programs' default): every queue pair's base RTT and window are
    // the fabric's largest (`maxRtt`, `maxBdp`); 0: its own pair's (`pairRtt`, `pairBdp`).
    let mut global_t = true;
    let mut has_win_line = 0;
    // FAST_REACT (HPCC's `fast_react`), MULTI_RATE, SAMPLE_FEEDBACK, RATE_BOUND: (line, key,
    // value).
    let mut variants: Vec<(usize, &str, bool)> = Vec::new();
    // LINK_DOWN: (line, microseconds after the flows' start, node, node).
    let mut link_down: Option<(usize, u64, u32, u32)> = None;
    // FLOWGEN_START_TIME (ConWeave's fork), where LINK_DOWN's time counts from; 2 s in HPCC's.
    let mut flowgen_start = 2.0;
    // KMIN_MAP, KMAX_MAP, PMAX_MAP: (line, [(rate, value)]).
    type RateMap = Option<(usize, Vec<(String, String)>)>;
    let mut ecn_maps: [RateMap; 3] = [None, None, None];
    let mut flow_file = None;
    let mut topology = None;
    let mut link_events = Vec::new();
    let mut warnings = Vec::new();
    let mut no_equivalent = Vec::new();
    let mut unknown = Vec::new();
    // LB_MODE's line and balancer.
    let mut lb_mode: Option<(usize, &str)> = None;
    let us = |l: &Line| -> Result<String, ScenarioError> { Ok(format!("{}us", num(l)?)) };
    // ConWeave's fork (`network-load-balance.cc`) names its own keys CONWEAVE_*.
    let conweave_fork = lines.iter().any(|l| l.key.starts_with("CONWEAVE_"));
    // A key given twice: ns-3's reader takes each line in turn, so the last one stands (as
    // here); said, since it is rarely meant.
    for (i, l) in lines.iter().enumerate() {
        if let Some(before) = lines[..i].iter().rev().find(|b| b.key == l.key) {
            warnings.push(format!("{file}:{}: {} is given again (line {} gave it first); ns-3 takes the last, and so does this run", l.no, l.key, before.no));
        }
    }
    // Keys only ConWeave's fork reads, in a config read as HPCC's (no CONWEAVE_* keys): HPCC's
    // `third.cc` skips them, as it skips every key it does not know. They are applied here, as
    // their writer meant; said, since HPCC's ns-3 would run without them.
    if !conweave_fork {
        for l in lines.iter().filter(|l| CONWEAVE_ONLY.contains(&l.key)) {
            warnings.push(format!("{file}:{}: {} is a key of ConWeave's network-load-balance.cc, not of HPCC's third.cc, whose reader skips it; this config has no CONWEAVE_* keys, so it runs with HPCC's rules, and this key is applied as ConWeave's fork reads it (HPCC's ns-3 would run without it)", l.no, l.key));
        }
    }
    for l in &lines {
        match l.key {
            "TOPOLOGY_FILE" => topology = Some(input(l)?),
            "FLOW_FILE" => flow_file = Some(input(l)?),
            "FCT_OUTPUT_FILE" => {
                outputs.insert("fct_file".into(), Value::String(path(l)?));
            }
            "PFC_OUTPUT_FILE" => {
                outputs.insert("pfc_file".into(), Value::String(path(l)?));
            }
            // ConWeave's reader has no such key: like every key it does not know, it matches
            // no branch and is skipped (its value too, read as the next key), and the run ends
            // as the fork's runs end (below).
            "SIMULATOR_STOP_TIME" if conweave_fork => {
                warnings.push(format!("{file}:{}: SIMULATOR_STOP_TIME is not a key of ConWeave's network-load-balance.cc (this config has CONWEAVE_* keys), whose reader skips it: the run ends once every flow has finished, at most 10 s past FLOWGEN_STOP_TIME; ignored here too", l.no));
            }
            "SIMULATOR_STOP_TIME" => {
                let s = num(l)?;
                if s <= 0.0 {
                    return Err(err(l, "expected a positive time in seconds".into()));
                }
                root.insert("duration".into(), Value::String(format!("{}ns", (s * 1e9).round() as u64)));
            }
            // ConWeave's fork: the flows' last start; it runs on until they finish.
            "FLOWGEN_STOP_TIME" => flowgen_stop = Some(num(l)?),
            "FLOWGEN_START_TIME" => flowgen_start = num(l)?,
            "RANDOM_SEED" => {
                root.insert("seed".into(), Value::Integer(int(l)?));
            }
            "CC_MODE" => cc_mode = Some((l.no, int(l)? as u32)),
            "HAS_WIN" => {
                has_win = flag(l)?;
                has_win_line = l.no;
            }
            "VAR_WIN" => var_win = flag(l)?,
            "GLOBAL_T" => global_t = flag(l)?,
            "ALPHA_RESUME_INTERVAL" => {
                dcqcn.insert("alpha_interval".into(), Value::String(us(l)?));
            }
            "RATE_DECREASE_INTERVAL" => {
                dcqcn.insert("rate_decrease_interval".into(), Value::String(us(l)?));
            }
            "RP_TIMER" => {
                dcqcn.insert("increase_timer".into(), Value::String(us(l)?));
            }
            "CLAMP_TARGET_RATE" => {
                dcqcn.insert("clamp_target".into(), Value::Boolean(flag(l)?));
            }
            "EWMA_GAIN" => {
                let g = num(l)?;
                dcqcn.insert("g".into(), Value::Float(g));
                dctcp.insert("g".into(), Value::Float(g));
            }
            "FAST_RECOVERY_TIMES" => {
                dcqcn.insert("fast_recovery".into(), Value::Integer(int(l)?));
            }
            "RATE_AI" => {
                let r = rate(l)?;
                dcqcn.insert("rate_ai".into(), Value::String(r.clone()));
                hpcc.insert("rate_ai".into(), Value::String(r.clone()));
                timely.insert("delta".into(), Value::String(r));
            }
            "RATE_HAI" => {
                let r = rate(l)?;
                dcqcn.insert("rate_hai".into(), Value::String(r.clone()));
                timely.insert("rate_hai".into(), Value::String(r));
            }
            "MIN_RATE" => {
                let r = rate(l)?;
                dcqcn.insert("min_rate".into(), Value::String(r.clone()));
                dctcp.insert("min_rate".into(), Value::String(r.clone()));
                hpcc.insert("min_rate".into(), Value::String(r.clone()));
                timely.insert("min_rate".into(), Value::String(r));
            }
            "DCTCP_RATE_AI" => {
                dctcp.insert("rate_ai".into(), Value::String(rate(l)?));
            }
            "U_TARGET" => {
                hpcc.insert("eta".into(), Value::Float(num(l)?));
            }
            "MI_THRESH" => {
                hpcc.insert("max_stage".into(), Value::Integer(int(l)?));
            }
            "INT_MULTI" => {
                hpcc.insert("int_multi".into(), Value::Integer(int(l)?));
            }
            "PAUSE_TIME" if !conweave_fork => {
                // HPCC's NIC takes a PAUSE with any time above 0 as "paused until RESUME"
                // (`QbbNetDevice::Receive`), and one of 0 (the whole µs `UintegerValue` keeps)
                // as a RESUME: PFC would pause nothing.
                if num(l)?.trunc() <= 0.0 {
                    return Err(err(l, "expected a pause time of at least 1 µs: HPCC's NIC takes a PAUSE whose time is 0 (the fraction is dropped) as a RESUME, so nothing would ever pause".into()));
                }
                warnings.push(format!("{file}:{}: PAUSE_TIME has no effect in HPCC's simulator (third.cc), whose NIC holds a PAUSE until the RESUME whatever its time; this run does the same (switch.pfc.resend = \"until_resume\")", l.no));
            }
            "PAUSE_TIME" => {
                // µs, whole: the scratch program hands it to `QbbNetDevice::PauseTime` as an
                // `UintegerValue`, which drops the fraction.
                pfc.insert("pause_time".into(), Value::String(format!("{}us", num(l)?.trunc() as u64)));
            }
            "ERROR_RATE_PER_LINK" => {
                links.insert("loss".into(), Value::Float(num(l)?));
            }
            "PACKET_PAYLOAD_SIZE" => {
                nic.insert("mtu".into(), Value::Integer(int(l)?));
            }
            "L2_ACK_INTERVAL" => {
                // Bytes, and not a period: `RdmaHw::ReceiveUdp` resets the receiver's milestone
                // to this value on every packet, and `ReceiverCheckSeq` ACKs each packet once
                // that many bytes are in. Every packet is ACKed, as with 1, once a flow is past
                // its first N bytes.
                let n = int(l)?;
                if n < 0 {
                    return Err(err(l, "expected a count of bytes, 0 or more (0, the scratch programs' default, ACKs every packet)".into()));
                }
                if n > 1 {
                    warnings.push(format!("{file}:{}: L2_ACK_INTERVAL {n} counts bytes in ns-3, whose receiver then ACKs every packet once a flow's first {n} bytes are in (RdmaHw::ReceiveUdp resets its milestone to {n} on each packet): it runs as an ACK per packet. In ns-3 a flow shorter than {n} bytes whose end is not on an L2_CHUNK_SIZE boundary is never ACKed and never completes", l.no));
                }
                // 0 (the default of both scratch programs) and 1 alike: a milestone always met.
                nic.insert("ack_interval".into(), Value::Integer(1));
            }
            // Variants of ns-3's NIC that we run one way only: a value other than that one is
            // warned of once the congestion control is known (HPCC's apply to it alone).
            // (A key given twice: its last line stands.)
            "FAST_REACT" | "MULTI_RATE" | "SAMPLE_FEEDBACK" | "RATE_BOUND" => {
                let value = flag(l)?;
                variants.retain(|v| v.1 != l.key);
                variants.push((l.no, l.key, value));
            }
            "L2_BACK_TO_ZERO" => {
                // 1: a NACK rolls the sender back to the start of its L2 chunk (`RdmaHw::
                // ReceiveAck`, `m_backto0`); 0, as here: to the lost packet (go-back-N).
                if flag(l)? {
                    warnings.push(format!("{file}:{}: L2_BACK_TO_ZERO 1 (back to the start of the L2 chunk) runs as go-back-N from the lost packet. ns-3 also rounds every ACK down to an L2_CHUNK_SIZE boundary (RdmaHw::ReceiveAck), so there a flow whose size is not a multiple of the chunk never completes, loss or not", l.no));
                }
            }
            "ENABLE_IRN" => {
                if flag(l)? {
                    nic.insert("recovery".into(), Value::String("selective_repeat".into()));
                }
            }
            "ENABLE_PFC" => {
                pfc.insert("enabled".into(), Value::Boolean(flag(l)?));
            }
            "ENABLE_QCN" => {
                ecn.insert("enabled".into(), Value::Boolean(flag(l)?));
            }
            "USE_DYNAMIC_PFC_THRESHOLD" => {
                if !flag(l)? {
                    return Err(err(l, "HPCC's static PFC thresholds are not modelled; use 1 (dynamic thresholds) or set switch.pfc.xoff in a TOML scenario".into()));
                }
            }
            "BUFFER_SIZE" => {
                // Whole MiB: both programs read a `uint32_t` and call
                // `ConfigBufferSize(buffer_size * 1024 * 1024)`. `conf >>` stops at the first
                // character past the digits: "1.5" is 1 MiB, and ".5" is read as the next key.
                let v = one(l)?;
                let digits = v.len() - v.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let mib: u32 = v[..digits].parse().map_err(|_| err(l, format!("expected a buffer size in whole MiB, 1 to 4294967295 (a uint32_t, as ns-3 reads it), got \"{v}\"")))?;
                if mib == 0 {
                    return Err(err(l, format!("expected a buffer size of at least 1 MiB (ns-3 reads whole MiB: \"{v}\" is 0)")));
                }
                if digits < v.len() {
                    warnings.push(format!("{file}:{}: BUFFER_SIZE {v}: ns-3 reads whole MiB and stops at \"{}\", so its buffer is {mib} MiB, and so is this run's", l.no, &v[digits..]));
                }
                switch.insert("buffer".into(), Value::String(format!("{}B", u64::from(mib) * 1048576)));
            }
            // ConWeave's reader has no such key (its ACKs go ahead of data whatever the config
            // says): skipped there, as the fork skips it.
            "ACK_HIGH_PRIO" if conweave_fork => {
                warnings.push(format!("{file}:{}: ACK_HIGH_PRIO is not a key of ConWeave's network-load-balance.cc (this config has CONWEAVE_* keys), which always sends ACKs ahead of data; ignored here too", l.no));
            }
            "ACK_HIGH_PRIO" => {
                // HPCC's `third.cc` sets only its NICs' ACK queue by it
                // (`RdmaEgressQueue::ack_q_idx`): the ACK queue goes ahead of data either way,
                // held by a PAUSE of class 3 (0) or of class 0 (1), which its switches never
                // send. Its switches carry ACKs in the data's class whatever it says (their
                // `AckHighPrio` is left 0, and an ACK's `pg` is the data's).
                nic.insert("ack_priority".into(), Value::String("data".into()));
                nic.insert("ack_unpaused".into(), Value::Boolean(flag(l)?));
            }
            "KMAX_MAP" | "KMIN_MAP" | "PMAX_MAP" => {
                let n: usize = one(l)?.parse().map_err(|_| err(l, "expected a count, then rate/value pairs".into()))?;
                if l.values.len() != 1 + 2 * n {
                    return Err(err(l, format!("expected {n} rate/value pairs after the count, got {} values", l.values.len() - 1)));
                }
                let pairs: Vec<(String, String)> = (0..n).map(|i| (l.values[1 + 2 * i].to_string(), l.values[2 + 2 * i].to_string())).collect();
                // ns-3 reads each rate as a whole number of bits per second (`uint64_t`).
                if let Some((r, _)) = pairs.iter().find(|(r, _)| r.parse::<u64>().map_or(true, |r| r == 0)) {
                    return Err(err(l, format!("expected each link rate as a whole number of bits per second, as ns-3 reads it (100 Gb/s is 100000000000), got \"{r}\"")));
                }
                let i = match l.key {
                    "KMIN_MAP" => 0,
                    "KMAX_MAP" => 1,
                    _ => 2,
                };
                ecn_maps[i] = Some((l.no, pairs));
            }
            "LINK_DOWN" => {
                // Whole microseconds after the flows' start (`Seconds(2)`, or ConWeave's
                // FLOWGEN_START_TIME, `+ MicroSeconds(link_down_time)`); 0 means none.
                if l.values.len() != 3 {
                    return Err(err(l, "expected `microseconds node_a node_b`".into()));
                }
                let t: u64 = l.values[0].parse().map_err(|_| err(l, format!("expected whole microseconds after the flows' start, got \"{}\"", l.values[0])))?;
                let a: u32 = l.values[1].parse().map_err(|_| err(l, "expected a node id".into()))?;
                let b: u32 = l.values[2].parse().map_err(|_| err(l, "expected a node id".into()))?;
                link_down = (t > 0).then_some((l.no, t, a, b));
            }
            // The modes of ConWeave's ns-3 fork: 0 ECMP, 2 DRILL (two samples and the last best
            // port per destination), 3 CONGA and 6 LetFlow (both with its 100 µs flowlet
            // timeout, our default gap; CONGA's other constants are the fork's, our defaults),
            // 9 ConWeave (with the CONWEAVE_* keys below).
            "LB_MODE" => {
                let lb = match one(l)?.as_str() {
                    "0" => "ecmp",
                    "2" => "drill",
                    "3" => "conga",
                    "6" => "flowlet",
                    "9" => "conweave",
                    v => return Err(err(l, format!("load balancer mode {v} is not one of ConWeave's fork's (0 = ECMP, 2 = DRILL, 3 = CONGA, 6 = LetFlow, 9 = ConWeave)"))),
                };
                switch.insert("load_balancer".into(), Value::String(lb.into()));
                lb_mode = Some((l.no, lb));
            }
            // ConWeave's timing, in microseconds (`run.py` writes them per topology).
            k @ ("CONWEAVE_TX_EXPIRY_TIME" | "CONWEAVE_REPLY_TIMEOUT_EXTRA" | "CONWEAVE_PATH_PAUSE_TIME" | "CONWEAVE_EXTRA_VOQ_FLUSH_TIME" | "CONWEAVE_DEFAULT_VOQ_WAITING_TIME") => {
                let key = match k {
                    "CONWEAVE_TX_EXPIRY_TIME" => "tx_expiry",
                    "CONWEAVE_REPLY_TIMEOUT_EXTRA" => "reply_timeout_extra",
                    "CONWEAVE_PATH_PAUSE_TIME" => "path_pause",
                    "CONWEAVE_EXTRA_VOQ_FLUSH_TIME" => "extra_voq_flush",
                    _ => "default_voq_waiting",
                };
                let us: u64 = one(l)?.parse().map_err(|_| err(l, "expected whole microseconds".into()))?;
                conweave.insert(key.into(), Value::String(format!("{us}us")));
            }
            k if NO_EQUIVALENT.contains(&k) || k.starts_with("CONWEAVE_") => no_equivalent.push(k.to_string()),
            k => unknown.push(format!("{k} (line {})", l.no)),
        }
    }
    // HAS_WIN 1: every queue pair's bytes in flight are capped at maxBdp, scaled by rate over
    // line rate with VAR_WIN 1 (`RdmaQueuePair::GetWin`). HAS_WIN 0: no window at all, not
    // even HPCC's (its `GetWin` is then 0 and `UpdateRateHp` sets only the rate).
    // HPCC's T (`m_baseRtt`: its utilization's time constant, and with the window the queue
    // term's scale, `qlen / m_win`).
    if global_t {
        hpcc.insert("fabric_rtt".into(), Value::Boolean(true));
    }
    if has_win {
        let mut w = Table::new();
        w.insert("with_rate".into(), Value::Boolean(var_win));
        if !global_t {
            w.insert("per_pair".into(), Value::Boolean(true));
        }
        nic.insert("cc_window".into(), Value::Table(w));
        if !var_win {
            // ns-3's HPCC sets only the rate (`UpdateRateHp`); what caps its bytes in flight is
            // `GetWin`, fixed at maxBdp under VAR_WIN 0. Our HPCC's own window W (the rate
            // times T) is the rate-scaled cap VAR_WIN 1 gives, so here it must not cap as well.
            hpcc.insert("window".into(), Value::Boolean(false));
        }
    } else {
        hpcc.insert("window".into(), Value::Boolean(false));
    }
    if let Some((_, t, a, b)) = link_down {
        let mut e = Table::new();
        e.insert("at".into(), Value::String(format!("{}ns", (flowgen_start * 1e9).round() as u64 + t * 1000)));
        e.insert("between".into(), Value::Array(vec![Value::Integer(a as i64), Value::Integer(b as i64)]));
        e.insert("state".into(), Value::String("down".into()));
        link_events.push(Value::Table(e));
    }
    // ConWeave's fork names its own keys CONWEAVE_*; its FCT file names nodes by id.
    if conweave_fork {
        outputs.insert("fct_dialect".into(), Value::String("conweave".into()));
    }
    // ns-3's frames: its packets' headers (48 B on data, ACKs of 60 B or more), each timed in
    // whole ns rounded down (`QbbNetDevice::TransmitStart`, `RdmaHw::UpdateNextAvail`).
    nic.insert("headers".into(), Value::String(if conweave_fork { "ns3_conweave" } else { "ns3_hpcc" }.into()));
    links.insert("serialization".into(), Value::String("ns3".into()));
    let Some(topo) = topology else {
        return Err(ScenarioError::at_key(file, "TOPOLOGY_FILE", "an ns-3 config needs TOPOLOGY_FILE"));
    };
    // (Without one, ran as zero flows and an empty fct.txt.)
    if flow_file.is_none() {
        return Err(ScenarioError::at_key(file, "FLOW_FILE", "an ns-3 config needs FLOW_FILE"));
    }
    warnings.extend(repeated_switch_links(&topo));
    let mut t = Table::new();
    t.insert("path".into(), Value::String(topo));
    let mut topology = Table::new();
    topology.insert("file".into(), Value::Table(t));
    root.insert("topology".into(), Value::Table(topology));
    root.entry("name").or_insert(Value::String(Path::new(file).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()));
    if !root.contains_key("duration") {
        // ConWeave's fork has no stop time: it runs until every flow has finished, at most
        // 10 s past FLOWGEN_STOP_TIME (2.5 s when the config leaves it out, its global's
        // default; `Simulator::Stop(Seconds(flowgen_stop_time + 10.0))`). HPCC's stops at
        // SIMULATOR_STOP_TIME, 3.01 s when the config leaves it out (`simulator_stop_time`).
        match flowgen_stop.or(conweave_fork.then_some(2.5)) {
            Some(stop) => {
                root.insert("duration".into(), Value::String(format!("{}ns", ((stop + 10.0) * 1e9).round() as u64)));
                root.insert("stop_when_flows_done".into(), Value::Boolean(true));
            }
            None => {
                root.insert("duration".into(), Value::String("3010000000ns".into()));
            }
        }
    }
    // ns-3's RDMA NIC, not the commodity one (`NicProfile::Ns3`).
    nic.insert("profile".into(), Value::String("ns3".into()));
    // HPCC puts RDMA data on priority 3 (lossless) and ECN-marks it.
    nic.entry("priority").or_insert(Value::Integer(DATA_CLASS));
    // ns-3's switches hold every queue but 0 (the ACKs') to PFC (`SwitchNode::SendToDev`): the
    // classes the flow file puts data in, but 0, are lossless (3 in HPCC's and ConWeave's files),
    // and only those, so that no headroom is set aside for classes no flow uses.
    let classes = flow_file.as_deref().map_or_else(Vec::new, data_classes);
    let classes = if classes.is_empty() { vec![DATA_CLASS] } else { classes };
    pfc.entry("classes").or_insert(Value::Array(classes.into_iter().map(Value::Integer).collect()));
    if conweave_fork {
        // ConWeave's switch MMU (`switch-mmu.cc`, `GetPauseClasses`, `GetResumeClasses`) pauses
        // an ingress priority group once its bytes past its 2,096 B reserve exceed 1/16 of the
        // free shared pool: the buffer less every port's headroom and 8 queues × 1,048 B per port.
        pfc.entry("alpha").or_insert(Value::Float(0.0625));
        pfc.entry("port_reserve").or_insert(Value::String("8384B".into()));
        pfc.entry("ingress_reserve").or_insert(Value::String("2096B".into()));
        // Its switch sends a PAUSE of 5 µs for every data packet admitted over the threshold,
        // and nothing refreshes it (`SwitchNode::SendToDev`, `CheckAndSendPfc`; `pause_time` in
        // the scratch program).
        pfc.entry("resend").or_insert(Value::String("every_packet".into()));
        pfc.entry("pause_time").or_insert(Value::String("5us".into()));
        // RESUME as soon as the ingress is below XOFF: ns-3's `GetResumeClasses` tests it
        // against α (free − 16 B) with α = 1/16, one byte under the PAUSE threshold.
        pfc.entry("xon_offset").or_insert(Value::String("1B".into()));
    } else {
        // HPCC's switch MMU (`switch-mmu.cc`): each ingress (port, queue) keeps a 4 KiB reserve
        // out of the XOFF count, and the pool sets one aside per port (`total_rsrv`); PAUSE when
        // the rest reaches (pool − used) >> `pfc_a_shift`, 3 (α 1/8) less one per halving that
        // brings a port's rate down to the NICs' (`third.cc`); RESUME once it is 3 KiB under
        // (`resume_offset`). PAUSE is sent once per episode (`CheckShouldPause`: not while
        // paused) and holds until RESUME (the NIC ignores its time).
        pfc.entry("alpha").or_insert(Value::Float(0.125));
        pfc.entry("alpha_by_rate").or_insert(Value::Boolean(true));
        pfc.entry("port_reserve").or_insert(Value::String("4096B".into()));
        pfc.entry("ingress_reserve").or_insert(Value::String("4096B".into()));
        pfc.entry("xon_offset").or_insert(Value::String("3072B".into()));
        pfc.entry("resend").or_insert(Value::String("until_resume".into()));
        // Past XOFF an ingress fills its headroom, three one-way BDPs of its link (`third.cc`:
        // `rate * delay / 8 / 1000000000 * 3`), counted apart: RESUME waits for it to drain,
        // and a full one drops (`CheckShouldResume`, `CheckIngressAdmission`).
        pfc.entry("headroom_bdps").or_insert(Value::Integer(3));
        pfc.entry("headroom_apart").or_insert(Value::Boolean(true));
    }
    // Flows take ns-3's ports and its switches' hash, so each flow takes ns-3's path.
    switch.entry("ecmp_hash").or_insert(Value::String("ns3".into()));
    // Its switches send ACKs and NACKs by that hash whatever LB_MODE says (`GetOutDev`).
    switch.entry("control_by_hash").or_insert(Value::Boolean(true));
    if let Some(f) = flow_file {
        let mut fl = Table::new();
        fl.insert("file".into(), Value::String(f));
        // ConWeave's fork numbers source ports per source host, HPCC's per (source,
        // destination) pair (`portNumder[src][dst]` in `third.cc`).
        fl.insert("ports".into(), Value::String(if conweave_fork { "ns3" } else { "hpcc" }.into()));
        // Both take each start as `Seconds(double)`: whole ns, cut down.
        fl.insert("start_times".into(), Value::String("ns3".into()));
        // ConWeave's fork runs a row of 0 bytes as 1 byte; HPCC's would never finish it (its
        // queue pair has nothing to send), so there it stays an error.
        if conweave_fork {
            fl.insert("empty".into(), Value::String("one_byte".into()));
        }
        root.insert("flows".into(), Value::Array(vec![Value::Table(fl)]));
    }
    // Keys the config leaves out take the scratch program's own defaults (its globals:
    // `third.cc` in HPCC's, `network-load-balance.cc` in ConWeave's fork), not ours; the ones
    // ns-3 leaves unusable are said, and run with ours.
    let given = |key: &str| lines.iter().any(|l| l.key == key);
    let mut unset = Vec::new();
    if !given("ALPHA_RESUME_INTERVAL") {
        dcqcn.insert("alpha_interval".into(), Value::String("55us".into()));
    }
    if !given("FAST_RECOVERY_TIMES") {
        dcqcn.insert("fast_recovery".into(), Value::Integer(if conweave_fork { 1 } else { 5 }));
    }
    if !given("DCTCP_RATE_AI") {
        dctcp.insert("rate_ai".into(), Value::String("1000Mbps".into()));
    }
    if !given("INT_MULTI") {
        hpcc.insert("int_multi".into(), Value::Integer(1));
    }
    if !given("BUFFER_SIZE") && !conweave_fork {
        switch.insert("buffer".into(), Value::String(format!("{}B", 16 * 1048576)));
    }
    // Both simulators' switch queues: 0 first, then the others a packet each in turn
    // (`BEgressQueue::DoDequeueRR`).
    switch.insert("service".into(), Value::String("round_robin".into()));
    // The fork's default buffer is 0 bytes ("specify in run.py!!"): its run.py always gives one.
    if !given("BUFFER_SIZE") && conweave_fork {
        return Err(ScenarioError::at_key(file, "BUFFER_SIZE", "ConWeave's network-load-balance.cc (this config has CONWEAVE_* keys) has no buffer unless BUFFER_SIZE gives one (its default is 0 MiB; run.py writes it): add BUFFER_SIZE, in MiB"));
    }
    if !given("ACK_HIGH_PRIO") && !conweave_fork {
        // `ack_high_prio = 0`: ACKs leave the host in the data class (ConWeave's fork puts them
        // ahead whatever the config says).
        nic.insert("ack_priority".into(), Value::String("data".into()));
    }
    if !given("MIN_RATE") {
        // Both programs' `min_rate = "100Mb/s"`, which HPCC's rate update floors at too
        // (`UpdateRateHp`); the other schemes' own defaults are 100 Mbps already.
        hpcc.insert("min_rate".into(), Value::String("100Mbps".into()));
    }
    if !conweave_fork {
        // HPCC's `RdmaHw` NACKs a gap again after 500 µs (its "NACK Generation Interval"),
        // ConWeave's fork (the `ns3` profile's 4 µs) sooner.
        nic.entry("nak_interval").or_insert(Value::String("500us".into()));
    }
    if !given("MULTI_RATE") {
        variants.push((0, "MULTI_RATE", true));
    }
    let mode = cc_mode.map_or(1, |(_, m)| m);
    // ConWeave's fork exits on any other congestion control ("Currently, ConWeave supports
    // only DCQCN congestion control").
    if let Some((no, "conweave")) = lb_mode.filter(|_| mode != 1) {
        return Err(ScenarioError { file: file.into(), line: Some(no), column: None, key: Some("LB_MODE".into()), message: format!("ConWeave (LB_MODE 9) runs with DCQCN only (CC_MODE 1; this config has {mode}): ConWeave's network-load-balance.cc exits on any other") });
    }
    if !given("RP_TIMER") && conweave_fork {
        dcqcn.insert("increase_timer".into(), Value::String("300us".into()));
    } else if !given("RP_TIMER") && mode == 1 {
        unset.push("RP_TIMER (0 µs in ns-3: a rate increase timer that never waits)");
    }
    if !given("EWMA_GAIN") && (mode == 1 || mode == 8) {
        unset.push("EWMA_GAIN (0 in ns-3, whose default 1 / 16 is integer division: α never moves)");
    }
    if !given("RATE_AI") {
        unset.push("RATE_AI (none in ns-3, which stops on the empty rate)");
    }
    if !given("RATE_HAI") {
        unset.push("RATE_HAI (none in ns-3, which stops on the empty rate)");
    }
    if !unset.is_empty() {
        warnings.push(format!("{file}: not in the config, and without a usable default in ns-3: {}; this run takes ours (docs/rdma.md)", unset.join(", ")));
    }
    let mut cc = match cc_mode {
        None | Some((_, 1)) => ("dcqcn", dcqcn),
        Some((_, 3)) => ("hpcc", hpcc),
        Some((_, 7)) => {
            // ns-3's TIMELY, not the paper's (`nic/cc/timely.rs`).
            timely.insert("rules".into(), Value::String("ns3".into()));
            ("timely", timely)
        }
        Some((_, 8)) => {
            // ns-3's DCTCP: a cut at the first mark, held for a window (`nic/cc/dctcp.rs`).
            dctcp.insert("rules".into(), Value::String("ns3".into()));
            ("dctcp", dctcp)
        }
        Some((no, m)) => {
            return Err(ScenarioError { file: file.into(), line: Some(no), column: None, key: Some("CC_MODE".into()), message: format!("congestion control mode {m} is not available (1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP are)") });
        }
    };
    let is_hpcc = cc.0 == "hpcc";
    // ns-3's packets carry its IntHeader, whose size the mode sets (`IntHeader::GetStaticSize`,
    // mode chosen by CC_MODE in the scratch program): five 8 B hops and a 2 B count under HPCC,
    // an 8 B timestamp under TIMELY, nothing otherwise; on data, ACKs and NAKs alike.
    let telemetry = match cc.0 {
        "hpcc" => 42,
        "timely" => 8,
        _ => 0,
    };
    if telemetry > 0 {
        nic.insert("telemetry_bytes".into(), Value::Integer(telemetry));
    }
    if let Some(&(_, _, fast)) = variants.iter().find(|v| v.1 == "FAST_REACT").filter(|_| is_hpcc) {
        cc.1.insert("fast_react".into(), Value::Boolean(fast));
    }
    for (no, key, value) in variants {
        let ns3_does = match (key, value) {
            ("MULTI_RATE", true) if is_hpcc => "HPCC then keeps a rate per hop and sends at the least of them",
            ("SAMPLE_FEEDBACK", true) if is_hpcc => "HPCC's per-ACK updates then skip hops whose queue is empty",
            ("RATE_BOUND", false) => "the NIC then paces every queue pair at the line rate, only the window holding it back",
            _ => continue,
        };
        let at = if no == 0 { format!("{file}: {key} is not in the config, so ns-3 takes its default, 1") } else { format!("{file}:{no}: {key} {}", value as u8) };
        warnings.push(format!("{at}: {ns3_does}; not modelled: this runs as {key} {}", !value as u8));
    }
    if is_hpcc && !has_win {
        warnings.push(format!(
            "{file}:{has_win_line}: HAS_WIN 0 with HPCC (CC_MODE 3): ns-3 divides HPCC's queue term by the zero window, so a queue seen in two stamps in a row reads as infinite utilization and drops the rate to MIN_RATE; this runs HPCC's rate rule without a window instead, and will not give ns-3's results"
        ));
    }
    let mut cct = Table::new();
    cct.insert(cc.0.into(), Value::Table(cc.1));
    nic.insert("cc".into(), Value::Table(cct));
    // ECN maps: thresholds in KB per link rate in bps. An error names the map (and line) at
    // fault; a link rate none of them lists is refused once the topology is read (ns-3
    // asserts "must set kmin for each link speed").
    if let (Some((kmin_no, kmin)), Some((kmax_no, kmax)), Some((pmax_no, pmax))) = (&ecn_maps[0], &ecn_maps[1], &ecn_maps[2]) {
        let at = |no: usize, key: &str, message: String| ScenarioError { file: file.into(), line: Some(no), column: None, key: Some(key.into()), message };
        let kb = |v: &str, no: usize, key: &str| -> Result<String, ScenarioError> {
            v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).map(|x| format!("{}B", (x * 1000.0).round() as u64)).ok_or_else(|| at(no, key, format!("expected a threshold in KB, got \"{v}\"")))
        };
        let mut per = Table::new();
        for (r, lo) in kmin {
            let find = |m: &Vec<(String, String)>| m.iter().find(|(x, _)| x == r).map(|(_, v)| v.clone());
            let hi = find(kmax).ok_or_else(|| at(*kmax_no, "KMAX_MAP", format!("rate {r} is in KMIN_MAP but not in KMAX_MAP")))?;
            let p = find(pmax).ok_or_else(|| at(*pmax_no, "PMAX_MAP", format!("rate {r} is in KMIN_MAP but not in PMAX_MAP")))?;
            let mut c = Table::new();
            c.insert("kmin".into(), Value::String(kb(lo, *kmin_no, "KMIN_MAP")?));
            c.insert("kmax".into(), Value::String(kb(&hi, *kmax_no, "KMAX_MAP")?));
            let pmax: f64 = p.parse().ok().filter(|x: &f64| (0.0..=1.0).contains(x)).ok_or_else(|| at(*pmax_no, "PMAX_MAP", format!("expected a marking probability in [0, 1], got \"{p}\"")))?;
            c.insert("pmax".into(), Value::Float(pmax));
            per.insert(format!("{r}bps"), Value::Table(c));
        }
        ecn.insert("per_rate".into(), Value::Table(per));
    } else {
        // ns-3 asserts "must set kmin for each link speed" (and kmax, pmax), marking or not.
        let missing: Vec<&str> = ["KMIN_MAP", "KMAX_MAP", "PMAX_MAP"].into_iter().zip(&ecn_maps).filter(|(_, m)| m.is_none()).map(|(k, _)| k).collect();
        return Err(ScenarioError::at_key(file, missing[0], format!("ns-3 needs KMIN_MAP, KMAX_MAP and PMAX_MAP, each listing every link speed of the topology (it asserts \"must set kmin for each link speed\", with ECN on or off); this config lacks {}", missing.join(", "))));
    }
    if !conweave.is_empty() {
        switch.insert("conweave".into(), Value::Table(conweave));
    }
    switch.insert("ecn".into(), Value::Table(ecn));
    switch.insert("pfc".into(), Value::Table(pfc));
    root.insert("switch".into(), Value::Table(switch));
    root.insert("nic".into(), Value::Table(nic));
    if !links.is_empty() {
        root.insert("links".into(), Value::Table(links));
    }
    if !link_events.is_empty() {
        root.insert("link_events".into(), Value::Array(link_events));
        // ns-3's `TakeDownLink` recomputes every route at the instant the link goes down
        // (`CalculateRoutes`, `SetRoutingEntries`): only what was on the link is lost.
        let mut routing = Table::new();
        routing.insert("recompute_delay".into(), Value::String("0ns".into()));
        root.insert("routing".into(), Value::Table(routing));
    }
    outputs.insert("pfc_events".into(), Value::Boolean(true));
    root.insert("outputs".into(), Value::Table(outputs));
    warnings.append(&mut found_beside);
    if !no_equivalent.is_empty() {
        warnings.push(format!("{file}: no equivalent here, ignored: {}", no_equivalent.join(", ")));
    }
    if !unknown.is_empty() {
        warnings.push(format!("{file}: unknown keys, ignored: {}", unknown.join(", ")));
    }
    let origin = Origin { file: file.to_string(), keys: lines.iter().map(|l| (l.key.to_string(), l.no)).collect() };
    Ok(Translated { toml: toml::to_string(&root).expect("a TOML table serializes"), warnings, origin })
}

/// The classes other than 0 that the flow file at `path` puts flows in, ascending; none if it
/// cannot be read or parsed (the world's build then reports it).
fn data_classes(path: &str) -> Vec<i64> {
    let Some(first) = crate::host::flow_file::first_line_per_class(Path::new(path)) else { return Vec::new() };
    (1..8).filter(|&c| first[c].is_some()).map(|c| c as i64).collect()
}

/// A warning for each link of the topology file at `path` that joins two switches a line
/// before it already joined. ns-3's scratch programs keep one interface per neighbour
/// (`nbr2if[a][b]`, overwritten by each line, so the later one's) and route only through it
/// (`CalculateRoute`, `SetRoutingEntries`); ours spread traffic over both. None if the file
/// cannot be read or parsed (the world's build then reports it).
fn repeated_switch_links(path: &str) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let Ok((topo, lines)) = crate::fabric::topology::parse_hpcc_topology_lines(&text) else { return Vec::new() };
    let switch = |n: u32| topo.kinds[n as usize] == crate::fabric::topology::NodeKind::Switch;
    let mut seen: Vec<((u32, u32), usize)> = Vec::new();
    let mut out = Vec::new();
    for (link, &line) in topo.links.iter().zip(&lines) {
        if !(switch(link.a) && switch(link.b)) {
            continue;
        }
        let key = (link.a.min(link.b), link.a.max(link.b));
        if let Some(&(_, first)) = seen.iter().find(|(k, _)| *k == key) {
            out.push(format!("{path}:{line}: switches {} and {} are already linked (line {first}); ns-3 keeps one interface per neighbour, this line's (nbr2if in its scratch program), and routes only over it, so there the link of line {first} carries nothing; this run spreads traffic over both", key.0, key.1));
        }
        seen.push((key, line));
    }
    out
}

/// Where ns-3 would resolve a config's relative paths: the working directory.
pub fn working_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_default()
}
