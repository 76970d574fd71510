//! Scenario files: TOML → validated [`Scenario`] → the [`Topology`] it names.
//!
//! Loading never panics and never half-succeeds: syntax errors, unknown keys, wrong types and
//! impossible values are all [`ScenarioError`]s naming the file, line and key, found before a run
//! starts (and so before any output is written).

pub mod error;
pub(crate) mod exact;
pub mod ns3;
pub mod schema;
mod validate;

pub use error::ScenarioError;
pub use schema::*;

use crate::fabric::topology::{self, LinkParams, Topology};
use crate::sim::rng;
use error::{format_path, line_col, locate, parse_key_path, parse_path, Seg};
use std::path::{Path, PathBuf};

/// The first line of a run folder's `scenario.toml` ([`LoadedScenario::resolved_toml`]).
pub const RESOLVED_HEADER: &str = "# The scenario of this run, every key spelled out (defaults too): `rnicsim run` this file to run it again.";

/// A parsed and validated scenario with where it came from.
#[derive(Clone, Debug)]
pub struct LoadedScenario {
    pub scenario: Scenario,
    /// How errors name the file.
    pub file: String,
    /// Relative paths inside the scenario resolve against this folder.
    pub base_dir: PathBuf,
    pub(crate) text: String,
    /// Things a user should know that do not stop the run: ns-3 keys with no equivalent, then
    /// settings that run but are unlikely to be meant, each naming its file, line and key.
    pub warnings: Vec<String>,
    /// The ns-3 translation's own warnings (kept across `--set` overrides).
    translation: Vec<String>,
    /// For a translated ns-3 config: its keys and lines, so errors name the user's file.
    pub(crate) ns3: Option<ns3::Origin>,
    /// For a scenario rewritten by `--set` overrides: the user's own text, so errors point there.
    overridden: Option<std::sync::Arc<Overridden>>,
}

/// The user's scenario under `--set` overrides, where errors in the rewritten one are told.
#[derive(Clone, Debug)]
struct Overridden {
    file: String,
    text: String,
    ns3: Option<ns3::Origin>,
    keys: Vec<String>,
    /// How errors name an override: `--set` (the command line) or `.set()` (Python).
    by: String,
}

impl Overridden {
    /// An error at `path`: at `--set KEY` when the path is an overridden key, inside one, or
    /// holds one; else at the path in the user's file.
    fn error_at(&self, path: &str, message: String) -> ScenarioError {
        let under = |outer: &str, inner: &str| inner == outer || inner.starts_with(&format!("{outer}.")) || inner.starts_with(&format!("{outer}["));
        match self.keys.iter().find(|k| under(k, path) || under(path, k)) {
            Some(k) => {
                let message = if k == path { message } else { format!("key `{path}`: {message}") };
                ScenarioError::at_key(self.by.as_str(), k.as_str(), message)
            }
            None => locate_error(&self.file, &self.text, self.ns3.as_ref(), path, message),
        }
    }
}

