//! The SQLite VFS of an IndexedDB pool: every named file lives in memory as a [`BlockFile`]
//! (SQLite reads and writes it synchronously), and [`Files::take_batch`] collects what changed
//! for the pool to store in IndexedDB. Anonymous files (statement journals, temporary tables)
//! are plain memory and never stored.
//!
//! Locks are no-ops: the pool lets one connection open a database, and the pool itself is held
//! by one context at a time (its Web Lock).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, LockLevel, MemChunksFile, OpenAccess, OpenRequest, OpenedFile,
    RegisterVfsError, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsAppData, VfsError, VfsErrorCode,
    VfsFile, VfsRegistration, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;

use super::blocks::{BlockFile, Changes};
use crate::Durability;

/// A named file and the durability its database was opened with.
struct Named {
    file: Rc<RefCell<BlockFile>>,
    durability: Durability,
}

/// The pool's named files, and the ones deleted since the last write to IndexedDB began.
#[derive(Default)]
pub(super) struct Files {
    named: BTreeMap<String, Named>,
    /// Kept until a write has deleted them from IndexedDB, to come back if it fails.
    deleted: BTreeMap<String, Named>,
}

/// Everything one write to IndexedDB stores: files deleted, and each changed file's changes.
pub(super) struct Batch {
    pub(super) deleted: Vec<String>,
    pub(super) changed: Vec<(String, Changes)>,
    /// `Full` when any changed file belongs to a database opened with it.
    pub(super) durability: Durability,
    deleted_files: Vec<(String, Named)>,
    files: Vec<Rc<RefCell<BlockFile>>>,
}

