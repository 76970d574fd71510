//! An output directory that appears only when complete.
//!
//! Files are written into a hidden sibling `.NAME.partial-PID` and the folder is renamed into
//! place by [`RunDir::commit`]. If the run fails or is interrupted the partial folder is removed
//! on drop; if the process is killed outright, what remains is clearly named partial and holds
//! no `summary.json`, and the next run to the same place removes it. A folder whose partial
//! sibling a live run is writing is refused before the run: the writer holds a lock on the
//! partial folder's marker file, which the system releases when the writer exits however it
//! ends (a process id alone misleads: a killed process no one has reaped, or another process
//! that reuses the id, still has one). The partial folder is made as `.NAME.partial-PID.tmp`
//! and renamed once its marker is locked, so no one finds it unlocked meanwhile. Where the
//! file system has no locks, the process id alone decides. Two runs started at the same
//! instant may both pass the check (it is a courtesy, not a mutual exclusion): the later to
//! finish then fails, or with `--force` replaces the other's run.

use std::io;
use std::path::{Path, PathBuf};

/// The file that marks a folder as a run of this simulator (the only kind `--force` replaces).
pub const MARKER: &str = ".rnicsim-run";

pub struct RunDir {
    target: PathBuf,
    partial: PathBuf,
    replace: bool,
    committed: bool,
    /// The partial folder's marker, locked while this run writes it.
    _lock: std::fs::File,
}

fn refuse(kind: io::ErrorKind, msg: String) -> io::Error {
    io::Error::new(kind, msg)
}

/// Whether `dir` holds a run of this simulator: it has the marker, or (a run written before
/// the marker existed) both `scenario.toml` and `summary.json`.
pub fn is_run(dir: &Path) -> bool {
    dir.join(MARKER).is_file() || (dir.join("scenario.toml").is_file() && dir.join("summary.json").is_file())
}

/// Checks that `target` may receive a run: absent, an empty folder, or (with `replace`) a
/// previous run. Anything else (a file, a symbolic link, someone's folder) is refused.
fn check_target(target: &Path, replace: bool) -> io::Result<()> {
    let Ok(meta) = target.symlink_metadata() else { return Ok(()) };
    if meta.file_type().is_symlink() {
        return Err(refuse(io::ErrorKind::InvalidInput, format!("{} is a symbolic link; name a folder", target.display())));
    }
    if !meta.is_dir() {
        return Err(refuse(io::ErrorKind::InvalidInput, format!("{} is a file, not a folder", target.display())));
    }
    if target.read_dir()?.next().is_none() {
        return Ok(());
    }
    if !replace {
        return Err(refuse(io::ErrorKind::AlreadyExists, format!("{} exists and is not empty (use --force to replace a previous run)", target.display())));
    }
    if !is_run(target) {
        return Err(refuse(
            io::ErrorKind::AlreadyExists,
            format!("{} is not a previous run (it has no {MARKER} file); --force replaces only runs, so name another folder", target.display()),
        ));
    }
    Ok(())
}

