//! An output directory that appears only when complete.
//!
//! Files are written into a hidden sibling `.NAME.partial-PID` and the folder is renamed into
//! place by [`RunDir::commit`]. If the run fails or is interrupted the partial folder is removed
//! on drop; if the process is killed outright, what remains is clearly named partial and holds
//! no `summary.json`.

use std::io;
use std::path::{Path, PathBuf};

pub struct RunDir {
    target: PathBuf,
    partial: PathBuf,
    replace: bool,
    committed: bool,
}

impl RunDir {
    /// Prepares to write `target`. An existing non-empty `target` is an error unless `replace`.
    pub fn create(target: &Path, replace: bool) -> io::Result<RunDir> {
        if target.exists() && !replace && target.read_dir()?.next().is_some() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} exists and is not empty (use --force to replace it)", target.display())));
        }
        let name = target.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the output path has no folder name"))?;
        let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        let partial = parent.join(format!(".{}.partial-{}", name.to_string_lossy(), std::process::id()));
        if partial.exists() {
            std::fs::remove_dir_all(&partial)?;
        }
        std::fs::create_dir(&partial)?;
        Ok(RunDir { target: target.to_path_buf(), partial, replace, committed: false })
    }

    /// Where to write a file of the run.
    pub fn path(&self, file: &str) -> PathBuf {
        self.partial.join(file)
    }

    /// Moves the finished folder into place.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        if self.target.exists() {
            if !self.replace && self.target.read_dir()?.next().is_some() {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{} appeared during the run", self.target.display())));
            }
            std::fs::remove_dir_all(&self.target)?;
        }
        std::fs::rename(&self.partial, &self.target)?;
        self.committed = true;
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
}
