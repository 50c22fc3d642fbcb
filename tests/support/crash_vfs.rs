//! A SQLite VFS that simulates power loss, in the manner of SQLite's own test "crash" VFS.
//!
//! Files live in memory, one set per simulated *disk* (named by the path prefix
//! `/powercut/<disk>/`). Each file keeps two images: what is on the platter (`durable`) and what
//! the operating system shows (`current`), with the writes and truncations made since the file's
//! last `xSync` in between (`pending`). A power cut throws the operating system's view away:
//! [`restore_power`] rebuilds each file from its platter image plus a seeded random choice of
//! its pending operations, each kept, lost or (a write) torn sector by sector, down to part of a
//! sector. Choosing each operation independently also gives the reorderings a disk cache makes:
//! a later write may land while an earlier one is lost.
//!
//! Directory entries: a file is taken to exist once created. A deletion without SQLite's
//! directory sync (`xDelete` with `syncDir` 0, as for a WAL at close) stays undoable until a
//! directory sync: a later `xDelete` with `syncDir`, or the first `xSync` of a newly created WAL
//! or journal, which is when the unix VFS fsyncs the directory. A power cut before that brings
//! the deleted file back with a random half chance, replacing any file made since under its name.
//!
//! The cut itself comes at a chosen count of mutating calls (write, truncate, sync, delete)
//! on the disk: that call does not complete (a write in progress stays pending, so it may be
//! torn) and every later call fails with an I/O error until power is restored, as a machine
//! that lost power answers nothing. Shared memory (`xShm*`, used by WAL without exclusive
//! locking) lives in memory and is lost with the power, as a `-shm` file's content does not
//! matter after a crash.
//!
//! Two VFS names are registered:
//! - [`VFS_SHM`] behaves as the unix VFS: shared memory, powersafe overwrite, a deletion that
//!   waits for a directory sync as above.
//! - [`VFS_NO_SHM`] behaves as the browser's sahpool VFS (sqlite-wasm-vfs 0.3, read for this):
//!   no shared memory, so WAL works only under exclusive locking; it reports no powersafe
//!   overwrite (only `SQLITE_IOCAP_UNDELETABLE_WHEN_OPEN`), so a torn write may also garble
//!   the rest of the 4096-byte sectors it touches; a deletion is durable at once (sahpool
//!   flushes the slot's header); closing a file flushes it, as sahpool's `close_file` does.
//!
//! Randomness, sleep and time are the default VFS's. Everything else is deterministic, so a
//! seed replays a run exactly (apart from the salts SQLite draws for WAL headers, which change
//! bytes, never which calls are made).
#![allow(dead_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use proptest::prelude::{Rng, RngExt};
use rusqlite::ffi;

/// The VFS with shared memory, for [`runstore::Medium::NativeFile`].
pub const VFS_SHM: &str = "powercut";
/// The VFS without shared memory, like sahpool, for [`runstore::Medium::Sahpool`].
pub const VFS_NO_SHM: &str = "powercut-noshm";

const PREFIX: &str = "/powercut/";
/// Tears happen at this granularity (a disk sector), and within one sector at byte level.
const TEAR_SECTOR: usize = 512;
/// What the unix VFS reports: the default sector size and powersafe overwrite.
const SECTOR_SIZE: c_int = 4096;

/// A mutating call counted towards the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Write,
    Truncate,
    Sync,
    Delete,
}

/// Where the power went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutPoint {
    /// The number of the mutating call that did not complete (0: cut between calls).
    pub call: u64,
    pub kind: Option<CallKind>,
    /// The file of that call, without the disk prefix.
    pub file: String,
}

/// What a power cut did to the operations not yet synced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CutDamage {
    pub kept: u64,
    pub lost: u64,
    pub torn: u64,
    /// Deleted files that came back.
    pub undeleted: u64,
}

#[derive(Clone)]
enum Op {
    Write { offset: usize, data: Vec<u8> },
    Truncate(usize),
}

impl Op {
    fn apply(&self, image: &mut Vec<u8>) {
        match self {
            Op::Write { offset, data } => write_at(image, *offset, data),
            Op::Truncate(len) => image.resize(*len, 0),
        }
    }
}

fn write_at(image: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset..end].copy_from_slice(data);
}