/// Removes partial folders of `name` in `parent` left by runs that ended without removing
/// them (killed outright), and returns one that a live run (of another process, or another
/// thread of this one) is writing.
fn remove_stale_partials(parent: &Path, name: &str) -> Option<(u32, PathBuf)> {
    let Ok(entries) = parent.read_dir() else { return None };
    let prefix = format!(".{name}.partial-");
    let mut live = None;
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else { continue };
        let (pid, forming) = match rest.strip_suffix(".tmp") {
            Some(pid) => (pid, true),
            None => (rest, false),
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        // A folder still being made has no locked marker yet: its maker's life decides.
        let alive = pid == std::process::id() || process_alive(pid);
        if alive && (forming || being_written(&e.path())) {
            live = live.or(Some((pid, e.path())));
        } else {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    live
}

/// Whether a run holds the lock on `partial`'s marker (or it cannot be told: no marker, or a
/// file system without locks).
fn being_written(partial: &Path) -> bool {
    match std::fs::File::open(partial.join(MARKER)) {
        Ok(marker) => !matches!(marker.try_lock(), Ok(())),
        Err(_) => true,
    }
}

/// Makes the partial folder `partial`: as `partial.tmp` first, its marker created and locked
/// (where the file system has locks) before it takes its name. Returns the locked marker.
fn make_partial(partial: &Path) -> io::Result<std::fs::File> {
    use std::io::Write;
    let forming = partial.with_file_name(format!("{}.tmp", partial.file_name().unwrap_or_default().to_string_lossy()));
    std::fs::create_dir(&forming)?;
    let made = (|| {
        let mut marker = std::fs::File::create(forming.join(MARKER))?;
        match marker.try_lock() {
            Ok(()) | Err(std::fs::TryLockError::Error(_)) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(refuse(io::ErrorKind::WouldBlock, format!("{} is locked by another run", forming.join(MARKER).display()))),
        }
        // The second line names the build that made the run (`crate::VERSION`).
        marker.write_all(format!("a run folder of rnicsim; `rnicsim run --force` may replace it\nrnicsim {}\n", crate::VERSION).as_bytes())?;
        std::fs::rename(&forming, partial)?;
        Ok(marker)
    })();
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&forming);
    }
    made
}

/// Whether process `pid` exists (Linux: its /proc entry; elsewhere assumed alive).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// The longest run folder name: 255 bytes less `.`, `.partial-` and a process id's 10 digits.
const MAX_NAME: usize = 255 - 1 - ".partial-".len() - 10;

impl RunDir {
    /// Prepares to write `target`, checking it before anything runs: it must be absent, an
    /// empty folder, or, with `replace`, a previous run (it has the [`MARKER`] file).
    pub fn create(target: &Path, replace: bool) -> io::Result<RunDir> {
        // `runs/x/.` names `runs/x` (the move into place failed on the `.` after the run).
        let target: &Path = &target.components().collect::<PathBuf>();
        check_target(target, replace)?;
        let name = target.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the output path has no folder name"))?;
        let name = name.to_string_lossy().into_owned();
        // The run is written beside it first, as `.NAME.partial-PID`, which must fit a file
        // name's 255 bytes too.
        if name.len() > MAX_NAME {
            return Err(refuse(io::ErrorKind::InvalidInput, format!("the folder name {} is {} bytes long: at most {MAX_NAME}, since the run is written beside it first as .NAME.partial-PID, within a file name's 255 bytes", target.display(), name.len())));
        }
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        // A file where a folder of the path should be: say which ("File exists" said nothing).
        if let Some(file) = parent.ancestors().find(|a| a.symlink_metadata().is_ok_and(|m| !m.is_dir() && !m.file_type().is_symlink())) {
            return Err(refuse(io::ErrorKind::InvalidInput, format!("{} is a file, so no folder can be made under it for {}", file.display(), target.display())));
        }
        std::fs::create_dir_all(parent)?;
        // Two runs into one folder: the later would fail only at its end, when the earlier had
        // put its run in place.
        if let Some((pid, partial)) = remove_stale_partials(parent, &name) {
            let who = if pid == std::process::id() { "another run of this process".to_string() } else { format!("another run (process {pid})") };
            return Err(refuse(
                io::ErrorKind::AlreadyExists,
                format!("{who} is writing {}: wait for it, or name another folder (if no such run is going, delete {})", target.display(), partial.display()),
            ));
        }
        // (A partial folder this process left unlocked was cleared with the others above.)
        let partial = parent.join(format!(".{name}.partial-{}", std::process::id()));
        let lock = make_partial(&partial)?;
        Ok(RunDir { target: target.to_path_buf(), partial, replace, committed: false, _lock: lock })
    }

    /// Where to write a file of the run.
    pub fn path(&self, file: &str) -> PathBuf {
        self.partial.join(file)
    }

