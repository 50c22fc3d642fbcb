//! The first keyed opens of a process, on many threads at once. SQLite marks itself
//! initialized before it runs SQLCipher's own set-up, so a thread that opens a store in
//! between used to find SQLCipher not ready: its key was refused with a bare `Backend`
//! error. This binary holds one test so that nothing opened SQLite before it.
//!
//! The moment is short: to hold it open, stop the initializing thread where SQLCipher's
//! set-up begins while the others run (gdb's non-stop mode), e.g.
//! `(printf 'set non-stop on\ntbreak sqlcipher_extra_init\nrun &\n'; sleep 2;
//! echo 'continue -a'; sleep 3; echo quit) | gdb -q target/debug/deps/cipher_first_open-*`.
//! Without the store's wait for that set-up, every other thread's open fails so.
#![cfg(all(not(target_family = "wasm"), feature = "cipher"))]

use std::sync::{Arc, Barrier};

use runstore::{Durability, Key, SqliteStore};

const THREADS: usize = 8;

#[test]
fn keyed_opens_racing_sqlites_first_initialization_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let start = Arc::new(Barrier::new(THREADS));
    let opens: Vec<_> = (0..THREADS)
        .map(|thread| {
            let path = dir.path().join(format!("store-{thread}.db"));
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let key = Key::from_bytes(&[thread as u8; 32]).expect("32 bytes");
                start.wait();
                SqliteStore::open_encrypted(&path, &key, Durability::Full).map(drop)
            })
        })
        .collect();
    let failed: Vec<String> = opens
        .into_iter()
        .map(|open| open.join().expect("the thread ends"))
        .filter_map(|result| result.err().map(|error| format!("{error:?}")))
        .collect();
    assert!(failed.is_empty(), "opens refused: {failed:?}");
}
