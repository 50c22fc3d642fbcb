//! The file medium: where Node's synchronous file calls exist (Node 20.16+, Bun, Electron's main
//! process), a store lives in the ordinary SQLite file `<directory>/<name>.db`, the same file
//! the native `SqliteStore` opens. SQLite reaches it through a VFS over those calls (`vfs.rs`);
//! the database runs WAL under exclusive locking on one connection, and a lock file
//! (`lock.rs`) answers a second opener, in this process or another, with BUSY.

mod fs;
mod lock;
mod vfs;

use std::cell::OnceCell;
use std::rc::Rc;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};
use crate::sqlite::{Durability, Key, Medium, SqliteStore};
use fs::Node;
pub(super) use lock::FileLock;

/// The name the VFS is registered under.
const VFS_NAME: &str = "runstore-node-file";

thread_local! {
    /// Node's modules, with the VFS registered over them: once per wasm instance, for good.
    static REGISTERED: OnceCell<Option<(Rc<Node>, vfs::Registration)>> = const { OnceCell::new() };
}

/// Node's modules with the VFS registered, or `None` where this runtime has no file calls.
fn registered() -> Result<Option<Rc<Node>>> {
    REGISTERED.with(|cell| {
        if let Some(found) = cell.get() {
            return Ok(found.as_ref().map(|(node, _)| node.clone()));
        }
        let found = match Node::find() {
            Some(node) => {
                let node = Rc::new(node);
                let registration =
                    vfs::register(VFS_NAME, node.clone()).map_err(|error| Error::Backend {
                        message: format!("registering the file VFS: {error:?}"),
                    })?;
                Some((node, registration))
            }
            None => None,
        };
        let node = found.as_ref().map(|(node, _)| node.clone());
        let _ = cell.set(found);
        Ok(node)
    })
}

/// Whether this runtime has the file calls the file medium needs.
pub(super) fn available() -> bool {
    matches!(registered(), Ok(Some(_)))
}

/// Opens (creating if needed) the store `name` in `directory` (created if missing; relative to
/// the working directory), holding its lock file until the returned lock is dropped.
///
/// # Errors
/// [`Error::Busy`] when the store is open elsewhere (another process, or this one);
/// [`Error::StorageFull`] when the disk is full; the errors of [`SqliteStore::from_connection`];
/// [`Error::Backend`] when the directory cannot be made or the runtime has no file calls.
pub(super) fn open(
    directory: &str,
    name: &str,
    durability: Durability,
    key: Option<&Key>,
) -> Result<(SqliteStore, FileLock)> {
    let Some(node) = registered()? else {
        return Err(Error::Backend {
            message: "this runtime has no synchronous file calls (process.getBuiltinModule)".into(),
        });
    };
    let path = node.path.resolve(directory, &format!("{name}.db"));
    node.make_directory(&node.path.dirname(&path))
        .map_err(|error| Error::Backend {
            message: format!(
                "could not make the directory {directory:?}: {}",
                fs::error_text(&error)
            ),
        })?;
    let lock = FileLock::acquire(node, format!("{path}.lock"))?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(&path, flags, VFS_NAME)?;
    // On failure the lock goes with it.
    let store = SqliteStore::from_connection_with_key(conn, Medium::NodeFile, durability, key)?;
    Ok((store, lock))
}