/// An error at a dotted key path of scenario text `text` read from `file` (a translated ns-3
/// config's errors name the config's own lines).
fn locate_error(file: &str, text: &str, ns3: Option<&ns3::Origin>, path: &str, message: String) -> ScenarioError {
    let segs = parse_path(path);
    // A defaulted key is not in the file: point at the nearest table that is.
    let span = (1..=segs.len()).rev().find_map(|n| locate(text, &segs[..n]));
    let (line, column) = match span {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let e = ScenarioError { file: file.to_string(), line, column, key: Some(path.to_string()), message };
    match ns3 {
        Some(origin) => origin.map(e),
        None => e,
    }
}

impl LoadedScenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<LoadedScenario, ScenarioError> {
        let d = Draft::read(path)?;
        let map = |e: ScenarioError| match &d.ns3 {
            Some(origin) if e.file == d.file => origin.map(e),
            _ => e,
        };
        let mut loaded = Self::from_str(&d.text, &d.file, &d.base_dir).map_err(map)?;
        if d.ns3.is_some() {
            loaded.ns3 = d.ns3;
            loaded.translation = d.translation;
            loaded.warnings = loaded.advisories();
        }
        Ok(loaded)
    }

    /// Reads a scenario file and applies `--set` overrides (`("links.rate", "\"25Gbps\"")`
    /// pairs) before validating it, so an override may mend a value the file has wrong.
    pub fn from_file_with_overrides(path: &Path, overrides: &[(String, String)]) -> Result<LoadedScenario, ScenarioError> {
        if overrides.is_empty() {
            return Self::from_file(path);
        }
        Draft::read(path)?.with_values(&override_values(overrides)?, "--set")
    }

    /// Scenario text with overrides (TOML values) set before validation, so an override may
    /// mend a value the text has wrong; errors name an override as coming from `by` (`.set()`).
    pub fn from_str_with_values(text: &str, file: &str, base_dir: &Path, overrides: &[(String, toml::Value)], by: &str) -> Result<LoadedScenario, ScenarioError> {
        let text = crate::input::strip_bom(text).to_string();
        Draft { file: file.to_string(), text, base_dir: base_dir.to_path_buf(), ns3: None, translation: Vec::new(), overridden: None }.with_values(overrides, by)
    }

    /// Parses and validates scenario text; `file` names it in errors, `base_dir` anchors relative paths.
    pub fn from_str(text: &str, file: &str, base_dir: &Path) -> Result<LoadedScenario, ScenarioError> {
        let mut text = std::borrow::Cow::Borrowed(crate::input::strip_bom(text));
        // Where kinds named alone were written as tables.
        let mut named_alone: Vec<std::ops::Range<usize>> = Vec::new();
        let mut scenario: Scenario = loop {
            let de = toml::Deserializer::parse(&text).map_err(|e| toml_error(&text, file, &e, &[]))?;
            match serde_path_to_error::deserialize(de) {
                Ok(s) => break s,
                Err(e) => {
                    // A kind named alone (`cc = "dcqcn"`) is that kind with its defaults: read
                    // again with the name as a table of none (each rewrite takes one string).
                    if let Some((t, at)) = kind_named_alone(&text, e.inner()) {
                        text = std::borrow::Cow::Owned(t);
                        named_alone.push(at);
                        continue;
                    }
                    let segs: Vec<Seg> = e
                        .path()
                        .iter()
                        .filter_map(|s| match s {
                            serde_path_to_error::Segment::Map { key } => Some(Seg::Key(key.clone())),
                            serde_path_to_error::Segment::Enum { variant } => Some(Seg::Key(variant.clone())),
                            serde_path_to_error::Segment::Seq { index } => Some(Seg::Index(*index)),
                            serde_path_to_error::Segment::Unknown => None,
                        })
                        .collect();
                    let mut error = toml_error(&text, file, e.inner(), &segs);
                    if let Some(r) = e.inner().span().and_then(|at| named_alone.iter().find(|r| r.contains(&at.start))) {
                        // At the name as the user wrote it (the table took its place there).
                        let (line, column) = line_col(&text, r.start);
                        (error.line, error.column) = (Some(line), Some(column));
                        error.message += &format!(": this kind has settings without defaults, so it cannot be named alone; {KIND_AS_TABLE}");
                    }
                    return Err(error);
                }
            }
        };
        let text: &str = &text;
        // A table written as an array is read field by field in order, and the elements past
        // the fields were dropped (`links = ["10Gbps", "2us", 0.0, "exact", "extra"]`): refused.
        // (The text as a table, read once: for this check and the profile's below.)
        let doc: toml::Table = toml::from_str(text).map_err(|e| toml_error(text, file, &e, &[]))?;
        if let Ok(toml::Value::Table(read)) = toml::Value::try_from(&scenario) {
            if let Some(path) = array_for_table(&doc, &read, &mut Vec::new()) {
                let at = locate(text, &path).map(|s| line_col(text, s.start));
                let message = "expected a table of keys, got an array: write it as a table (`{ key = value, .. }`, or a [section] of its own) whose keys name each setting".to_string();
                return Err(ScenarioError { file: file.to_string(), line: at.map(|a| a.0), column: at.map(|a| a.1), key: Some(format_path(&path)), message });
            }
        }
        // A NIC profile other than the default fills the `[nic]` keys the text leaves unset.
        if scenario.nic.profile != crate::nic::NicProfile::Commodity {
            let pfc = scenario.switch.pfc.enabled;
            scenario.nic.apply_profile(doc.get("nic").and_then(toml::Value::as_table), pfc);
        }
        let mut loaded = LoadedScenario { scenario, file: file.to_string(), base_dir: base_dir.to_path_buf(), text: text.to_string(), warnings: Vec::new(), translation: Vec::new(), ns3: None, overridden: None };
        // Every problem the checks find: the first they find is the error, and the rest are
        // listed after it in file order (one at a time made a user fix and validate again for
        // each).
        let mut problems: Vec<ScenarioError> = validate::fields(&loaded.scenario).into_iter().map(|(path, m)| loaded.error_at(&path, m)).collect();
        // Rates checked against a topology file's own host links (read here; a file that does
        // not read is an error when the world is built).
        if problems.is_empty() {
            if let Some(rates) = loaded.file_host_rates() {
                problems.extend(validate::against_host_rates(&loaded.scenario, &rates).into_iter().map(|(path, m)| loaded.error_at(&path, m)));
            }
        }
        if !problems.is_empty() {
            let mut first = problems.remove(0);
            problems.sort_by_key(|e| (e.line.is_none(), e.line, e.column));
            if !problems.is_empty() {
                first.message += &format!("\n{} more problem{} in this scenario:", problems.len(), if problems.len() == 1 { "" } else { "s" });
                for e in &problems {
                    first.message += &format!("\n  {e}");
                }
            }
            return Err(first);
        }
        for i in 0..loaded.scenario.baseline.len() {
            loaded.baseline(i)?;
        }
        loaded.warnings = loaded.advisories();
        Ok(loaded)
    }

    /// The translation's warnings and this scenario's advisories, as messages naming file,
    /// line and key (the user's file, or the `--set` override a key falls under).
    fn advisories(&self) -> Vec<String> {
        let found = |l: &LoadedScenario| validate::advisories(&l.scenario, l.file_host_rates().as_ref()).into_iter().chain(validate::flow_files(&l.scenario, &self.base_dir)).collect::<Vec<_>>();
        let mut own = found(self);
        // Keys told apart from their defaults only by being written: in a resolved scenario
        // every key is written, so only those `--set` (or `.set()`) gives are said to have no
        // effect (re-running a run folder's scenario.toml gave 27 such warnings for Yama's
        // Fig. 5, where its own file gave none).
        let doc = if self.spelled_out() { self.table().map(|t| self.overridden_only(&t)) } else { self.table() };
        if let Ok(doc) = doc {
            own.extend(validate::yama_keys_unused(&doc, &self.scenario));
            own.extend(validate::scr_keys_unused(&doc, &self.scenario));
            // A translated ns-3 config's `[switch]` is ours, not the user's.
            if self.ns3.is_none() {
                own.extend(validate::switch_keys_unused(&doc, &self.scenario));
            }
        }
        let mut out: Vec<String> = self.translation.iter().cloned().chain(own.iter().map(|(path, m)| self.error_at(path, m.clone()).to_string())).collect();
        // A baseline's own: what its variant warns of and this scenario does not, told at the
        // entry's line (the variant's text is rewritten, its lines are nobody's).
        for (i, b) in self.scenario.baseline.iter().enumerate() {
            let Ok(variant) = self.baseline(i) else { continue };
            for (path, m) in found(&variant).into_iter().filter(|w| !own.contains(w)) {
                out.push(self.error_at(&self.baseline_entry_key(i), format!("baseline `{}`: key `{path}`: {m}", b.name)).to_string());
            }
        }
        out
    }

    /// The host links of a topology file (which ignores `links.rate`), for
    /// the checks that compare settings with the line rate; `None` for a generated topology or
    /// a file that does not read (its error comes when the world is built).
    fn file_host_rates(&self) -> Option<validate::HostRates> {
        matches!(self.scenario.topology, TopologySpec::File { .. }).then(|| validate::HostRates::of(&self.topology().ok()?)).flatten()
    }

    /// Where `[[baseline]]` entry `i`'s changes are written: its `set`, else its `remove`.
    fn baseline_entry_key(&self, i: usize) -> String {
        let b = &self.scenario.baseline[i];
        format!("baseline[{i}].{}", if b.set.is_empty() && !b.remove.is_empty() { "remove" } else { "set" })
    }

    /// Parses a scenario whose keys are overridden: `overrides` holds `("links.rate", "\"25Gbps\"")`
    /// pairs of a dotted key and a TOML value, applied to the text before validation.
    pub fn with_overrides(&self, overrides: &[(String, String)]) -> Result<LoadedScenario, ScenarioError> {
        self.with_values(&override_values(overrides)?, "--set")
    }

    /// [`Self::with_overrides`] with the values given as TOML values; errors name an override
    /// as coming from `by` (`--set`, `.set()`). A key may name array entries as `flows[0].load`
    /// or `flows.0.load`.
    pub fn with_values(&self, overrides: &[(String, toml::Value)], by: &str) -> Result<LoadedScenario, ScenarioError> {
        let draft = Draft {
            file: self.file.clone(),
            text: self.text.clone(),
            base_dir: self.base_dir.clone(),
            ns3: self.ns3.clone(),
            translation: self.translation.clone(),
            overridden: self.overridden.clone(),
        };
        draft.with_values(overrides, by)
    }

    /// This scenario's text as a TOML table, to rewrite.
    fn table(&self) -> Result<toml::Table, ScenarioError> {
        toml::from_str(&self.text).map_err(|e| toml_error(&self.text, &self.file, &e, &[]))
    }

    /// Rewritten text `doc` loaded as a scenario named in errors as this file `(what)`, keeping
    /// this one's ns-3 origin.
    fn reloaded(&self, doc: &toml::Table, what: &str) -> Result<LoadedScenario, ScenarioError> {
        reload(&self.file, &self.base_dir, self.ns3.as_ref(), doc, what)
    }

    /// The scenario of `[[baseline]]` entry `i`: this one with the entry's keys set and removed,
    /// and without baselines, claims or figures of its own.
    pub fn baseline(&self, i: usize) -> Result<LoadedScenario, ScenarioError> {
        let b = &self.scenario.baseline[i];
        let mut doc = self.table()?;
        for k in ["baseline", "paper", "figure"] {
            doc.remove(k);
        }
        let at = |k: &str| self.error_at(&format!("baseline[{i}].{k}"), String::new());
        for key in &b.remove {
            set_key(&mut doc, key, None).map_err(|m| ScenarioError { message: m, ..at("remove") })?;
        }
        for (key, v) in &b.set {
            set_key(&mut doc, key, Some(v.clone())).map_err(|m| ScenarioError { message: m, ..at(&format!("set.{key}")) })?;
        }
        let what = format!("baseline {}", b.name);
        self.reloaded(&doc, &what).map_err(|e| {
            // At the entry's line in the user's file: the rewritten text's lines are nobody's.
            // An error in another file (a topology or flow file the entry names) keeps its own.
            let told = if e.file == variant_label(&self.file, &what) {
                format!("{}{}", e.key.as_ref().map_or(String::new(), |k| format!("key `{k}`: ")), e.message)
            } else {
                e.to_string()
            };
            ScenarioError { message: format!("baseline `{}`: {told}", b.name), ..self.error_at(&self.baseline_entry_key(i), String::new()) }
        })
    }

    /// An error at a dotted key path of this scenario.
    pub fn error_at(&self, path: &str, message: impl Into<String>) -> ScenarioError {
        match &self.overridden {
            Some(user) => user.error_at(path, message.into()),
            None => locate_error(&self.file, &self.text, self.ns3.as_ref(), path, message.into()),
        }
    }

    /// The scenario with every default filled in and every input path made absolute, so the
    /// file reruns identically from anywhere. Files written outside the run folder
    /// (`outputs.fct_file`, `outputs.pfc_file`: an ns-3 config's FCT_OUTPUT_FILE and
    /// PFC_OUTPUT_FILE) are left out, and the run folder's own `fct.txt` and `pfc.txt` kept
    /// instead: rerunning a run folder's `scenario.toml` with another seed, or sweeping it,
    /// must not overwrite the file the first run wrote there.
    pub fn resolved_toml(&self) -> String {
        let mut s = self.scenario.clone();
        let abs = |p: &mut PathBuf| *p = absolute(&self.base_dir.join(&*p));
        if let TopologySpec::File { path } = &mut s.topology {
            abs(path);
        }
        for f in &mut s.flows {
            f.cdf.as_mut().map(abs);
            f.file.as_mut().map(abs);
        }
        if s.outputs.fct_file.take().is_some() | s.outputs.pfc_file.take().is_some() {
            s.outputs.hpcc_text = true;
        }
        format!("{RESOLVED_HEADER}\n{}", toml::to_string(&s).expect("a scenario serializes"))
    }

    /// The keys of `doc` that overrides set (a dotted path each; none without overrides).
    fn overridden_only(&self, doc: &toml::Table) -> toml::Table {
        let mut out = toml::Table::new();
        for key in self.overridden.iter().flat_map(|o| o.keys.iter()) {
            let segs: Vec<&str> = key.split('.').collect();
            let Some((last, tables)) = segs.split_last() else { continue };
            let Some(v) = tables.iter().try_fold(doc, |t, k| t.get(*k).and_then(toml::Value::as_table)).and_then(|t| t.get(*last)) else { continue };
            let mut at = &mut out;
            for k in tables {
                at = at.entry(k.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new())).as_table_mut().expect("made a table");
            }
            at.insert(last.to_string(), v.clone());
        }
        out
    }

    /// Whether the text is a run folder's resolved scenario (it starts with
    /// [`RESOLVED_HEADER`]), whose every key is spelled out, defaults too.
    fn spelled_out(&self) -> bool {
        let text = self.overridden.as_ref().map_or(self.text.as_str(), |o| o.text.as_str());
        text.starts_with(RESOLVED_HEADER)
    }

    /// Builds the topology the scenario names and checks everything that depends on it.
    pub fn topology(&self) -> Result<Topology, ScenarioError> {
        let s = &self.scenario;
        let link = LinkParams { rate: s.links.rate, delay: s.links.delay };
        let with_rate = |r: Option<crate::units::BitsPerSec>| LinkParams { rate: r.unwrap_or(link.rate), delay: link.delay };
        let mut topo = match &s.topology {
            TopologySpec::BackToBack {} => topology::back_to_back(link),
            TopologySpec::Star { hosts } => topology::star(*hosts, link),
            TopologySpec::Dumbbell { left, right, bottleneck_rate } => topology::dumbbell(*left, *right, link, with_rate(*bottleneck_rate)),
            TopologySpec::LeafSpine { leaves, spines, hosts_per_leaf, uplink_rate } => topology::leaf_spine(*leaves, *spines, *hosts_per_leaf, link, with_rate(*uplink_rate)),
            TopologySpec::FatTree { k, hosts_per_edge } => topology::fat_tree(*k, hosts_per_edge.unwrap_or(k / 2), link),
            TopologySpec::Jellyfish { switches, degree, hosts_per_switch } => {
                let t = topology::jellyfish(*switches, *degree, *hosts_per_switch, link, &mut rng::stream(s.seed, "topology", 0));
                if !t.hosts_connected() {
                    return Err(self.error_at("topology.jellyfish", "this seed gave a disconnected graph; raise `degree` or change `seed`"));
                }
                t
            }
            TopologySpec::File { path } => {
                let full = self.base_dir.join(path);
                let text = std::fs::read_to_string(&full).map_err(|e| self.error_at("topology.file.path", format!("cannot read {}: {e}", full.display())))?;
                topology::parse_hpcc_topology(&text).map_err(|e| ScenarioError::in_file(&full, e))?
            }
        };
        // A link's own error rate (a topology file's column) wins; the others take
        // `links.loss` (ns-3: the file's rate if above 0, else ERROR_RATE_PER_LINK).
        for l in topo.links.iter_mut().filter(|l| l.loss == 0.0) {
            l.loss = s.links.loss;
        }
        if let Some((path, message)) = validate::against_topology(s, &topo).into_iter().next() {
            return Err(self.error_at(&path, message));
        }
        Ok(topo)
    }
}

