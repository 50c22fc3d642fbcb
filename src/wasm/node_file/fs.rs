//! Node's synchronous file calls (`node:fs`, `node:path`, `process`), bound for the file VFS.
//! The modules come from `process.getBuiltinModule` (Node 20.16+, Bun, Electron's main
//! process): nothing here is imported, so a bundle for the web never loads Node's modules.

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// The `node:fs` module.
    pub(super) type NodeFs;

    #[wasm_bindgen(method, catch, js_name = openSync)]
    pub(super) fn open_sync(this: &NodeFs, path: &str, flags: i32) -> Result<i32, JsValue>;
    #[wasm_bindgen(method, catch, js_name = closeSync)]
    pub(super) fn close_sync(this: &NodeFs, fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = readSync)]
    fn read_sync(
        this: &NodeFs,
        fd: i32,
        buffer: &Uint8Array,
        offset: u32,
        length: u32,
        position: f64,
    ) -> Result<u32, JsValue>;
    #[wasm_bindgen(method, catch, js_name = writeSync)]
    fn write_sync(
        this: &NodeFs,
        fd: i32,
        buffer: &Uint8Array,
        offset: u32,
        length: u32,
        position: f64,
    ) -> Result<u32, JsValue>;
    #[wasm_bindgen(method, catch, js_name = ftruncateSync)]
    pub(super) fn ftruncate_sync(this: &NodeFs, fd: i32, length: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = fsyncSync)]
    pub(super) fn fsync_sync(this: &NodeFs, fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = fdatasyncSync)]
    pub(super) fn fdatasync_sync(this: &NodeFs, fd: i32) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = fstatSync)]
    fn fstat_sync(this: &NodeFs, fd: i32) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = statSync)]
    fn stat_sync(this: &NodeFs, path: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = unlinkSync)]
    pub(super) fn unlink_sync(this: &NodeFs, path: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method, js_name = existsSync)]
    pub(super) fn exists_sync(this: &NodeFs, path: &str) -> bool;
    #[wasm_bindgen(method, catch, js_name = mkdirSync)]
    fn mkdir_sync(this: &NodeFs, path: &str, options: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = readFileSync)]
    pub(super) fn read_text_sync(
        this: &NodeFs,
        path: &str,
        encoding: &str,
    ) -> Result<String, JsValue>;
    #[wasm_bindgen(method, catch, js_name = writeSync)]
    pub(super) fn write_text_sync(this: &NodeFs, fd: i32, text: &str) -> Result<u32, JsValue>;

    /// The `node:path` module.
    pub(super) type NodePath;

    #[wasm_bindgen(method, js_name = resolve)]
    pub(super) fn resolve(this: &NodePath, directory: &str, file: &str) -> String;
    #[wasm_bindgen(method, js_name = dirname)]
    pub(super) fn dirname(this: &NodePath, path: &str) -> String;

    /// The global `process`.
    pub(super) type NodeProcess;

    #[wasm_bindgen(method, getter)]
    pub(super) fn pid(this: &NodeProcess) -> u32;
    #[wasm_bindgen(method, catch)]
    fn kill(this: &NodeProcess, pid: u32, signal: i32) -> Result<bool, JsValue>;
    /// Seconds since the process started (the same in each of its threads).
    #[wasm_bindgen(method)]
    fn uptime(this: &NodeProcess) -> f64;
}

/// The open flags SQLite's files need, as this platform numbers them (`fs.constants`).
#[derive(Clone, Copy)]
pub(super) struct Flags {
    pub(super) read_only: i32,
    pub(super) read_write: i32,
    pub(super) create: i32,
    pub(super) exclusive: i32,
}

/// Node's modules, found once per open.
pub(super) struct Node {
    pub(super) fs: NodeFs,
    pub(super) path: NodePath,
    pub(super) process: NodeProcess,
    pub(super) flags: Flags,
}

impl Node {
    /// Node's modules, or `None` where the runtime has no `process.getBuiltinModule` (a
    /// browser, or Node before 20.16).
    pub(super) fn find() -> Option<Node> {
        let process = Reflect::get(&js_sys::global(), &"process".into()).ok()?;
        let get = Reflect::get(&process, &"getBuiltinModule".into()).ok()?;
        let get: &js_sys::Function = get.dyn_ref()?;
        let module = |name: &str| {
            get.call1(&process, &name.into())
                .ok()
                .filter(|module| module.is_object())
        };
        let fs = module("node:fs")?;
        let path = module("node:path")?;
        let constants = Reflect::get(&fs, &"constants".into()).ok()?;
        let constant = |name: &str| {
            Reflect::get(&constants, &name.into())
                .ok()?
                .as_f64()
                .map(|value| value as i32)
        };
        let flags = Flags {
            read_only: constant("O_RDONLY")?,
            read_write: constant("O_RDWR")?,
            create: constant("O_CREAT")?,
            exclusive: constant("O_EXCL")?,
        };
        Some(Node {
            fs: fs.unchecked_into(),
            path: path.unchecked_into(),
            process: process.unchecked_into(),
            flags,
        })
    }

