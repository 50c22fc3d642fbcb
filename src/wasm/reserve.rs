//! A reserve of OPFS space beside a store's pool, given up when a delete finds the origin's
//! quota exhausted.
//!
//! Deleting needs room: SQLite appends the delete to the WAL, and giving the freed pages back
//! moves pages through the WAL too. On an origin whose quota is used up to the last byte there
//! is none, and a store that cannot delete cannot recover. So the store holds a file of up to
//! [`RESERVE_BYTES`] outside its pool: a delete (or the giving back of its pages) refused for
//! want of room empties the file and tries again, then closes it and tries once more.
//!
//! The two browsers count differently. Firefox counts a file's bytes as they change, open or
//! not: emptying the file gives its room to the delete at once, and the pages the delete gives
//! back are room at once too, so the reserve (still open) grows back right after the delete,
//! before a later write can take that room ([`Reserve::top_up`]). Were it left to the writes,
//! a store filled up again would hold no reserve, and its WAL can hold commits whose pages lie
//! past the end of the database file (the checkpoint that would copy them found no room): a
//! delete after a reopen would then find no room for its own WAL frames (measured: 160 B left
//! of a 24 MiB quota, a 4 MiB WAL, an empty reserve). Chrome counts what a file was given while
//! its access handle is open (in chunks of 1 MiB and more, doubling), and gives back what the
//! file no longer holds only when the handle closes: there only closing the reserve gives its
//! room to the delete, and the room a delete frees stays with the store's files while they are
//! open (the store's later writes use it again). The reserve is set up again when the store
//! closes (its files closed first, so the origin has the room they gave back) and when it
//! opens, in both cases as large as the origin has room for.

use std::cell::RefCell;

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
    /// The reserve file: open while it holds its space, and while emptied by a delete (it
    /// grows back from there); closed once closing it was the last room it could give.
    handle: RefCell<Option<FileSystemSyncAccessHandle>>,
}

impl Reserve {
    /// Opens the reserve file of the pool `pool`, best effort (see [`Reserve::fill`]), without
    /// growing it: the store's own files take the room they need first, then
    /// [`Reserve::top_up`] grows the reserve.
    pub async fn open(pool: &str) -> Reserve {
        Reserve {
            pool: pool.to_owned(),
            handle: RefCell::new(open(pool).await.ok()),
        }
    }

    /// Opens the reserve file if it is closed and grows it (see [`Reserve::top_up`]). Best
    /// effort: where OPFS refuses, the store works without a reserve for now (and a delete on a
    /// full origin may then fail with STORAGE_FULL) until it next closes or opens.
    pub async fn fill(&self) {
        if self.handle.borrow().is_none() {
            let Ok(handle) = open(&self.pool).await else {
                return;
            };
            *self.handle.borrow_mut() = Some(handle);
        }
        self.top_up();
    }

    /// Grows the open reserve file to [`RESERVE_BYTES`], or to half of that and so on down to
    /// [`SMALLEST_RESERVE_BYTES`] where the origin has less room (Chrome grants powers of two);
    /// a file that holds that much already stays as it is. Where the origin has no room even
    /// for the smallest, the file stays open and empty, to grow when a delete frees room (in
    /// Firefox). Does nothing once [`Reserve::release`] closed the file.
    pub fn top_up(&self) {
        let slot = self.handle.borrow();
        let Some(handle) = slot.as_ref() else {
            return;
        };
        let held = handle.get_size().unwrap_or(0.0);
        let mut size = RESERVE_BYTES;
        while size >= SMALLEST_RESERVE_BYTES && size > held {
            if handle.truncate_with_f64(size).is_ok() && handle.flush().is_ok() {
                return;
            }
            size /= 2.0;
        }
    }

    /// Gives the reserve's room back to the origin, a step at a time: a file that holds bytes
    /// is emptied and stays open (enough where the browser counts a file's bytes, Firefox, and
    /// the reserve can grow back after the delete); an empty one is closed (Chrome gives a
    /// file's room back only when its handle closes). Returns whether there was a step left to
    /// take, that is whether running the delete once more may find room.
    pub fn release(&self) -> bool {
        let mut slot = self.handle.borrow_mut();
        let Some(handle) = slot.as_ref() else {
            return false;
        };
        if handle.get_size().is_ok_and(|size| size > 0.0) {
            let _ = handle.truncate_with_f64(0.0);
            let _ = handle.flush();
        } else if let Some(handle) = slot.take() {
            handle.close();
        }
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