/// Tables that hold exactly one of several kinds (`[nic.cc.dcqcn]` or `[nic.cc.hpcc]`, ...).
const ONE_OF: [&str; 4] = ["topology", "nic.cc", "nic.scheduler", "nic.scr.policy"];

/// Setting a key of a kind that a one-of table does not hold yet (`nic.cc.hpcc.eta` where the
/// file has `[nic.cc.dcqcn]`) switches the table to that kind: the other kinds are dropped.
/// The key is taken by its parsed parts, so a quoted spelling (`"nic".cc.hpcc.eta`) switches
/// as the plain one does.
fn switch_kind(doc: &mut toml::Table, segs: &[Seg]) {
    for table in ONE_OF {
        let parts: Vec<&str> = table.split('.').collect();
        if !(segs.len() > parts.len() && parts.iter().zip(segs).all(|(p, s)| matches!(s, Seg::Key(k) if k == p))) {
            continue;
        }
        let Seg::Key(kind) = &segs[parts.len()] else { continue };
        let kind = kind.as_str();
        let mut t = Some(&mut *doc);
        for seg in &parts {
            t = t.and_then(|t| t.get_mut(*seg)).and_then(|v| v.as_table_mut());
        }
        if let Some(t) = t.filter(|t| !t.contains_key(kind)) {
            t.clear();
        }
    }
}

