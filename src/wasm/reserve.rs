//! A reserve of OPFS space beside a store's pool, given up when a delete finds the origin's
//! quota exhausted.
//!
//! Deleting needs room: SQLite appends the delete to the WAL, and giving the freed pages back
//! checkpoints the WAL into the database file, which may first have to grow by the pages the
//! WAL holds. On an origin whose quota is used up to the last byte, neither has room, and a
//! store that cannot delete cannot recover. So the store holds a file of [`RESERVE_BYTES`]
//! zeros, outside its pool: a delete refused for want of room empties and closes it (Chrome
//! counts an open access handle's allocation until it closes), which gives its space to the
//! delete, and tries again. The next open of the store sets the reserve up again.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions,
    FileSystemGetFileOptions, FileSystemSyncAccessHandle,
};

/// The size of the reserve: room for a delete's WAL frames and for a checkpoint that grows the
/// database file by what the WAL holds after a large write.
pub const RESERVE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// The OPFS directory of every pool's reserve; pool names cannot start with `.`.
const RESERVE_DIRECTORY: &str = ".runstore-reserve";

/// The reserve of one pool.
pub struct Reserve {
    pool: String,
    /// The reserve file, held open while it holds its space.
    handle: RefCell<Option<FileSystemSyncAccessHandle>>,
}

impl Reserve {
    /// Sets up the reserve of the pool `pool`: the file is created or grown to
    /// [`RESERVE_BYTES`] and held open. Best effort: where the quota has no room for it, or OPFS
    /// refuses, the store works without one for now (and a delete on a full origin may then
    /// fail with STORAGE_FULL); [`Reserve::refill`] tries again.
    pub async fn acquire(pool: &str) -> Rc<Reserve> {
        let reserve = Rc::new(Reserve {
            pool: pool.to_owned(),
            handle: RefCell::new(None),
        });
        reserve.fill().await;
        reserve
    }

    async fn fill(&self) {
        if self.handle.borrow().is_some() {
            return;
        }
        let Ok(handle) = open(&self.pool).await else {
            return;
        };
        if handle.truncate_with_f64(RESERVE_BYTES).is_ok() && handle.flush().is_ok() {
            *self.handle.borrow_mut() = Some(handle);
        } else {
            handle.close();
        }
    }

    /// Sets the reserve up again in the background, once a delete has given space back.
    pub fn refill(self: &Rc<Self>) {
        if self.handle.borrow().is_none() {
            let reserve = Rc::clone(self);
            wasm_bindgen_futures::spawn_local(async move { reserve.fill().await });
        }
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