impl Files {
    /// The files IndexedDB holds, as loaded when the pool was installed.
    pub(super) fn loaded(files: Vec<(String, BlockFile)>) -> Self {
        let named = files
            .into_iter()
            .map(|(name, file)| {
                let file = Rc::new(RefCell::new(file));
                let durability = Durability::Full;
                (name, Named { file, durability })
            })
            .collect();
        Files {
            named,
            deleted: BTreeMap::new(),
        }
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &String> {
        self.named.keys()
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.named.contains_key(name)
    }

    /// Whether a connection (or anything else) holds the file `name` open.
    pub(super) fn is_open(&self, name: &str) -> bool {
        self.named
            .get(name)
            .is_some_and(|named| Rc::strong_count(&named.file) > 1)
    }

    /// Whether any file holds a change IndexedDB does not have yet.
    pub(super) fn changed(&self) -> bool {
        !self.deleted.is_empty() || self.named.values().any(|n| n.file.borrow().changed())
    }

    /// The file `name`, created empty when absent; its writes are stored with `durability`.
    fn open(&mut self, name: &str, durability: Option<Durability>) -> Rc<RefCell<BlockFile>> {
        // A file made again under a name just deleted (a store encrypted in place) is stored
        // as the deleted one was.
        let kept = self
            .deleted
            .get(name)
            .map_or(Durability::Full, |d| d.durability);
        let named = self.named.entry(name.to_owned()).or_insert_with(|| Named {
            file: Rc::default(),
            durability: kept,
        });
        if let Some(durability) = durability {
            named.durability = durability;
        }
        named.file.clone()
    }

    /// Sets the durability the writes of file `name` are stored with.
    pub(super) fn set_durability(&mut self, name: &str, durability: Durability) {
        self.open(name, Some(durability));
    }

    /// Deletes the file `name`; returns whether it existed.
    pub(super) fn delete(&mut self, name: &str) -> bool {
        match self.named.remove(name) {
            Some(named) => {
                self.deleted.insert(name.to_owned(), named);
                true
            }
            None => false,
        }
    }

    /// Collects everything not stored yet for one write; `None` when nothing changed.
    pub(super) fn take_batch(&mut self) -> Option<Batch> {
        if !self.changed() {
            return None;
        }
        let deleted_files: Vec<_> = std::mem::take(&mut self.deleted).into_iter().collect();
        let mut batch = Batch {
            deleted: deleted_files.iter().map(|(name, _)| name.clone()).collect(),
            changed: Vec::new(),
            durability: Durability::Relaxed,
            deleted_files,
            files: Vec::new(),
        };
        for (name, named) in &self.named {
            if let Some(changes) = named.file.borrow_mut().take_changes() {
                if named.durability == Durability::Full {
                    batch.durability = Durability::Full;
                }
                batch.changed.push((name.clone(), changes));
                batch.files.push(named.file.clone());
            }
        }
        Some(batch)
    }

    /// The write of `batch` failed: every file goes back to what IndexedDB holds, including
    /// changes made while the write was under way, and deleted files come back.
    pub(super) fn revert(&mut self, batch: Batch) {
        for ((_, changes), file) in batch.changed.into_iter().zip(batch.files) {
            file.borrow_mut().not_stored(changes);
        }
        // Deleted during the write, then before it: IndexedDB holds the earlier deletion's file.
        let deleted = std::mem::take(&mut self.deleted)
            .into_iter()
            .chain(batch.deleted_files);
        for (name, deleted) in deleted {
            match self.named.get(&name) {
                // Made again since (a store encrypted in place opened its file anew): the
                // connection holding it reads what IndexedDB holds, not a file nobody stores.
                Some(current) if !Rc::ptr_eq(&current.file, &deleted.file) => {
                    let stored = std::mem::take(&mut *deleted.file.borrow_mut());
                    *current.file.borrow_mut() = stored;
                }
                _ => {
                    self.named.insert(name, deleted);
                }
            }
        }
        for named in self.named.values() {
            named.file.borrow_mut().revert();
        }
    }
}

/// What the VFS callbacks share: the pool's files and the OS services SQLite asks for.
pub(super) struct AppData {
    files: Rc<RefCell<Files>>,
    os: WasmOsCallback,
    error: RefCell<Option<VfsError>>,
}

/// An open file: one of the pool's, or a private temporary one; read-only when opened so.
pub(super) struct Handle {
    file: Opened,
    read_only: bool,
}

enum Opened {
    Stored(Rc<RefCell<BlockFile>>),
    Temporary(MemChunksFile),
}

impl Handle {
    fn writable(&mut self) -> VfsResult<&mut Opened> {
        if self.read_only {
            return Err(VfsError::new(
                VfsErrorCode::ReadOnly,
                "file is read-only".into(),
            ));
        }
        Ok(&mut self.file)
    }
}

impl VfsFile for Handle {
    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match &mut self.file {
            Opened::Stored(file) => Ok(file.borrow().read(buf, offset)),
            Opened::Temporary(file) => file.read(buf, offset),
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self.writable()? {
            Opened::Stored(file) => {
                file.borrow_mut().write(buf, offset);
                Ok(())
            }
            Opened::Temporary(file) => file.write(buf, offset),
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self.writable()? {
            Opened::Stored(file) => {
                file.borrow_mut().truncate(size);
                Ok(())
            }
            Opened::Temporary(file) => file.truncate(size),
        }
    }

    /// Nothing to do: the pool stores the changes in IndexedDB after the commit.
    fn sync(&mut self, _options: SyncOptions) -> VfsResult<()> {
        Ok(())
    }

    fn size(&self) -> VfsResult<u64> {
        match &self.file {
            Opened::Stored(file) => Ok(file.borrow().size()),
            Opened::Temporary(file) => file.size(),
        }
    }

    fn lock(&mut self, _level: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn unlock(&mut self, _level: LockLevel) -> VfsResult<()> {
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        Ok(false)
    }
}

struct Store;

impl VfsStore for Store {
    type File = Handle;
    type AppData = AppData;

    fn record_error(data: &AppData, error: VfsError) {
        data.error.replace(Some(error));
    }

    fn last_error(data: &AppData) -> Option<VfsError> {
        data.error.borrow().clone()
    }

    fn open_file(data: &AppData, request: OpenRequest<'_>) -> VfsResult<OpenedFile<Handle>> {
        let access = request.options.access();
        let read_only = access == OpenAccess::ReadOnly;
        let Some(filename) = request.filename else {
            let file = Opened::Temporary(MemChunksFile::default());
            let file = Handle { file, read_only };
            return Ok(OpenedFile { file, access });
        };
        let name = filename.path();
        let mut files = data.files.borrow_mut();
        if files.contains(name) && request.options.exclusive() {
            return Err(cant_open(format!("file already exists: {name:?}")));
        }
        if !files.contains(name) && !request.options.create() {
            return Err(cant_open(format!("file not found: {name:?}")));
        }
        let file = Opened::Stored(files.open(name, None));
        let file = Handle { file, read_only };
        Ok(OpenedFile { file, access })
    }

    fn close_file(
        data: &AppData,
        name: Option<&str>,
        _file: Handle,
        options: sqlite_wasm_rs::vfs::OpenOptions,
    ) -> VfsResult<()> {
        if let (Some(name), true) = (name, options.delete_on_close()) {
            data.files.borrow_mut().delete(name);
        }
        Ok(())
    }

    fn access(data: &AppData, name: &str, _mode: AccessMode) -> VfsResult<bool> {
        Ok(data.files.borrow().contains(name))
    }

    fn full_pathname(_data: &AppData, name: &str) -> VfsResult<String> {
        Ok(name.to_owned())
    }

    fn delete_file(data: &AppData, name: &str, _sync_dir: bool) -> VfsResult<()> {
        if !data.files.borrow_mut().delete(name) {
            return Err(VfsError::new(
                VfsErrorCode::IoDelete,
                format!("file not found: {name:?}").into(),
            ));
        }
        Ok(())
    }
}

fn cant_open(message: String) -> VfsError {
    VfsError::new(VfsErrorCode::CantOpen, message.into())
}

struct IoMethods;

impl SQLiteIoMethods for IoMethods {
    type Store = Store;
}

struct Vfs;

impl SQLiteVfs<IoMethods> for Vfs {
    type Os = WasmOsCallback;

    fn os(data: &AppData) -> &WasmOsCallback {
        &data.os
    }
}

/// The VFS's registration with SQLite, undone by [`Registration::unregister`].
pub(super) type Registration = VfsRegistration<AppData>;

/// Registers the VFS `vfs_name` over `files` (not as SQLite's default VFS).
pub(super) fn register(
    vfs_name: &str,
    files: Rc<RefCell<Files>>,
) -> Result<Registration, RegisterVfsError> {
    let data = AppData {
        files,
        os: WasmOsCallback,
        error: RefCell::new(None),
    };
    // SAFETY: Vfs and IoMethods use the default file layout with this store's handle type and
    // app data; the registration owns the data until it is unregistered, after every
    // connection on it has closed (see `IdbPool::close`). Everything runs on this one thread.
    unsafe { register_vfs::<IoMethods, Vfs>(vfs_name, data, false) }
}

/// Checks this VFS's store against sqlite-wasm-rs's own VFS test suite, on scratch files.
#[doc(hidden)]
pub fn check_vfs_contract() -> VfsResult<()> {
    let data = AppData {
        files: Rc::default(),
        os: WasmOsCallback,
        error: RefCell::new(None),
    };
    sqlite_wasm_rs::vfs::test_suite::test_vfs_store::<Store>(VfsAppData::new(data))?;
    let mut file = Handle {
        file: Opened::Stored(Rc::default()),
        read_only: false,
    };
    sqlite_wasm_rs::vfs::test_suite::test_vfs_file(&mut file)
}