/// Sets (`Some`) or removes (`None`) dotted key `key` of `doc` (`flows[0].load` reaches into
/// an array of tables), making tables on the way when setting; removing a key that is not there
/// is an error (a misspelt key would do nothing), and so is an index past an array's end.
/// Setting a key of another kind in a one-kind table switches it ([`switch_kind`]).
pub fn set_key(doc: &mut toml::Table, key: &str, value: Option<toml::Value>) -> Result<(), String> {
    // (Checked before anything changes: a malformed key leaves `doc` as it was.)
    let segs = parse_key_path(key)?;
    let Some((Seg::Key(last), path)) = segs.split_last() else { return Err(format!("`{key}` ends in an array index: name a key of the entry (like `flows[0].load`), or set the whole array")) };
    if value.is_some() {
        switch_kind(doc, &segs);
    }
    let missing = || format!("there is no `{key}` to remove");
    let mut table = doc;
    let mut i = 0;
    while i < path.len() {
        let Seg::Key(k) = &path[i] else { return Err("an array index must follow a key".into()) };
        if !table.contains_key(k) && value.is_none() {
            return Err(missing());
        }
        // An index into a list the scenario does not have (it said "`perftest` is not an array").
        if !table.contains_key(k) && matches!(path.get(i + 1), Some(Seg::Index(_))) {
            return Err(format!("there is no `{k}` list to index: the scenario has no [[{k}]] entry (check the spelling, or add the entry)"));
        }
        let mut entry = table.entry(k.clone()).or_insert_with(|| toml::Value::Table(Default::default()));
        while let Some(Seg::Index(n)) = path.get(i + 1) {
            let arr = entry.as_array_mut().ok_or_else(|| format!("`{k}` is not an array"))?;
            let len = arr.len();
            entry = arr.get_mut(*n).ok_or_else(|| format!("`{k}` has {len} entries; there is no [{n}]"))?;
            i += 1;
        }
        table = entry.as_table_mut().ok_or_else(|| format!("`{k}` is not a table"))?;
        i += 1;
    }
    match value {
        Some(v) => {
            table.insert(last.clone(), v);
        }
        None => {
            table.remove(last).ok_or_else(missing)?;
        }
    }
    Ok(())
}

