//! Where `RunStoreCore.open` keeps a store: OPFS, IndexedDB, memory or (in Node) a file, as
//! asked, or the best of them that exists here (`auto`).

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::node_file::{self, FileLock};
use super::reserve::Reserve;
use super::{install_idb, install_pool_beside, open_in_memory, IdbPool, OpfsPool};
use crate::{Durability, Error, Key, Result, SqliteStore};

/// Where `RunStoreCore.open` keeps the database.
#[derive(Deserialize, Serialize, Clone, Copy, Default, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub(super) enum Persistence {
    /// OPFS with sync access handles (dedicated workers only).
    Opfs,
    /// IndexedDB: the database in memory, every flush stored in one IndexedDB transaction.
    IndexedDb,
    /// A private in-memory database, gone when the store closes.
    Memory,
    /// An SQLite file in a directory, through Node's file calls (Node, Bun, Electron).
    File,
    /// With a directory, a file; else OPFS where it exists, else IndexedDB, else memory.
    #[default]
    Auto,
}

/// The database file inside a store's pool.
const DATABASE_FILE: &str = "/runstore.db";

/// The slots a store's new pool holds: its file, its WAL, and the encrypted copy with its
/// journal that encrypting it in place makes (`sqlite/encrypt.rs`). Each is two round trips
/// to the browser's storage process, which Firefox answers one after another: a first
/// visit's open waits for them.
const STORE_SLOTS: usize = 4;

/// What holds an open store's database.
pub(super) enum Place {
    /// The pool, and the reserve of OPFS space held back for its deletes.
    Opfs(OpfsPool, Reserve),
    IndexedDb(Rc<IdbPool>),
    Memory,
    File(FileLock),
}

impl Place {
    /// The persistence the store took: `"opfs"`, `"indexeddb"` or `"memory"`.
    pub(super) fn persistence(&self) -> &'static str {
        match self {
            Place::Opfs(..) => "opfs",
            Place::IndexedDb(_) => "indexeddb",
            Place::Memory => "memory",
            Place::File(_) => "file",
        }
    }

    /// Releases what holds the database, after the store was dropped: an IndexedDB pool stores
    /// what is not stored yet first; an OPFS pool closes its files, and its reserve takes back
    /// the room they gave the origin before the pool's lock goes (the next opener waits for
    /// that lock, so it cannot take the room first).
    pub(super) async fn close(self) -> Result<()> {
        match self {
            Place::Opfs(pool, reserve) => {
                pool.close_files()?;
                reserve.fill().await;
                pool.close().await
            }
            Place::IndexedDb(pool) => pool.close().await,
            Place::Memory => Ok(()),
            Place::File(lock) => {
                drop(lock);
                Ok(())
            }
        }
    }
}

/// Opens the store `name` where `persistence` says (`directory` is the file medium's, checked
/// by [`check_directory`]). `auto` moves on to the next medium only when one is unavailable
/// here (OPFS_UNAVAILABLE), never past a store that is busy or full.
pub(super) async fn open(
    name: &str,
    persistence: Persistence,
    directory: Option<&str>,
    durability: Durability,
    key: Option<&Key>,
) -> Result<(SqliteStore, Place)> {
    if let Some(directory) = directory {
        let (store, lock) = node_file::open(directory, name, durability, key)?;
        return Ok((store, Place::File(lock)));
    }
    match persistence {
        Persistence::File => Err(Error::invalid(
            "options.directory",
            "persistence 'file' needs a directory",
        )),
        Persistence::Opfs => open_opfs(name, durability, key).await,
        Persistence::IndexedDb => open_indexeddb(name, durability, key).await,
        Persistence::Memory => open_memory(key),
        Persistence::Auto => match open_opfs(name, durability, key).await {
            Err(Error::OpfsUnavailable { .. }) => match open_indexeddb(name, durability, key).await
            {
                Err(Error::OpfsUnavailable { .. }) => open_memory(key),
                opened => opened,
            },
            opened => opened,
        },
    }
}

/// A memory store: never stored, so never encrypted. A key asks for a store on disk that
/// this context cannot give (`auto` in Node without a directory, say): refused, rather than
/// a store whose exports would come out plain.
fn open_memory(key: Option<&Key>) -> Result<(SqliteStore, Place)> {
    if key.is_some() {
        return Err(Error::invalid(
            "options.key",
            "a memory store is never stored and takes no key; an encrypted store needs OPFS, \
             IndexedDB or a file (persistence 'file' with a directory in Node)",
        ));
    }
    Ok((open_in_memory()?, Place::Memory))
}

/// Opens the store on OPFS, with the reserve of its pool (see `reserve.rs`) opened while the
/// pool's files are.
async fn open_opfs(
    name: &str,
    durability: Durability,
    key: Option<&Key>,
) -> Result<(SqliteStore, Place)> {
    let (pool, reserve) = install_pool_beside(name, STORE_SLOTS, Reserve::open(name)).await?;
    match pool.open_with_key(DATABASE_FILE, durability, key) {
        Ok(store) => Ok((store, Place::Opfs(pool, reserve))),
        Err(error) => {
            // The open's error is the one worth reporting.
            let _ = pool.close().await;
            Err(error)
        }
    }
}

/// Opens the IndexedDB store and stores it at once: a new store's schema is in IndexedDB
/// before the open resolves.
async fn open_indexeddb(
    name: &str,
    durability: Durability,
    key: Option<&Key>,
) -> Result<(SqliteStore, Place)> {
    let pool = install_idb(name).await?;
    let opened = pool.open_with_key(DATABASE_FILE, durability, key);
    let flushed = match &opened {
        Ok(_) => pool.flush().await,
        Err(_) => Ok(()),
    };
    match (opened, flushed) {
        (Ok(store), Ok(())) => Ok((store, Place::IndexedDb(Rc::new(pool)))),
        (opened, flushed) => {
            let error = opened.err().or(flushed.err()).expect("one of them failed");
            let _ = pool.close().await;
            Err(error)
        }
    }
}

/// Checks the file medium's options: `directory` goes with `file` or `auto` (which then takes a
/// file), `file` needs one, and both need a runtime with Node's file calls.
pub(super) fn check_directory(persistence: Persistence, directory: Option<&str>) -> Result<()> {
    let asks_file = persistence == Persistence::File
        || (persistence == Persistence::Auto && directory.is_some());
    if !asks_file {
        if directory.is_some() {
            return Err(Error::invalid(
                "options.directory",
                "a directory goes with persistence 'file' (or 'auto'), not with another medium",
            ));
        }
        return Ok(());
    }
    if !node_file::available() {
        return Err(Error::invalid(
            "options.persistence",
            format!(
                "a store in a file needs Node's synchronous file calls (Node 20.16 or later, \
                 Bun, Electron's main process), which {} does not have; in a browser a store \
                 lives in 'opfs', 'indexeddb' or 'memory' ('auto' takes the best there is)",
                super::context::describe()
            ),
        ));
    }
    match directory {
        None => Err(Error::invalid(
            "options.directory",
            "persistence 'file' needs a directory: where the store's file goes",
        )),
        Some(directory) if directory.is_empty() || directory.contains('\0') => Err(Error::invalid(
            "options.directory",
            "the directory must be a non-empty path without NUL",
        )),
        Some(_) => Ok(()),
    }
}