    /// Creates `directory` and its parents where missing.
    pub(super) fn make_directory(&self, directory: &str) -> Result<(), JsValue> {
        let options = Object::new();
        Reflect::set(&options, &"recursive".into(), &true.into())?;
        self.fs.mkdir_sync(directory, &options).map(drop)
    }

    /// Whether process `pid` runs (signal 0 checks without sending; EPERM means it runs under
    /// another user), and is not a zombie.
    pub(super) fn is_running(&self, pid: u32) -> bool {
        let exists = match self.process.kill(pid, 0) {
            Ok(_) => true,
            Err(error) => error_code(&error).as_deref() == Some("EPERM"),
        };
        exists && !self.is_zombie(pid)
    }

    /// Whether process `pid` has ended but its parent has not collected it yet (Linux, where
    /// `/proc` says so): it answers signal 0, but holds nothing any more.
    fn is_zombie(&self, pid: u32) -> bool {
        self.stat_fields(&pid.to_string())
            .is_some_and(|fields| fields.first().map(String::as_str) == Some("Z"))
    }

    /// The fields of `/proc/<pid>/stat` after the command, from the state (field 3) on: Linux
    /// only, `None` elsewhere.
    fn stat_fields(&self, pid: &str) -> Option<Vec<String>> {
        let stat = self
            .fs
            .read_text_sync(&format!("/proc/{pid}/stat"), "utf8")
            .ok()?;
        // `pid (command) state ...`: the command may hold spaces and parentheses.
        let (_, rest) = stat.rsplit_once(')')?;
        Some(rest.split_whitespace().map(str::to_owned).collect())
    }

    /// When this process started, in milliseconds: what tells it from an earlier process that
    /// had the same pid, the same in every thread. On Linux the kernel's start time (field 22
    /// of `/proc/self/stat`, in ticks of 10 ms since boot); elsewhere the wall clock less the
    /// uptime, which Bun counts in a Worker from the worker's own start.
    pub(super) fn process_start_ms(&self) -> f64 {
        let ticks = self
            .stat_fields("self")
            .and_then(|fields| fields.get(22 - 3)?.parse::<f64>().ok());
        match ticks {
            Some(ticks) => ticks * 10.0,
            None => (js_sys::Date::now() - self.process.uptime() * 1000.0).round(),
        }
    }

    /// Milliseconds since `path` last changed, or `None` when it cannot be read.
    pub(super) fn age_ms(&self, path: &str) -> Option<f64> {
        let stat = self.fs.stat_sync(path).ok()?;
        let modified = Reflect::get(&stat, &"mtimeMs".into()).ok()?.as_f64()?;
        Some(js_sys::Date::now() - modified)
    }
}

/// Reads up to `buffer.len()` bytes at `position` of `fd` straight into wasm memory; returns
/// how many it read (fewer only at the end of the file).
pub(super) fn read_at(
    fs: &NodeFs,
    fd: i32,
    buffer: &mut [u8],
    position: u64,
) -> Result<usize, JsValue> {
    let mut done = 0;
    while done < buffer.len() {
        let rest = &mut buffer[done..];
        // SAFETY: the view lives only for this call, which allocates nothing in wasm memory
        // (Node's read writes into it and returns), so the memory cannot grow under it.
        let view = unsafe { Uint8Array::view_mut_raw(rest.as_mut_ptr(), rest.len()) };
        let read = fs.read_sync(
            fd,
            &view,
            0,
            rest.len() as u32,
            (position + done as u64) as f64,
        )?;
        if read == 0 {
            break;
        }
        done += read as usize;
    }
    Ok(done)
}

/// Writes all of `buffer` at `position` of `fd`, straight from wasm memory.
pub(super) fn write_at(fs: &NodeFs, fd: i32, buffer: &[u8], position: u64) -> Result<(), JsValue> {
    let mut done = 0;
    while done < buffer.len() {
        let rest = &buffer[done..];
        // SAFETY: as in `read_at`; Node only reads the view.
        let view = unsafe { Uint8Array::view(rest) };
        let written = fs.write_sync(
            fd,
            &view,
            0,
            rest.len() as u32,
            (position + done as u64) as f64,
        )?;
        done += written as usize;
    }
    Ok(())
}

/// The size of the open file `fd`, in bytes.
pub(super) fn size_of(fs: &NodeFs, fd: i32) -> Result<u64, JsValue> {
    let stat = fs.fstat_sync(fd)?;
    let size = Reflect::get(&stat, &"size".into())?;
    Ok(size.as_f64().unwrap_or(0.0) as u64)
}

/// The `code` of a Node error (`"ENOENT"`, `"EEXIST"`, `"ENOSPC"`, ...).
pub(super) fn error_code(error: &JsValue) -> Option<String> {
    Reflect::get(error, &"code".into()).ok()?.as_string()
}

/// A Node error as text: its message, which names the call, the code and the path.
pub(super) fn error_text(error: &JsValue) -> String {
    Reflect::get(error, &"message".into())
        .ok()
        .and_then(|message| message.as_string())
        .unwrap_or_else(|| format!("{error:?}"))
}