/// A scenario's text before it is validated: what overrides rewrite.
struct Draft {
    file: String,
    text: String,
    base_dir: PathBuf,
    ns3: Option<ns3::Origin>,
    translation: Vec<String>,
    overridden: Option<std::sync::Arc<Overridden>>,
}

/// What the name of a translated ns-3 config carries after its path, in errors and summaries.
const TRANSLATED: &str = " (translated from ns-3)";

impl LoadedScenario {
    /// The path of the file the scenario was read from, as it was given (an ns-3 config's, not
    /// its translation's); a scenario made from a string names no file, and gives its label.
    pub fn source_path(&self) -> PathBuf {
        PathBuf::from(self.file.strip_suffix(TRANSLATED).unwrap_or(&self.file))
    }
}

impl Draft {
    /// A scenario file's text; an ns-3 `config.txt` is translated first.
    fn read(path: &Path) -> Result<Draft, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError { file: file.clone(), line: None, column: None, key: None, message: format!("cannot read the scenario: {e}") })?;
        let text = crate::input::strip_bom(&text).to_string();
        let is_toml = path.extension().is_some_and(|e| e == "toml");
        if !is_toml && ns3::is_ns3_config(&text) {
            let cwd = ns3::working_dir();
            let t = ns3::translate(&text, &file, &cwd)?;
            return Ok(Draft { file: format!("{file}{TRANSLATED}"), text: t.toml, base_dir: cwd, ns3: Some(t.origin), translation: t.warnings, overridden: None });
        }
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Draft { file, text, base_dir, ns3: None, translation: Vec::new(), overridden: None })
    }

    /// This text with `overrides` set, validated; errors are told in the user's own file, or
    /// at the override (named as coming from `by`) they fall under.
    fn with_values(&self, overrides: &[(String, toml::Value)], by: &str) -> Result<LoadedScenario, ScenarioError> {
        let mut doc: toml::Table = toml::from_str(&self.text).map_err(|e| toml_error(&self.text, &self.file, &e, &[]))?;
        for (key, v) in overrides {
            // An override that cannot be set into a file that is itself wrong (`links = 5`
            // under `--set links.rate=...`): the file's own error comes first.
            set_key(&mut doc, key, Some(v.clone())).map_err(|m| self.own_error().unwrap_or_else(|| ScenarioError::at_key(by, key.as_str(), m)))?;
        }
        // Overrides of overrides add their keys; the keys in one spelling so that an error's
        // path finds the override it falls under.
        let new_keys = overrides.iter().map(|(k, _)| format_path(&parse_path(k)));
        let user = std::sync::Arc::new(match &self.overridden {
            Some(u) => Overridden { keys: u.keys.iter().cloned().chain(new_keys).collect(), ..Overridden::clone(u) },
            None => Overridden { file: self.file.clone(), text: self.text.clone(), ns3: self.ns3.clone(), keys: new_keys.collect(), by: by.to_string() },
        });
        let mut loaded = reload(&self.file, &self.base_dir, self.ns3.as_ref(), &doc, "with overrides").map_err(|e| match e.key {
            // The file alone fails at the same key, and no override set that key or a table
            // holding it (one inside it may): the file's own error, with its line and column.
            Some(k) if !user.keys.iter().any(|o| k == *o || k.starts_with(&format!("{o}.")) || k.starts_with(&format!("{o}["))) => match self.own_error() {
                Some(own) if own.key.as_deref() == Some(k.as_str()) => own,
                _ => user.error_at(&k, e.message),
            },
            Some(k) => user.error_at(&k, e.message),
            None => e,
        })?;
        loaded.overridden = Some(user);
        loaded.translation = self.translation.clone();
        loaded.warnings = loaded.advisories();
        Ok(loaded)
    }

    /// The error this text gives without any override (first-level drafts only: a draft of
    /// overrides already carries the user's file in `overridden`).
    fn own_error(&self) -> Option<ScenarioError> {
        if self.overridden.is_some() {
            return None;
        }
        let e = LoadedScenario::from_str(&self.text, &self.file, &self.base_dir).err()?;
        Some(match &self.ns3 {
            Some(origin) if e.file == self.file => origin.map(e),
            _ => e,
        })
    }
}