#[derive(Clone, Default)]
struct FileModel {
    durable: Vec<u8>,
    current: Vec<u8>,
    pending: Vec<Op>,
}

impl FileModel {
    fn sync(&mut self) {
        for op in self.pending.drain(..) {
            op.apply(&mut self.durable);
        }
    }

    /// The platter image after a power cut: the durable bytes plus a random choice of the
    /// pending operations, in their order.
    fn after_cut(
        &self,
        rng: &mut impl Rng,
        keep: f64,
        psow: bool,
        damage: &mut CutDamage,
    ) -> Vec<u8> {
        let mut image = self.durable.clone();
        for op in &self.pending {
            if rng.random_bool(keep) {
                op.apply(&mut image);
                damage.kept += 1;
            } else if let (Op::Write { offset, data }, true) = (op, rng.random_bool(0.4)) {
                tear(&mut image, *offset, data, rng);
                if !psow && rng.random_bool(0.5) {
                    garble_neighbours(&mut image, *offset, data.len(), rng);
                }
                damage.torn += 1;
            } else {
                damage.lost += 1;
            }
        }
        image
    }
}

/// Writes a random part of `data`: each sector whole, not at all, or only its first bytes.
fn tear(image: &mut Vec<u8>, offset: usize, data: &[u8], rng: &mut impl Rng) {
    for (i, sector) in data.chunks(TEAR_SECTOR).enumerate() {
        let len = match rng.random_range(0..3u8) {
            0 => sector.len(),
            1 => 0,
            _ => rng.random_range(0..=sector.len()),
        };
        if len > 0 {
            write_at(image, offset + i * TEAR_SECTOR, &sector[..len]);
        }
    }
}

/// Without powersafe overwrite, a write in progress may destroy the other bytes of the
/// sectors it touches (those that exist).
fn garble_neighbours(image: &mut [u8], offset: usize, len: usize, rng: &mut impl Rng) {
    let sector = SECTOR_SIZE as usize;
    let start = offset / sector * sector;
    let end = (offset + len).div_ceil(sector) * sector;
    for i in start..end.min(image.len()) {
        if i < offset || i >= offset + len {
            image[i] = rng.random();
        }
    }
}

#[derive(Default)]
struct Disk {
    files: HashMap<String, FileModel>,
    /// Files deleted without a directory sync: a power cut may bring them back.
    ghosts: HashMap<String, FileModel>,
    shm: HashMap<String, Vec<Box<[u8]>>>,
    /// Bumped by each power cut: handles opened before it are dead.
    epoch: u64,
    calls: u64,
    cut_at: Option<u64>,
    cut: Option<CutPoint>,
    syncs: HashMap<String, u64>,
    /// The call numbers of the completed syncs.
    sync_calls: Vec<u64>,
    /// Opened through [`VFS_NO_SHM`]: sahpool's rules.
    opfs: bool,
}

impl Disk {
    /// Counts a mutating call; `false` when the power is (or just went) off.
    fn count(&mut self, kind: CallKind, file: &str) -> bool {
        if self.cut.is_some() {
            return false;
        }
        self.calls += 1;
        if self.cut_at == Some(self.calls) {
            self.cut = Some(CutPoint {
                call: self.calls,
                kind: Some(kind),
                file: file.to_owned(),
            });
            return false;
        }
        true
    }
}

fn disks() -> MutexGuard<'static, HashMap<u64, Disk>> {
    static DISKS: OnceLock<Mutex<HashMap<u64, Disk>>> = OnceLock::new();
    DISKS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A new, empty disk; its files are opened under [`path`].
pub fn new_disk() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    register();
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    disks().insert(id, Disk::default());
    id
}

/// The path of `file` on `disk`.
pub fn path(disk: u64, file: &str) -> String {
    format!("{PREFIX}{disk}/{file}")
}

/// Frees a disk. Its connections must be closed.
pub fn remove_disk(disk: u64) {
    disks().remove(&disk);
}

/// Mutating calls made on the disk so far.
pub fn calls(disk: u64) -> u64 {
    disks()[&disk].calls
}

/// Cuts the power when the disk's mutating call number `call` starts.
pub fn arm_cut(disk: u64, call: u64) {
    disks().get_mut(&disk).expect("disk").cut_at = Some(call);
}

