//! A file held in memory as fixed-size blocks, which remembers what IndexedDB holds of it: the
//! blocks changed since it was last stored and their stored content. [`BlockFile::take_changes`]
//! hands the changes to a write to IndexedDB; when that write fails, [`BlockFile::not_stored`]
//! takes them back and [`BlockFile::revert`] brings the file back to what IndexedDB holds.

use std::collections::BTreeMap;

/// Bytes per block: SQLite's page size for the store's databases, so that a commit writes the
/// pages it changed and nothing around them.
pub(super) const BLOCK: usize = 4096;

/// A block's stored content, or `None` for a block past the stored end of the file.
type Before = Option<Box<[u8]>>;

/// The file in memory, with what IndexedDB holds of it.
#[derive(Default)]
pub(super) struct BlockFile {
    /// Blocks `0..blocks.len()`, each [`BLOCK`] bytes; bytes past `size` are zero.
    blocks: Vec<Box<[u8]>>,
    size: u64,
    /// The size IndexedDB holds (or a write now under way will hold, if it succeeds).
    stored_size: u64,
    /// The stored content of every block changed since the last write to IndexedDB began.
    before: BTreeMap<u32, Before>,
}

/// What changed in a file since the last write to IndexedDB began: the blocks to put and to
/// delete, and the file's new size. A failed write hands it back ([`BlockFile::not_stored`]).
pub(super) struct Changes {
    pub(super) puts: Vec<(u32, Box<[u8]>)>,
    pub(super) deletes: Vec<u32>,
    pub(super) size: u64,
    /// What IndexedDB held of the changed blocks before, to go back to if the write fails.
    before: BTreeMap<u32, Before>,
    stored_size: u64,
}

fn block_count(size: u64) -> usize {
    size.div_ceil(BLOCK as u64) as usize
}

impl BlockFile {
    /// The file as IndexedDB holds it: `blocks` by index (missing ones are zero) and its size.
    pub(super) fn loaded(blocks: impl IntoIterator<Item = (u32, Box<[u8]>)>, size: u64) -> Self {
        let mut file = BlockFile {
            blocks: vec![zeroed(); block_count(size)],
            size,
            stored_size: size,
            before: BTreeMap::new(),
        };
        for (index, bytes) in blocks {
            if let Some(block) = file.blocks.get_mut(index as usize) {
                let n = bytes.len().min(BLOCK);
                block[..n].copy_from_slice(&bytes[..n]);
            }
        }
        file
    }

    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Whether anything changed since the last write to IndexedDB began.
    pub(super) fn changed(&self) -> bool {
        !self.before.is_empty() || self.size != self.stored_size
    }

    /// Copies up to `buf.len()` bytes from `offset` into `buf`; returns how many there were.
    pub(super) fn read(&self, buf: &mut [u8], offset: u64) -> usize {
        if offset >= self.size {
            return 0;
        }
        let end = (offset + buf.len() as u64).min(self.size);
        let mut at = offset;
        while at < end {
            let (index, within) = ((at / BLOCK as u64) as usize, (at % BLOCK as u64) as usize);
            let n = (BLOCK - within).min((end - at) as usize);
            let from = (at - offset) as usize;
            buf[from..from + n].copy_from_slice(&self.blocks[index][within..within + n]);
            at += n as u64;
        }
        (end - offset) as usize
    }

    /// Writes `buf` at `offset`, growing the file (with zeros in any gap) as needed.
    pub(super) fn write(&mut self, buf: &[u8], offset: u64) {
        let end = offset + buf.len() as u64;
        for index in self.blocks.len()..block_count(end) {
            self.remember(index);
            self.blocks.push(zeroed());
        }
        let mut at = offset;
        while at < end {
            let (index, within) = ((at / BLOCK as u64) as usize, (at % BLOCK as u64) as usize);
            let n = (BLOCK - within).min((end - at) as usize);
            let from = (at - offset) as usize;
            self.remember(index);
            self.blocks[index][within..within + n].copy_from_slice(&buf[from..from + n]);
            at += n as u64;
        }
        self.size = self.size.max(end);
    }

    /// Shrinks the file to `size` bytes (a larger `size` changes nothing).
    pub(super) fn truncate(&mut self, size: u64) {
        if size >= self.size {
            return;
        }
        let keep = block_count(size);
        for index in keep..self.blocks.len() {
            self.remember(index);
        }
        self.blocks.truncate(keep);
        let tail = (size % BLOCK as u64) as usize;
        if tail != 0 {
            // Zeros past the end, so that growing the file again shows no old bytes.
            self.remember(keep - 1);
            self.blocks[keep - 1][tail..].fill(0);
        }
        self.size = size;
    }

    /// Notes the stored content of block `index` before its first change since the last
    /// write to IndexedDB began.
    fn remember(&mut self, index: usize) {
        let key = index as u32;
        if !self.before.contains_key(&key) {
            let stored = self.blocks.get(index).cloned();
            self.before.insert(key, stored);
        }
    }

    /// Hands over everything changed since the last write began, for a write to IndexedDB;
    /// `None` when nothing did. Changes made while that write is under way are the next
    /// write's.
    pub(super) fn take_changes(&mut self) -> Option<Changes> {
        if !self.changed() {
            return None;
        }
        let before = std::mem::take(&mut self.before);
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for &index in before.keys() {
            match self.blocks.get(index as usize) {
                Some(block) => puts.push((index, block.clone())),
                None => deletes.push(index),
            }
        }
        let changes = Changes {
            puts,
            deletes,
            size: self.size,
            before,
            stored_size: self.stored_size,
        };
        self.stored_size = self.size;
        Some(changes)
    }

    /// The write of `changes` failed: IndexedDB holds what it held before them. The file
    /// keeps its content until [`BlockFile::revert`].
    pub(super) fn not_stored(&mut self, changes: Changes) {
        // Blocks changed again during the write remembered the write's content; what
        // IndexedDB holds is the older one.
        for (index, before) in changes.before {
            self.before.insert(index, before);
        }
        self.stored_size = changes.stored_size;
    }

    /// Brings the file back to what IndexedDB holds: every change not stored is undone.
    pub(super) fn revert(&mut self) {
        let keep = block_count(self.stored_size);
        self.blocks.resize_with(keep.max(self.blocks.len()), zeroed);
        for (index, before) in std::mem::take(&mut self.before) {
            if let (Some(bytes), Some(block)) = (before, self.blocks.get_mut(index as usize)) {
                *block = bytes;
            }
        }
        self.blocks.truncate(keep);
        self.size = self.stored_size;
    }
}

fn zeroed() -> Box<[u8]> {
    vec![0; BLOCK].into_boxed_slice()
}
