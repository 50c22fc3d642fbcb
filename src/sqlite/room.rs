//! Whether the store has room to take a write, on a disk that may be full.

use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::hooks::Wal;
use rusqlite::{Connection, ErrorCode};

use super::SqliteStore;
use crate::error::{Error, Result};

/// Frames in the WAL from which a commit checkpoints it: SQLite's own automatic checkpoint.
const AUTOCHECKPOINT_FRAMES: c_int = 1000;

/// Whether the store has room to take a write.
///
/// A commit goes to the WAL, and a checkpoint copies it into the database file, which grows by
/// the pages the commit added. On a full disk that growth fails: the checkpoint stops, and
/// without a guard the WAL would take every later commit and grow instead, until the database
/// could never take it in (in Chrome, whose OPFS gives a growing file room in doubling steps,
/// a database of 8 MiB needs 8 MiB more to grow at all, which the WAL, growing in smaller
/// steps, has used up), and no delete could run either: a store full for good. So once a
/// checkpoint found no room, writes are refused with STORAGE_FULL until one succeeds again;
/// deletes still run, and theirs succeeds once they shrink the database below its file.
pub(crate) struct Room {
    /// Set by the WAL hook when the automatic checkpoint found no room, cleared when a
    /// checkpoint completes.
    pub(super) blocked: Arc<AtomicBool>,
    /// Set while a delete runs: it may write even then.
    deleting: Cell<bool>,
}

impl Room {
    /// Runs SQLite's automatic checkpoint from a WAL hook of the store's own, which notes
    /// whether it found room.
    pub(crate) fn watch(conn: &mut Connection) -> Result<Room> {
        let blocked = Arc::new(AtomicBool::new(false));
        let noted = Arc::clone(&blocked);
        conn.wal_hook(Some(move |wal: &mut Wal, frames: c_int| {
            if frames >= AUTOCHECKPOINT_FRAMES {
                match wal.checkpoint() {
                    Ok(()) => noted.store(false, Ordering::Relaxed),
                    Err(error) if is_full(&error) => noted.store(true, Ordering::Relaxed),
                    // Readers on other connections (natively): the next commit tries again.
                    Err(_) => {}
                }
            }
            // The commit stands either way.
            Ok(())
        }))?;
        Ok(Room {
            blocked,
            deleting: Cell::new(false),
        })
    }
}

pub(super) fn is_full(error: &rusqlite::Error) -> bool {
    error.sqlite_error_code() == Some(ErrorCode::DiskFull)
}

/// Marks a delete as running for as long as it lives.
pub(super) struct Deleting<'a>(&'a Cell<bool>);

impl<'a> Deleting<'a> {
    pub(super) fn start(room: &'a Room) -> Self {
        room.deleting.set(true);
        Deleting(&room.deleting)
    }
}

impl Drop for Deleting<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl SqliteStore {
    /// Refuses a write while the WAL cannot be checkpointed for want of room (see [`Room`]),
    /// after trying once more: a delete may have made room.
    ///
    /// # Errors
    /// [`Error::StorageFull`].
    pub(crate) fn check_room(&self) -> Result<()> {
        if self.room.deleting.get()
            || !self.room.blocked.load(Ordering::Relaxed)
            || self.checkpoint()
        {
            return Ok(());
        }
        Err(Error::StorageFull {
            message: "the disk is full: the database cannot take in its write-ahead log; \
                      delete or purge to make room"
                .into(),
        })
    }
}