/// Cuts the power now, between calls.
pub fn cut_now(disk: u64) {
    let mut all = disks();
    let disk = all.get_mut(&disk).expect("disk");
    if disk.cut.is_none() {
        disk.cut = Some(CutPoint {
            call: 0,
            kind: None,
            file: String::new(),
        });
    }
}

/// Where the power went, if it did.
pub fn cut_point(disk: u64) -> Option<CutPoint> {
    disks()[&disk].cut.clone()
}

/// What `file` (without the disk prefix) holds now, synced or not; empty when it does not exist.
pub fn contents(disk: u64, file: &str) -> Vec<u8> {
    disks()[&disk]
        .files
        .get(file)
        .map(|model| model.current.clone())
        .unwrap_or_default()
}

/// Completed `xSync` calls per file (without the disk prefix).
pub fn syncs(disk: u64) -> HashMap<String, u64> {
    disks()[&disk].syncs.clone()
}

/// The call numbers of the completed syncs so far: a cut just before or after one is where
/// durability is decided.
pub fn sync_calls(disk: u64) -> Vec<u64> {
    disks()[&disk].sync_calls.clone()
}

/// Restores power after a cut: every file becomes what its platter holds, keeping each
/// pending operation with probability `keep` (else tearing or losing it). Connections opened
/// before must be closed first.
pub fn restore_power(disk: u64, rng: &mut impl Rng, keep: f64) -> CutDamage {
    let mut all = disks();
    let disk = all.get_mut(&disk).expect("disk");
    assert!(disk.cut.is_some(), "the power is on");
    let mut damage = CutDamage::default();
    let mut files = HashMap::new();
    let mut names: Vec<&String> = disk.files.keys().chain(disk.ghosts.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let ghost = disk.ghosts.get(name);
        // An undone deletion brings the old file back (and undoes a later create under its
        // name, which the file system ordered after it); a done one leaves the newer file.
        let chosen = match (ghost, disk.files.get(name)) {
            (Some(ghost), _) if rng.random_bool(0.5) => {
                damage.undeleted += 1;
                ghost
            }
            (_, Some(current)) => current,
            (_, None) => continue,
        };
        let image = chosen.after_cut(rng, keep, !disk.opfs, &mut damage);
        files.insert(
            name.clone(),
            FileModel {
                durable: image.clone(),
                current: image,
                pending: Vec::new(),
            },
        );
    }
    disk.files = files;
    disk.ghosts.clear();
    disk.shm.clear();
    disk.epoch += 1;
    disk.cut_at = None;
    disk.cut = None;
    damage
}

// ---------------------------------------------------------------------------------------------
// The VFS
// ---------------------------------------------------------------------------------------------

/// Registers both VFS names once.
pub fn register() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: the default VFS lives as long as the process; the new VFS structs are leaked,
        // so they outlive every connection.
        unsafe {
            let default = ffi::sqlite3_vfs_find(ptr::null());
            assert!(!default.is_null(), "no default VFS");
            for (name, methods) in [(VFS_SHM, &SHM_METHODS), (VFS_NO_SHM, &NO_SHM_METHODS)] {
                let vfs = Box::leak(Box::new(vfs_struct(name, default, methods)));
                assert_eq!(ffi::sqlite3_vfs_register(vfs, 0), ffi::SQLITE_OK);
            }
        }
    });
}

fn vfs_struct(
    name: &str,
    default: *mut ffi::sqlite3_vfs,
    methods: &'static ffi::sqlite3_io_methods,
) -> ffi::sqlite3_vfs {
    let opfs = name == VFS_NO_SHM;
    let name = Box::leak(format!("{name}\0").into_boxed_str());
    let app = Box::leak(Box::new(VfsData {
        default,
        methods,
        opfs,
    }));
    ffi::sqlite3_vfs {
        iVersion: 2,
        szOsFile: std::mem::size_of::<SimFile>() as c_int,
        mxPathname: 512,
        pNext: ptr::null_mut(),
        zName: name.as_ptr().cast(),
        pAppData: (app as *mut VfsData).cast(),
        xOpen: Some(x_open),
        xDelete: Some(x_delete),
        xAccess: Some(x_access),
        xFullPathname: Some(x_full_pathname),
        xDlOpen: None,
        xDlError: None,
        xDlSym: None,
        xDlClose: None,
        xRandomness: Some(x_randomness),
        xSleep: Some(x_sleep),
        xCurrentTime: Some(x_current_time),
        xGetLastError: None,
        xCurrentTimeInt64: Some(x_current_time_int64),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    }
}

