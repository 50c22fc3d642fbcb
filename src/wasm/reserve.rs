//! A reserve of OPFS space beside a store's pool, given up when a delete finds the origin's
//! quota exhausted.
//!
//! Deleting needs room: SQLite appends the delete to the WAL, and giving the freed pages back
//! moves pages through the WAL too. On an origin whose quota is used up to the last byte there
//! is none, and a store that cannot delete cannot recover. So the store holds a file of up to
//! [`RESERVE_BYTES`] outside its pool: a delete (or the giving back of its pages) refused for
//! want of room empties and closes it, which gives its room to the delete, and tries again.
//!
//! Chrome counts what a file was given while its access handle is open (in chunks of 1 MiB
//! and more, doubling), and gives back what the file no longer holds only when the handle
//! closes. So the room a delete frees stays with the store's files while they are open: the
//! store's later writes use it again, but the reserve cannot take it back then. The reserve is
//! set up again when the store closes (its files closed first, so the origin has the room they
//! gave back) and when it opens, in both cases as large as the origin has room for.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions,
    FileSystemGetFileOptions, FileSystemSyncAccessHandle,
};

/// The size of the reserve when the origin has room for it: room for a delete's WAL frames
/// and for the steps that give its pages back, in Chrome's chunks of 1 MiB and more.
pub const RESERVE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// The smallest reserve worth holding: one chunk, the room a WAL is first given.
const SMALLEST_RESERVE_BYTES: f64 = 1024.0 * 1024.0;

/// The OPFS directory of every pool's reserve; pool names cannot start with `.`.
const RESERVE_DIRECTORY: &str = ".runstore-reserve";

/// The reserve of one pool.
pub struct Reserve {
    pool: String,
    /// The reserve file, held open while it holds its space.
    handle: RefCell<Option<FileSystemSyncAccessHandle>>,
}

impl Reserve {
    /// Sets up the reserve of the pool `pool` (see [`Reserve::fill`]).
    pub async fn acquire(pool: &str) -> Rc<Reserve> {
        let reserve = Rc::new(Reserve {
            pool: pool.to_owned(),
            handle: RefCell::new(None),
        });
        reserve.fill().await;
        reserve
    }

    /// Creates or grows the reserve file to [`RESERVE_BYTES`], or to half of that and so on down
    /// to [`SMALLEST_RESERVE_BYTES`] where the origin has less room (Chrome grants powers of
    /// two), and holds it open. Best effort: where the quota has no room even for that, or
    /// OPFS refuses, the store works without a reserve for now (and a delete on a full origin
    /// may then fail with STORAGE_FULL) until it next closes or opens.
    pub async fn fill(&self) {
        if self.handle.borrow().is_some() {
            return;
        }
        let Ok(handle) = open(&self.pool).await else {
            return;
        };
        let mut size = RESERVE_BYTES;
        while size >= SMALLEST_RESERVE_BYTES {
            if handle.truncate_with_f64(size).is_ok() && handle.flush().is_ok() {
                *self.handle.borrow_mut() = Some(handle);
                return;
            }
            size /= 2.0;
        }
        handle.close();
    }

    /// Gives the reserve's space back to the origin: empties and closes the file. Returns
    /// whether there was a reserve to give.
    pub fn release(&self) -> bool {
        let Some(handle) = self.handle.borrow_mut().take() else {
            return false;
        };
        let _ = handle.truncate_with_f64(0.0);
        let _ = handle.flush();
        handle.close();
        true
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        // Closing keeps the file's size: the next open finds its space still held.
        if let Some(handle) = self.handle.borrow_mut().take() {
            handle.close();
        }
    }
}

async fn open(pool: &str) -> Result<FileSystemSyncAccessHandle, wasm_bindgen::JsValue> {
    let scope: web_sys::WorkerGlobalScope = js_sys::global().dyn_into()?;
    let root: FileSystemDirectoryHandle =
        JsFuture::from(scope.navigator().storage().get_directory())
            .await?
            .dyn_into()?;
    let create_dir = FileSystemGetDirectoryOptions::new();
    create_dir.set_create(true);
    let directory: FileSystemDirectoryHandle =
        JsFuture::from(root.get_directory_handle_with_options(RESERVE_DIRECTORY, &create_dir))
            .await?
            .dyn_into()?;
    let create_file = FileSystemGetFileOptions::new();
    create_file.set_create(true);
    let file: FileSystemFileHandle =
        JsFuture::from(directory.get_file_handle_with_options(pool, &create_file))
            .await?
            .dyn_into()?;
    JsFuture::from(file.create_sync_access_handle())
        .await?
        .dyn_into()
}