/// `--set` pairs of a dotted key and TOML value text, parsed.
fn override_values(overrides: &[(String, String)]) -> Result<Vec<(String, toml::Value)>, ScenarioError> {
    overrides
        .iter()
        .map(|(key, value)| {
            let mut t = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
                Ok(t) => t,
                // A bare word TOML does not read (`links.rate=25Gbps`, `nic.cc=hpcc`) is taken
                // as the string it spells, as a shell user means it; the key's own check then
                // says what it expects ("expected a rate such as ..., got \"fast\"", where
                // TOML's reader said "invalid boolean, expected `false`").
                Err(_) if is_bare_word(value) => toml::Table::from_iter([("v".to_string(), toml::Value::String(value.clone()))]),
                Err(e) => return Err(ScenarioError::at_key("--set", key.as_str(), format!("not a TOML value: {} (a string needs quotes: --set '{key}=\"...\"')", e.message()))),
            };
            let v = t.remove("v").expect("parsed key");
            // A value with a line break went on as more TOML, which was dropped unsaid
            // (`load=0.3\nseed=5` set the load and not the seed).
            if !t.is_empty() {
                return Err(ScenarioError::at_key("--set", key.as_str(), format!("expected one TOML value, got more after it ({}): give each key its own --set", t.keys().cloned().collect::<Vec<_>>().join(", "))));
            }
            Ok((key.clone(), v))
        })
        .collect()
}

/// Whether `--set` value text is one bare word: letters, digits and `.`, `_`, `-`, `+`, `/`, `:`
/// only, with a letter in it (so not a number, nor TOML's quotes, arrays or tables).
fn is_bare_word(value: &str) -> bool {
    value.bytes().any(|b| b.is_ascii_alphabetic()) && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+/:".contains(&b))
}