struct VfsData {
    default: *mut ffi::sqlite3_vfs,
    methods: &'static ffi::sqlite3_io_methods,
    opfs: bool,
}

/// What SQLite allocates per open file (`szOsFile`): the base struct first.
#[repr(C)]
struct SimFile {
    base: ffi::sqlite3_file,
    handle: *mut Handle,
}

enum Handle {
    /// A named file on a disk.
    Disk {
        disk: u64,
        name: String,
        epoch: u64,
        /// The unix VFS fsyncs the directory at the first sync of a WAL or journal it created.
        dir_sync_pending: bool,
        opfs: bool,
    },
    /// A temporary file SQLite opened without a name: private, never part of a power cut.
    Temp(Vec<u8>),
}

/// Splits `/powercut/<disk>/<file>`.
fn parse(name: &str) -> Option<(u64, String)> {
    let rest = name.strip_prefix(PREFIX)?;
    let (disk, file) = rest.split_once('/')?;
    Some((disk.parse().ok()?, file.to_owned()))
}

unsafe fn c_name<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        None
    } else {
        CStr::from_ptr(name).to_str().ok()
    }
}

unsafe fn handle<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Handle {
    &mut *(*file.cast::<SimFile>()).handle
}

/// Runs `f` on the disk file behind a live handle; `err` when the power is off, the handle
/// predates the last cut, or `kind` is a mutating call that the cut stops.
unsafe fn with_file(
    file: *mut ffi::sqlite3_file,
    kind: Option<CallKind>,
    err: c_int,
    f: impl FnOnce(&mut FileModel, &mut Disk, &str) -> c_int,
) -> c_int {
    let Handle::Disk {
        disk, name, epoch, ..
    } = handle(file)
    else {
        unreachable!("temporary files are handled by the caller")
    };
    let mut all = disks();
    let Some(d) = all.get_mut(disk) else {
        return err;
    };
    if d.epoch != *epoch || d.cut.is_some() {
        return err;
    }
    let proceed = match kind {
        Some(kind) => d.count(kind, name),
        None => true,
    };
    // A handle outlives its file only if SQLite deletes a file it still has open, which it
    // does not do; treat it as an I/O error rather than recreate the file.
    let Some(mut model) = d.files.remove(name.as_str()) else {
        return err;
    };
    let rc = if proceed {
        f(&mut model, d, name)
    } else {
        // The call the power stopped: a write in progress may still partly land.
        if let (Some(CallKind::Write), Some(_)) = (kind, d.cut.as_ref()) {
            f(&mut model, d, name);
        }
        err
    };
    d.files.insert(name.clone(), model);
    rc
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let data = &*(*vfs).pAppData.cast::<VfsData>();
    (*file).pMethods = ptr::null();
    let handle = match c_name(name) {
        None => Handle::Temp(Vec::new()),
        Some(name) => {
            let Some((disk, file_name)) = parse(name) else {
                return ffi::SQLITE_CANTOPEN;
            };
            let mut all = disks();
            let Some(d) = all.get_mut(&disk) else {
                return ffi::SQLITE_CANTOPEN;
            };
            if d.cut.is_some() {
                return ffi::SQLITE_CANTOPEN;
            }
            let exists = d.files.contains_key(&file_name);
            if !exists && flags & ffi::SQLITE_OPEN_CREATE == 0 {
                return ffi::SQLITE_CANTOPEN;
            }
            let journal = ffi::SQLITE_OPEN_WAL
                | ffi::SQLITE_OPEN_MAIN_JOURNAL
                | ffi::SQLITE_OPEN_SUPER_JOURNAL;
            d.files.entry(file_name.clone()).or_default();
            d.opfs = data.opfs;
            Handle::Disk {
                disk,
                name: file_name,
                epoch: d.epoch,
                dir_sync_pending: !exists && flags & journal != 0,
                opfs: data.opfs,
            }
        }
    };
    let sim = file.cast::<SimFile>();
    (*sim).handle = Box::into_raw(Box::new(handle));
    (*file).pMethods = data.methods;
    if !out_flags.is_null() {
        *out_flags = flags;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    let opfs = (*(*vfs).pAppData.cast::<VfsData>()).opfs;
    let Some((disk, file)) = c_name(name).and_then(parse) else {
        return ffi::SQLITE_IOERR_DELETE;
    };
    let mut all = disks();
    let Some(d) = all.get_mut(&disk) else {
        return ffi::SQLITE_IOERR_DELETE;
    };
    if !d.count(CallKind::Delete, &file) {
        return ffi::SQLITE_IOERR_DELETE;
    }
    let Some(model) = d.files.remove(&file) else {
        return ffi::SQLITE_IOERR_DELETE_NOENT;
    };
    if sync_dir != 0 || opfs {
        d.ghosts.clear();
    } else {
        d.ghosts.entry(file).or_insert(model);
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_access(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    _flags: c_int,
    out: *mut c_int,
) -> c_int {
    let Some((disk, file)) = c_name(name).and_then(parse) else {
        *out = 0;
        return ffi::SQLITE_OK;
    };
    let all = disks();
    let Some(d) = all.get(&disk) else {
        *out = 0;
        return ffi::SQLITE_OK;
    };
    if d.cut.is_some() {
        return ffi::SQLITE_IOERR_ACCESS;
    }
    // As the unix VFS: an empty file counts as absent.
    *out = c_int::from(d.files.get(&file).is_some_and(|m| !m.current.is_empty()));
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n_out: c_int,
    out: *mut c_char,
) -> c_int {
    let bytes = CStr::from_ptr(name).to_bytes_with_nul();
    if bytes.len() > n_out as usize {
        return ffi::SQLITE_CANTOPEN;
    }
    ptr::copy_nonoverlapping(bytes.as_ptr().cast(), out, bytes.len());
    ffi::SQLITE_OK
}

unsafe fn default_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    (*(*vfs).pAppData.cast::<VfsData>()).default
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    let default = default_vfs(vfs);
    (*default).xRandomness.expect("xRandomness")(default, n, out)
}

unsafe extern "C" fn x_sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    let default = default_vfs(vfs);
    (*default).xSleep.expect("xSleep")(default, micros)
}

unsafe extern "C" fn x_current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let default = default_vfs(vfs);
    (*default).xCurrentTime.expect("xCurrentTime")(default, out)
}

