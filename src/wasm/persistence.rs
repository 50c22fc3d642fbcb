//! Where `RunStoreCore.open` keeps a store: OPFS, IndexedDB or memory, as asked, or the best of
//! them that exists here (`auto`).

use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::{install_idb, install_pool, open_in_memory, IdbPool, OpfsPool};
use crate::{Durability, Error, Result, SqliteStore};

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
    /// OPFS where it exists, else IndexedDB, else memory.
    #[default]
    Auto,
}

/// The database file inside a store's pool.
const DATABASE_FILE: &str = "/runstore.db";

/// What holds an open store's database.
pub(super) enum Place {
    Opfs(OpfsPool),
    IndexedDb(Rc<IdbPool>),
    Memory,
}

impl Place {
    /// The persistence the store took: `"opfs"`, `"indexeddb"` or `"memory"`.
    pub(super) fn persistence(&self) -> &'static str {
        match self {
            Place::Opfs(_) => "opfs",
            Place::IndexedDb(_) => "indexeddb",
            Place::Memory => "memory",
        }
    }

    /// Releases what holds the database, after the store was dropped: an IndexedDB pool stores
    /// what is not stored yet first.
    pub(super) async fn close(self) -> Result<()> {
        match self {
            Place::Opfs(pool) => pool.close().await,
            Place::IndexedDb(pool) => pool.close().await,
            Place::Memory => Ok(()),
        }
    }
}

/// Opens the store `name` where `persistence` says. `auto` moves on to the next medium only
/// when one is unavailable here (OPFS_UNAVAILABLE), never past a store that is busy or full.
pub(super) async fn open(
    name: &str,
    persistence: Persistence,
    durability: Durability,
) -> Result<(SqliteStore, Place)> {
    match persistence {
        Persistence::Opfs => open_opfs(name, durability).await,
        Persistence::IndexedDb => open_indexeddb(name, durability).await,
        Persistence::Memory => Ok((open_in_memory()?, Place::Memory)),
        Persistence::Auto => match open_opfs(name, durability).await {
            Err(Error::OpfsUnavailable { .. }) => match open_indexeddb(name, durability).await {
                Err(Error::OpfsUnavailable { .. }) => Ok((open_in_memory()?, Place::Memory)),
                opened => opened,
            },
            opened => opened,
        },
    }
}

async fn open_opfs(name: &str, durability: Durability) -> Result<(SqliteStore, Place)> {
    let pool = install_pool(name).await?;
    match pool.open(DATABASE_FILE, durability) {
        Ok(store) => Ok((store, Place::Opfs(pool))),
        Err(error) => {
            // The open's error is the one worth reporting.
            let _ = pool.close().await;
            Err(error)
        }
    }
}

/// Opens the IndexedDB store and stores it at once: a new store's schema is in IndexedDB
/// before the open resolves.
async fn open_indexeddb(name: &str, durability: Durability) -> Result<(SqliteStore, Place)> {
    let pool = install_idb(name).await?;
    let opened = pool.open(DATABASE_FILE, durability);
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