    /// Moves the finished folder into place. A previous run there is renamed aside first and
    /// deleted last, so a crash in between leaves one complete run visible.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        check_target(&self.target, self.replace).map_err(|e| refuse(e.kind(), format!("{e} (it changed during the run)")))?;
        let old = self.target.symlink_metadata().is_ok().then(|| {
            let name = self.target.file_name().unwrap_or_default().to_string_lossy().into_owned();
            self.target.with_file_name(format!(".{name}.old-{}", std::process::id()))
        });
        if let Some(old) = &old {
            if old.exists() {
                std::fs::remove_dir_all(old)?;
            }
            std::fs::rename(&self.target, old)?;
        }
        std::fs::rename(&self.partial, &self.target)?;
        self.committed = true;
        if let Some(old) = old {
            std::fs::remove_dir_all(old)?;
        }
        Ok(self.target.clone())
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.partial);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_dot_names_the_folder_and_a_name_too_long_for_its_partial_is_refused_before_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let run = RunDir::create(&tmp.path().join("run/."), false).unwrap();
        std::fs::write(run.path("a.txt"), "x").unwrap();
        assert_eq!(run.commit().unwrap(), tmp.path().join("run"));
        assert!(tmp.path().join("run/a.txt").exists());
        assert!(RunDir::create(&tmp.path().join("run/.."), false).is_err());
        // 235 bytes fit `.NAME.partial-PID` in 255; 236 might not, and is named as the cause.
        RunDir::create(&tmp.path().join("n".repeat(MAX_NAME)), false).unwrap();
        let e = RunDir::create(&tmp.path().join("n".repeat(MAX_NAME + 1)), false).err().expect("too long");
        assert!(e.to_string().contains("236 bytes long: at most 235"), "{e}");
    }

    #[test]
    fn a_folder_another_live_run_is_writing_is_refused_before_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        // Process 1 is alive on every Linux system. Its partial folder with the marker locked
        // (here by a handle of this test, which conflicts as another process's would) is a run
        // being written; so is one that has no marker yet.
        let partial = tmp.path().join(".run.partial-1");
        std::fs::create_dir(&partial).unwrap();
        let refused = |why: &str| {
            let e = RunDir::create(&tmp.path().join("run"), true).err().expect(why);
            assert!(e.to_string().contains("another run (process 1) is writing"), "{why}: {e}");
        };
        refused("no marker yet");
        std::fs::write(partial.join(MARKER), "x").unwrap();
        let held = std::fs::File::open(partial.join(MARKER)).unwrap();
        held.try_lock().unwrap();
        refused("the marker is locked");
        // Its lock released while the process lives on (a killed process not yet reaped, or
        // another process given the same id), the folder is a dead run's and is cleared.
        drop(held);
        RunDir::create(&tmp.path().join("run"), false).unwrap().commit().unwrap();
        assert!(!partial.exists(), "the finished writer's partial folder is gone");
        // A folder still being made (no locked marker yet) is a live run's too.
        std::fs::create_dir(tmp.path().join(".run.partial-1.tmp")).unwrap();
        refused("a partial folder being made");
        std::fs::remove_dir(tmp.path().join(".run.partial-1.tmp")).unwrap();
        std::fs::remove_dir_all(tmp.path().join("run")).unwrap();
        // A run being written holds its own lock, which a second handle cannot take, and a
        // second run of this process into the same folder (another Python thread) is refused
        // (it removed the first's partial folder, which then failed at its end).
        let d = RunDir::create(&tmp.path().join("other"), false).unwrap();
        let marker = std::fs::File::open(d.path(MARKER)).unwrap();
        assert!(matches!(marker.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
        drop(marker);
        let e = RunDir::create(&tmp.path().join("other"), false).err().expect("this process is writing it");
        assert!(e.to_string().contains("another run of this process is writing"), "{e}");
        d.commit().unwrap();
        RunDir::create(&tmp.path().join("run"), false).unwrap().commit().unwrap();
        std::fs::remove_dir_all(tmp.path().join("run")).unwrap();
        std::fs::remove_dir_all(tmp.path().join("other")).unwrap();
        // A killed process that no one has reaped keeps its id and its /proc entry, but not
        // its lock (here a child of this test that has exited and is not yet waited for).
        #[cfg(target_os = "linux")]
        {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let stat = format!("/proc/{}/stat", child.id());
            let zombie = || std::fs::read_to_string(&stat).is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
            let t0 = std::time::Instant::now();
            while !zombie() && t0.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(zombie(), "the child exited and is unreaped");
            let partial = tmp.path().join(format!(".run.partial-{}", child.id()));
            std::fs::create_dir(&partial).unwrap();
            std::fs::write(partial.join(MARKER), "x").unwrap();
            RunDir::create(&tmp.path().join("run"), false).unwrap().commit().unwrap();
            assert!(!partial.exists());
            child.wait().unwrap();
            std::fs::remove_dir_all(tmp.path().join("run")).unwrap();
        }
        std::fs::create_dir(tmp.path().join(format!(".run.partial-{}", u32::MAX))).unwrap();
        RunDir::create(&tmp.path().join("run"), false).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "the dead run's partial folder is gone");
    }

    #[test]
    fn a_file_in_the_way_of_the_path_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "").unwrap();
        let e = RunDir::create(&tmp.path().join("x/y/run"), false).err().expect("a file is in the way");
        assert!(e.to_string().contains("x is a file, so no folder can be made under it"), "{e}");
    }

    #[test]
    fn nothing_appears_unless_committed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("run");
        {
            let d = RunDir::create(&target, false).unwrap();
            std::fs::write(d.path("a.txt"), "x").unwrap();
        }
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "partial folder removed");
        let d = RunDir::create(&target, false).unwrap();
        std::fs::write(d.path("a.txt"), "x").unwrap();
        d.commit().unwrap();
        assert!(target.join("a.txt").exists());
        assert!(RunDir::create(&target, false).is_err(), "refuses to clobber");
        let d = RunDir::create(&target, true).unwrap();
        std::fs::write(d.path("b.txt"), "y").unwrap();
        d.commit().unwrap();
        assert!(!target.join("a.txt").exists() && target.join("b.txt").exists());
    }

    #[test]
    fn force_replaces_only_previous_runs() {
        let tmp = tempfile::tempdir().unwrap();
        // Someone's folder (here, the one holding a scenario) is never replaced.
        let mine = tmp.path().join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(mine.join("scenario.toml"), "x").unwrap();
        let e = RunDir::create(&mine, true).err().expect("refused");
        assert!(e.to_string().contains("not a previous run"), "{e}");
        assert!(mine.join("scenario.toml").exists());
        // A file or a dangling symbolic link is refused before anything runs, forced or not.
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(RunDir::create(&file, true).is_err() && RunDir::create(&file, false).is_err());
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(tmp.path().join("nowhere"), &link).unwrap();
            assert!(RunDir::create(&link, true).is_err());
        }
        // A run from before the marker existed is a run too.
        let legacy = tmp.path().join("legacy");
        std::fs::create_dir(&legacy).unwrap();
        std::fs::write(legacy.join("scenario.toml"), "x").unwrap();
        std::fs::write(legacy.join("summary.json"), "{}").unwrap();
        RunDir::create(&legacy, true).unwrap().commit().unwrap();
        assert!(legacy.join(MARKER).exists() && !legacy.join("summary.json").exists());
        // An empty folder is fine; a run replaces a run and leaves nothing else behind.
        let run = tmp.path().join("run");
        std::fs::create_dir(&run).unwrap();
        RunDir::create(&run, false).unwrap().commit().unwrap();
        assert!(is_run(&run));
        let d = RunDir::create(&run, true).unwrap();
        std::fs::write(d.path("new.txt"), "y").unwrap();
        d.commit().unwrap();
        assert!(run.join("new.txt").exists());
        let names: Vec<String> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| !n.contains(".old-") && !n.contains(".partial-")), "{names:?}");
    }

    #[test]
    fn partial_folders_of_dead_processes_are_cleaned_up() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid far above any Linux pid_max is never alive.
        let stale = tmp.path().join(".run.partial-4999999");
        std::fs::create_dir(&stale).unwrap();
        let _d = RunDir::create(&tmp.path().join("run"), false).unwrap();
        if cfg!(target_os = "linux") {
            assert!(!stale.exists());
        }
    }
}