unsafe extern "C" fn x_current_time_int64(vfs: *mut ffi::sqlite3_vfs, out: *mut i64) -> c_int {
    let default = default_vfs(vfs);
    (*default).xCurrentTimeInt64.expect("xCurrentTimeInt64")(default, out)
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    if let Handle::Disk { opfs: true, .. } = handle(file) {
        // sahpool flushes every file it closes; a failure (no power) changes nothing here.
        with_file(file, Some(CallKind::Sync), ffi::SQLITE_OK, synced);
    }
    let sim = file.cast::<SimFile>();
    drop(Box::from_raw((*sim).handle));
    (*sim).handle = ptr::null_mut();
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amount as usize);
    let mut read = |image: &[u8]| {
        let start = (offset as usize).min(image.len());
        let end = (offset as usize + out.len()).min(image.len());
        let n = end - start;
        out[..n].copy_from_slice(&image[start..end]);
        out[n..].fill(0);
        if n < out.len() {
            ffi::SQLITE_IOERR_SHORT_READ
        } else {
            ffi::SQLITE_OK
        }
    };
    if let Handle::Temp(image) = handle(file) {
        return read(image);
    }
    with_file(file, None, ffi::SQLITE_IOERR_READ, |model, _, _| {
        read(&model.current)
    })
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let data = std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize);
    if let Handle::Temp(image) = handle(file) {
        write_at(image, offset as usize, data);
        return ffi::SQLITE_OK;
    }
    with_file(
        file,
        Some(CallKind::Write),
        ffi::SQLITE_IOERR_WRITE,
        |model, _, _| {
            write_at(&mut model.current, offset as usize, data);
            model.pending.push(Op::Write {
                offset: offset as usize,
                data: data.to_vec(),
            });
            ffi::SQLITE_OK
        },
    )
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    if let Handle::Temp(image) = handle(file) {
        image.resize(size as usize, 0);
        return ffi::SQLITE_OK;
    }
    with_file(
        file,
        Some(CallKind::Truncate),
        ffi::SQLITE_IOERR_TRUNCATE,
        |model, _, _| {
            model.current.resize(size as usize, 0);
            model.pending.push(Op::Truncate(size as usize));
            ffi::SQLITE_OK
        },
    )
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    let dir_sync = match handle(file) {
        Handle::Temp(_) => return ffi::SQLITE_OK,
        Handle::Disk {
            dir_sync_pending, ..
        } => std::mem::take(dir_sync_pending),
    };
    let rc = with_file(
        file,
        Some(CallKind::Sync),
        ffi::SQLITE_IOERR_FSYNC,
        |model, disk, name| {
            if dir_sync {
                disk.ghosts.clear();
            }
            synced(model, disk, name)
        },
    );
    if rc != ffi::SQLITE_OK && dir_sync {
        if let Handle::Disk {
            dir_sync_pending, ..
        } = handle(file)
        {
            *dir_sync_pending = true;
        }
    }
    rc
}

