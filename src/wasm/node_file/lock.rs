//! The lock file that keeps a store's database to one open at a time, across processes and
//! within one: Node has no file locks, so the holder is named in a file created exclusively
//! (`<db>.lock`: its pid, when its process started, and a token of this open), and removed on
//! close.
//!
//! A lock whose holder is gone (its process ended without closing, or was killed) is taken
//! over, under a second exclusive file (`<db>.lock.break`), so that of two openers that both
//! find the same stale lock, only one removes it, and never a lock taken since. A lock naming
//! this process is held (by this thread or another: worker threads, Bun's workers, each with a
//! wasm instance of its own); one naming this pid but another start is an earlier process's
//! (a container restarted with the same pid).

use std::rc::Rc;

use wasm_bindgen::JsValue;

use super::fs::{self, Node};
use crate::error::{Error, Result};

/// How old a lock file without a readable holder may be before it counts as abandoned: its
/// creator is between creating it and writing its pid, or was killed there.
const UNNAMED_HOLDER_MS: f64 = 2_000.0;

/// Attempts to take a lock that keeps being released and taken by others before answering BUSY.
const ATTEMPTS: usize = 3;

/// How far two threads of one process may disagree on when it started (outside Linux each
/// computes it from the wall clock and the process's uptime; see `Node::process_start_ms`).
const SAME_START_MS: f64 = 250.0;

/// A held lock file, removed by [`FileLock::release`] or when dropped.
pub(in crate::wasm) struct FileLock(Claim);

/// An open's claim on a lock file: its path and the text it writes there.
struct Claim {
    node: Rc<Node>,
    path: String,
    content: String,
}

impl FileLock {
    /// Takes the lock file `path`, or answers BUSY at once when a running process (this one
    /// included) holds it.
    pub(super) fn acquire(node: Rc<Node>, path: String) -> Result<FileLock> {
        let token = (js_sys::Math::random() * 1e15) as u64;
        let start = node.process_start_ms();
        let content = format!("{}\n{start:.0}\n{token:x}\n", node.process.pid());
        Claim {
            node,
            path,
            content,
        }
        .take()
    }

    /// Removes the lock file if it is still this open's.
    fn release(&self) {
        let claim = &self.0;
        if claim.read(&claim.path).as_deref() == Some(claim.content.as_str()) {
            let _ = claim.node.fs.unlink_sync(&claim.path);
        }
    }
}

impl Claim {
    fn take(self) -> Result<FileLock> {
        let lock = self;
        for _ in 0..ATTEMPTS {
            match lock.create(&lock.path) {
                Ok(true) => return Ok(FileLock(lock)),
                Ok(false) => {}
                Err(error) => return Err(lock.failed("create", &error)),
            }
            let Some(seen) = lock.read(&lock.path) else {
                continue; // released in between: try again
            };
            if let Some(holder) = lock.running_holder(&lock.path, &seen) {
                return Err(lock.busy(&holder));
            }
            lock.break_stale(&seen)?;
        }
        Err(lock.busy("other processes opening it at the same time"))
    }

    /// Creates `path` holding this open's content; false when it exists.
    fn create(&self, path: &str) -> std::result::Result<bool, JsValue> {
        let flags = &self.node.flags;
        let mode = flags.read_write | flags.create | flags.exclusive;
        let fd = match self.node.fs.open_sync(path, mode) {
            Ok(fd) => fd,
            Err(error) if fs::error_code(&error).as_deref() == Some("EEXIST") => return Ok(false),
            Err(error) => return Err(error),
        };
        let written = self.node.fs.write_text_sync(fd, &self.content);
        let _ = self.node.fs.close_sync(fd);
        written.map(|_| true)
    }

    /// The text of `path`, or `None` when it is gone.
    fn read(&self, path: &str) -> Option<String> {
        self.node.fs.read_text_sync(path, "utf8").ok()
    }

    /// Who holds the lock file `path` whose text is `seen`, if that holder still runs.
    fn running_holder(&self, path: &str, seen: &str) -> Option<String> {
        let mut lines = seen.lines().map(str::trim);
        let pid = lines.next().and_then(|line| line.parse::<u32>().ok());
        let start = lines.next().and_then(|line| line.parse::<f64>().ok());
        let Some(pid) = pid else {
            let young = self
                .node
                .age_ms(path)
                .is_none_or(|age| age < UNNAMED_HOLDER_MS);
            return young.then(|| "a process that is taking it now".to_owned());
        };
        if pid == self.node.process.pid() {
            let ours = start
                .is_some_and(|start| (start - self.node.process_start_ms()).abs() < SAME_START_MS);
            return ours.then(|| "this process (close the open store first)".to_owned());
        }
        self.node.is_running(pid).then(|| format!("process {pid}"))
    }

    /// Removes the stale lock whose text is `seen`, unless another opener is doing so (BUSY) or
    /// the lock changed since (then the caller looks again).
    fn break_stale(&self, seen: &str) -> Result<()> {
        let breaker = format!("{}.break", self.path);
        match self.create(&breaker) {
            Ok(true) => {}
            Ok(false) => {
                let other = self.read(&breaker).unwrap_or_default();
                if let Some(holder) = self.running_holder(&breaker, &other) {
                    return Err(self.busy(&format!("{holder}, which is taking over a stale lock")));
                }
                // An opener died while taking over: its breaker goes, and the caller retries.
                let _ = self.node.fs.unlink_sync(&breaker);
                return Ok(());
            }
            Err(error) => return Err(self.failed("create", &error)),
        }
        if self.read(&self.path).as_deref() == Some(seen) {
            let _ = self.node.fs.unlink_sync(&self.path);
        }
        let _ = self.node.fs.unlink_sync(&breaker);
        Ok(())
    }

    fn busy(&self, holder: &str) -> Error {
        let database = self.path.trim_end_matches(".lock");
        Error::Busy {
            message: format!(
                "the store file {database} is open in {holder} (lock file {})",
                self.path
            ),
        }
    }

    fn failed(&self, what: &str, error: &JsValue) -> Error {
        let message = format!(
            "could not {what} the lock file {}: {}",
            self.path,
            fs::error_text(error)
        );
        match fs::error_code(error).as_deref() {
            Some("ENOSPC" | "EDQUOT") => Error::StorageFull { message },
            _ => Error::Backend { message },
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        self.release();
    }
}