/// How errors name scenario `file` rewritten as `what` (`with overrides`, `baseline NAME`).
fn variant_label(file: &str, what: &str) -> String {
    format!("{file} ({what})")
}

/// Rewritten text `doc` of scenario `file` loaded as a scenario named in errors as that file
/// `(what)`, keeping its ns-3 origin.
fn reload(file: &str, base_dir: &Path, ns3: Option<&ns3::Origin>, doc: &toml::Table, what: &str) -> Result<LoadedScenario, ScenarioError> {
    let text = toml::to_string(doc).expect("a TOML table serializes");
    let mut loaded = LoadedScenario::from_str(&text, &variant_label(file, what), base_dir)?;
    loaded.ns3 = ns3.cloned();
    Ok(loaded)
}

/// How to write a kind that takes settings, for errors of one written as its name alone.
const KIND_AS_TABLE: &str = "write it as a table of them, `{ KIND = { key = value, .. } }` (e.g. `pattern = { incast = { receiver = 0 } }`; docs/scenario.md lists each kind's keys)";

/// The text with a kind that was named alone where a table of its settings goes (`cc =
/// "dcqcn"`, which serde refuses as "invalid type: unit variant, expected newtype variant")
/// written as that kind with no settings (`cc = { dcqcn = {} }`), on the same line. `None` if
/// the error is another one; else the text and where the table is in it. A kind whose settings
/// have no defaults then says which it needs.
fn kind_named_alone(text: &str, e: &toml::de::Error) -> Option<(String, std::ops::Range<usize>)> {
    let msg = e.message();
    if !(msg.contains("invalid type: unit variant, expected newtype variant") || msg.contains("invalid type: unit variant, expected struct variant")) {
        return None;
    }
    let span = e.span()?;
    let quoted = text.get(span.clone())?;
    let name = quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')).or_else(|| quoted.strip_prefix('\'').and_then(|q| q.strip_suffix('\'')))?;
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let table = format!("{{ {name} = {{}} }}");
    let at = span.start..span.start + table.len();
    Some((format!("{}{table}{}", &text[..span.start], &text[span.end..]), at))
}