fn synced(model: &mut FileModel, disk: &mut Disk, name: &str) -> c_int {
    model.sync();
    *disk.syncs.entry(name.to_owned()).or_default() += 1;
    disk.sync_calls.push(disk.calls);
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    if let Handle::Temp(image) = handle(file) {
        *size = image.len() as i64;
        return ffi::SQLITE_OK;
    }
    with_file(file, None, ffi::SQLITE_IOERR_FSTAT, |model, _, _| {
        *size = model.current.len() as i64;
        ffi::SQLITE_OK
    })
}

/// One connection per disk at a time: locks always succeed.
unsafe extern "C" fn x_lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_check_reserved_lock(
    _file: *mut ffi::sqlite3_file,
    out: *mut c_int,
) -> c_int {
    *out = 0;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_control(
    _file: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    SECTOR_SIZE
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    match handle(file) {
        Handle::Disk { opfs: true, .. } => ffi::SQLITE_IOCAP_UNDELETABLE_WHEN_OPEN,
        _ => ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE,
    }
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    *out = ptr::null_mut();
    with_file(file, None, ffi::SQLITE_IOERR_SHMMAP, |_, disk, name| {
        let regions = disk.shm.entry(name.to_owned()).or_default();
        let region = region as usize;
        if regions.len() <= region {
            if extend == 0 {
                return ffi::SQLITE_OK;
            }
            regions.resize_with(region + 1, || vec![0u8; size as usize].into_boxed_slice());
        }
        *out = regions[region].as_mut_ptr().cast();
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_shm_lock(
    _file: *mut ffi::sqlite3_file,
    _offset: c_int,
    _n: c_int,
    _flags: c_int,
) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    fence(Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    if delete != 0 {
        // Regions stay mapped until the power comes back if the power is off: the connection
        // closing now may still read them.
        with_file(file, None, ffi::SQLITE_OK, |_, disk, name| {
            disk.shm.remove(name);
            ffi::SQLITE_OK
        });
    }
    ffi::SQLITE_OK
}

static SHM_METHODS: ffi::sqlite3_io_methods = io_methods(2);
static NO_SHM_METHODS: ffi::sqlite3_io_methods = io_methods(1);

const fn io_methods(version: c_int) -> ffi::sqlite3_io_methods {
    let shm = version >= 2;
    ffi::sqlite3_io_methods {
        iVersion: version,
        xClose: Some(x_close),
        xRead: Some(x_read),
        xWrite: Some(x_write),
        xTruncate: Some(x_truncate),
        xSync: Some(x_sync),
        xFileSize: Some(x_file_size),
        xLock: Some(x_lock),
        xUnlock: Some(x_lock),
        xCheckReservedLock: Some(x_check_reserved_lock),
        xFileControl: Some(x_file_control),
        xSectorSize: Some(x_sector_size),
        xDeviceCharacteristics: Some(x_device_characteristics),
        xShmMap: if shm { Some(x_shm_map) } else { None },
        xShmLock: if shm { Some(x_shm_lock) } else { None },
        xShmBarrier: if shm { Some(x_shm_barrier) } else { None },
        xShmUnmap: if shm { Some(x_shm_unmap) } else { None },
        xFetch: None,
        xUnfetch: None,
    }
}
