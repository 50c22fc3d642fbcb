//! The SQLite VFS of the file medium: each named file is a file on disk, read and written
//! through Node's synchronous calls; anonymous files (statement journals, temporary tables)
//! stay in memory.
//!
//! SQLite's flushes become `fdatasync`, and a file
//! the VFS created has its directory flushed at its first flush, as SQLite's own Unix VFS does:
//! with `synchronous=FULL` a commit that returned is on the disk. Locks are no-ops: the
//! database runs under exclusive locking on one connection, and its lock file (`lock.rs`)
//! keeps other processes and other opens in this one away.

use std::cell::RefCell;
use std::rc::Rc;

use sqlite_wasm_rs::vfs::{
    register_vfs, AccessMode, DeviceCharacteristics, LockLevel, MemChunksFile, OpenAccess,
    OpenRequest, OpenedFile, RegisterVfsError, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsError,
    VfsErrorCode, VfsFile, VfsRegistration, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;
use wasm_bindgen::JsValue;

use super::fs::{self, Node};

/// What the VFS callbacks share: Node's modules and the OS services SQLite asks for.
pub(super) struct AppData {
    node: Rc<Node>,
    os: WasmOsCallback,
    error: RefCell<Option<VfsError>>,
}

/// An open file: on disk, or a private temporary one.
pub(super) enum Handle {
    Disk(DiskFile),
    Temporary(MemChunksFile),
}

pub(super) struct DiskFile {
    node: Rc<Node>,
    fd: i32,
    /// The file's directory, until its first flush: set when this open created the file, so
    /// that the directory entry is on the disk before a commit relies on the file.
    unsynced_directory: Option<String>,
}

impl Drop for DiskFile {
    fn drop(&mut self) {
        let _ = self.node.fs.close_sync(self.fd);
    }
}

/// A failed Node call as SQLite's error `code`, or SQLITE_FULL when the disk is full.
fn io_error(code: VfsErrorCode, error: &JsValue) -> VfsError {
    let code = match fs::error_code(error).as_deref() {
        Some("ENOSPC" | "EDQUOT") => VfsErrorCode::Full,
        _ => code,
    };
    VfsError::new(code, fs::error_text(error).into())
}

impl DiskFile {
    fn sync_directory(&mut self) -> VfsResult<()> {
        if let Some(directory) = self.unsynced_directory.take() {
            sync_directory(&self.node, &directory)
                .map_err(|error| io_error(VfsErrorCode::IoDirectorySync, &error))?;
        }
        Ok(())
    }
}

/// Flushes a directory's entries. Where a directory cannot be opened or flushed (Windows), its
/// entries are the file system's to keep, and this does nothing.
fn sync_directory(node: &Node, directory: &str) -> Result<(), JsValue> {
    let Ok(fd) = node.fs.open_sync(directory, node.flags.read_only) else {
        return Ok(());
    };
    let synced = node.fs.fsync_sync(fd);
    let _ = node.fs.close_sync(fd);
    match synced {
        Err(error)
            if matches!(
                fs::error_code(&error).as_deref(),
                Some("EISDIR" | "EINVAL" | "EPERM" | "EBADF")
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

impl VfsFile for Handle {
    /// A write leaves the bytes around it as they were even if the power goes mid-write, as
    /// SQLite's Unix VFS assumes of every disk by default: without it SQLite pads each commit
    /// in the WAL out to a whole sector.
    fn device_characteristics(&self) -> DeviceCharacteristics {
        DeviceCharacteristics::POWERSAFE_OVERWRITE
    }

    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match self {
            Handle::Disk(file) => fs::read_at(&file.node.fs, file.fd, buf, offset)
                .map_err(|error| io_error(VfsErrorCode::IoRead, &error)),
            Handle::Temporary(file) => file.read(buf, offset),
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self {
            Handle::Disk(file) => fs::write_at(&file.node.fs, file.fd, buf, offset)
                .map_err(|error| io_error(VfsErrorCode::IoWrite, &error)),
            Handle::Temporary(file) => file.write(buf, offset),
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self {
            Handle::Disk(file) => file
                .node
                .fs
                .ftruncate_sync(file.fd, size as f64)
                .map_err(|error| io_error(VfsErrorCode::IoTruncate, &error)),
            Handle::Temporary(file) => file.truncate(size),
        }
    }

    fn sync(&mut self, _options: SyncOptions) -> VfsResult<()> {
        let Handle::Disk(file) = self else {
            return Ok(());
        };
        // `fdatasync` whatever SQLite asks (as its Unix VFS where the platform has it): it
        // flushes the data and what reading it back needs (the size), not the times, and is
        // where a commit spends its time (Linux: 0.2 ms against 0.9 ms for `fsync` of a WAL
        // that grew). On macOS libuv makes `fdatasync` an F_FULLFSYNC, which reaches the medium.
        file.node
            .fs
            .fdatasync_sync(file.fd)
            .map_err(|error| io_error(VfsErrorCode::IoSync, &error))?;
        file.sync_directory()
    }

    fn size(&self) -> VfsResult<u64> {
        match self {
            Handle::Disk(file) => fs::size_of(&file.node.fs, file.fd)
                .map_err(|error| io_error(VfsErrorCode::IoStat, &error)),
            Handle::Temporary(file) => file.size(),
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
        let Some(filename) = request.filename else {
            let file = Handle::Temporary(MemChunksFile::default());
            return Ok(OpenedFile { file, access });
        };
        let node = &data.node;
        let path = filename.path();
        let flags = &node.flags;
        let mut mode = match access {
            OpenAccess::ReadOnly => flags.read_only,
            OpenAccess::ReadWrite => flags.read_write,
        };
        let created = request.options.create() && !node.fs.exists_sync(path);
        if request.options.create() {
            mode |= flags.create;
        }
        if request.options.exclusive() {
            mode |= flags.exclusive;
        }
        let fd = node
            .fs
            .open_sync(path, mode)
            .map_err(|error| io_error(VfsErrorCode::CantOpen, &error))?;
        let file = Handle::Disk(DiskFile {
            node: node.clone(),
            fd,
            unsynced_directory: created.then(|| node.path.dirname(path)),
        });
        Ok(OpenedFile { file, access })
    }

    fn close_file(
        data: &AppData,
        name: Option<&str>,
        file: Handle,
        options: sqlite_wasm_rs::vfs::OpenOptions,
    ) -> VfsResult<()> {
        drop(file);
        if let (Some(name), true) = (name, options.delete_on_close()) {
            data.node
                .fs
                .unlink_sync(name)
                .map_err(|error| io_error(VfsErrorCode::IoDelete, &error))?;
        }
        Ok(())
    }

    fn access(data: &AppData, name: &str, _mode: AccessMode) -> VfsResult<bool> {
        Ok(data.node.fs.exists_sync(name))
    }

    fn full_pathname(_data: &AppData, name: &str) -> VfsResult<String> {
        Ok(name.to_owned())
    }

    fn delete_file(data: &AppData, name: &str, sync_dir: bool) -> VfsResult<()> {
        let node = &data.node;
        if let Err(error) = node.fs.unlink_sync(name) {
            let code = match fs::error_code(&error).as_deref() {
                Some("ENOENT") => VfsErrorCode::IoDeleteNoEntry,
                _ => VfsErrorCode::IoDelete,
            };
            return Err(io_error(code, &error));
        }
        if sync_dir {
            sync_directory(node, &node.path.dirname(name))
                .map_err(|error| io_error(VfsErrorCode::IoDirectorySync, &error))?;
        }
        Ok(())
    }
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

/// The VFS's registration with SQLite; it stays registered while the wasm instance lives.
pub(super) type Registration = VfsRegistration<AppData>;

/// Registers the VFS `vfs_name` over Node's file calls (not as SQLite's default VFS).
pub(super) fn register(vfs_name: &str, node: Rc<Node>) -> Result<Registration, RegisterVfsError> {
    let data = AppData {
        node,
        os: WasmOsCallback,
        error: RefCell::new(None),
    };
    // SAFETY: Vfs and IoMethods use the default file layout with this store's handle type and
    // app data; the registration is kept for the life of the wasm instance (see
    // `node_file::vfs_name`), so the data outlives every connection. Everything runs on this
    // one thread.
    unsafe { register_vfs::<IoMethods, Vfs>(vfs_name, data, false) }
}