fn toml_error(text: &str, file: &str, e: &toml::de::Error, segs: &[Seg]) -> ScenarioError {
    let mut segs = segs.to_vec();
    // An unknown key is named in the message; point at it rather than at its table.
    let msg = e.message();
    // "duplicate key" names no key: take it from the line it points at.
    if msg.trim() == "duplicate key" {
        if let Some(span) = e.span() {
            let line_start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
            let key = text[line_start..].split(['=', '\n']).next().unwrap_or("").trim().trim_matches(['[', ']']).trim();
            if !key.is_empty() {
                push_key(&mut segs, key);
            }
        }
    }
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some(end) = rest.find('`') {
            push_key(&mut segs, &rest[..end]);
        }
    } else if let Some(rest) = msg.strip_prefix("unexpected keys in table: ") {
        push_key(&mut segs, rest.split([',', ' ']).next().unwrap_or_default());
    }
    let span = e.span().filter(|s| !segs.is_empty() || s.start > 0).or_else(|| locate(text, &segs));
    let names_key = |k: &str| msg.contains(&format!("`{k}`")) || msg.starts_with("unexpected keys in table");
    let span = if segs.last().is_some_and(|s| matches!(s, Seg::Key(k) if names_key(k))) { locate(text, &segs).or(span) } else { span };
    let (line, column) = match span {
        Some(s) => {
            let (l, c) = line_col(text, s.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let key = if segs.is_empty() { None } else { Some(format_path(&segs)) };
    // A required top-level key that is absent has no line to point at: name it and say where it goes.
    let top_missing = if segs.is_empty() { msg.trim().strip_prefix("missing field `").and_then(|r| r.split('`').next()) } else { None };
    if let Some(field) = top_missing {
        let message = "missing: required at the top level of the scenario (a key before the first [table], or a table of its own)".to_string();
        return ScenarioError { file: file.to_string(), line: None, column: None, key: Some(field.to_string()), message };
    }
    // serde's words for a one-kind table given two kinds (`[topology.star]` beside
    // `[topology.leaf_spine]`) name neither the rule nor the way out.
    let message = if msg.contains("wanted exactly 1 element, found 0 elements") {
        // An empty kind table (`[nic.scr.policy]` alone).
        "takes exactly one kind, and here has none: name one as a table inside it (docs/scenario.md lists the kinds)".to_string()
    } else if msg.contains("wanted exactly 1 element") {
        let kinds = key.as_deref().map(|k| one_of_kinds(text, k)).unwrap_or_default();
        format!("takes exactly one kind{}; keep one", if kinds.is_empty() { String::new() } else { format!(", and here has {}", kinds.join(" and ")) })
    } else if let Some(keys) = msg.trim().strip_prefix("unexpected keys in table: ").and_then(|r| r.strip_suffix(", available keys:")) {
        // A table that takes no keys at all (`[topology.back_to_back]`): its list of keys was empty.
        format!("unexpected keys in table: {keys}; this table takes no keys")
    } else if msg.contains("invalid type: unit variant, expected struct variant") {
        // A kind that takes settings written as a bare name (`pattern = "incast"`).
        format!("this kind takes settings: {KIND_AS_TABLE}")
    } else if let Some((head, _)) = msg.trim().rsplit_once(", expected struct ").filter(|(_, ty)| !ty.contains(' ')) {
        // serde names the Rust type ("expected struct Strategies") where a table is wanted.
        format!("{head}, expected a table of keys")
    } else {
        plain_integer_kind(msg.trim())
    };
    let message = message + &slip_hint(msg, &segs);
    ScenarioError { file: file.to_string(), line, column, key, message }
}

/// A way out of two slips TOML makes easy: a list of tables written with single brackets
/// (`[flows]`), and a top-level key written after a `[table]` header, which puts it in that
/// table (`duration` below `[topology.star]`). `segs`: the error's key path, an unknown key
/// last. Empty when the error is neither.
fn slip_hint(msg: &str, segs: &[Seg]) -> String {
    const LISTS: [&str; 9] = ["traffic", "flows", "perftest", "rpc", "nvmf", "link_events", "paper", "figure", "baseline"];
    const TOP: [&str; 5] = ["name", "seed", "duration", "stop_on_stall", "stop_when_flows_done"];
    let unknown = msg.starts_with("unknown field `") || msg.starts_with("unexpected keys in table: ");
    match segs {
        [Seg::Key(k)] if msg.contains("invalid type: map, expected a sequence") && LISTS.contains(&k.as_str()) => format!("; `{k}` is a list of tables: write each entry under its own [[{k}]] (double brackets)"),
        [_, .., Seg::Key(k)] if unknown && TOP.contains(&k.as_str()) => format!("; `{k}` is a top-level key: put it above the file's first [table] header, since TOML puts every key after a header into that table"),
        _ => String::new(),
    }
}

/// serde names an integer field by its Rust type ("invalid value: integer `-1`, expected u32");
/// a user reads the range instead ("expected a whole number from 0 to 4294967295").
fn plain_integer_kind(msg: &str) -> String {
    const KINDS: [(&str, &str); 10] = [
        ("u8", "0 to 255"),
        ("u16", "0 to 65535"),
        ("u32", "0 to 4294967295"),
        ("u64", "0 to 18446744073709551615"),
        ("usize", "0 to 18446744073709551615"),
        ("i8", "-128 to 127"),
        ("i16", "-32768 to 32767"),
        ("i32", "-2147483648 to 2147483647"),
        ("i64", "-9223372036854775808 to 9223372036854775807"),
        ("isize", "-9223372036854775808 to 9223372036854775807"),
    ];
    for (kind, range) in KINDS {
        if let Some(head) = msg.strip_suffix(&format!("expected {kind}")) {
            return format!("{head}expected a whole number from {range}");
        }
    }
    msg.to_string()
}

/// The first key path where the text (`doc`) has an array and the scenario it was read as
/// (`read`, serialized back) has a table there.
fn array_for_table(doc: &toml::Table, read: &toml::Table, path: &mut Vec<Seg>) -> Option<Vec<Seg>> {
    for (k, v) in doc {
        path.push(Seg::Key(k.clone()));
        let found = match (v, read.get(k)) {
            (toml::Value::Array(_), Some(toml::Value::Table(_))) => Some(path.clone()),
            (toml::Value::Table(t), Some(toml::Value::Table(r))) => array_for_table(t, r, path),
            (toml::Value::Array(a), Some(toml::Value::Array(r))) => a.iter().zip(r).enumerate().find_map(|(i, (x, y))| match (x, y) {
                (toml::Value::Table(t), toml::Value::Table(r)) => {
                    path.push(Seg::Index(i));
                    let f = array_for_table(t, r, path);
                    path.pop();
                    f
                }
                _ => None,
            }),
            _ => None,
        };
        path.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The sub-tables of one-kind table `key` (`nic.cc`) in scenario text, as `[nic.cc.dcqcn]`.
fn one_of_kinds(text: &str, key: &str) -> Vec<String> {
    let Ok(doc) = toml::from_str::<toml::Table>(text) else { return Vec::new() };
    let mut t = Some(&doc);
    for seg in key.split('.') {
        t = t.and_then(|t| t.get(seg)).and_then(toml::Value::as_table);
    }
    t.map(|t| t.keys().map(|k| format!("[{key}.{k}]")).collect()).unwrap_or_default()
}

/// Appends `key` to a path unless the path already ends with it.
fn push_key(segs: &mut Vec<Seg>, key: &str) {
    if segs.last() != Some(&Seg::Key(key.to_string())) {
        segs.push(Seg::Key(key.to_string()));
    }
}

/// An input file's path made absolute without links or `.` parts (its canonical path; `path` as
/// given if it cannot be read, which loading has already refused).
fn absolute(path: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
