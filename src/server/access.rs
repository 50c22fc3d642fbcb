//! How the server reaches a store: any implementation of the store traits, called on tokio's
//! blocking threads since every store method blocks.

use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::{EventJournal, LeaseStore, OutboxStore, StepStore, SyncFeed};

/// A store the server can call from many request handlers at once.
pub trait StoreAccess: Send + Sync + 'static {
    /// The store's type.
    type Store: EventJournal + StepStore + OutboxStore + SyncFeed + LeaseStore;

    /// Runs `f` with the store; `f` runs on a blocking thread and may take its time.
    ///
    /// # Errors
    /// What `f` returns, or [`Error::Backend`] when the store cannot be reached.
    fn with_store<R>(&self, f: impl FnOnce(&Self::Store) -> Result<R>) -> Result<R>;
}

/// A store of one connection (a [`crate::SqliteStore`], say), shared by taking turns.
pub struct Serialized<S>(Mutex<S>);

impl<S> Serialized<S> {
    /// Wraps `store`.
    pub fn new(store: S) -> Self {
        Self(Mutex::new(store))
    }
}

impl<S> StoreAccess for Serialized<S>
where
    S: EventJournal + StepStore + OutboxStore + SyncFeed + LeaseStore + Send + 'static,
{
    type Store = S;

    fn with_store<R>(&self, f: impl FnOnce(&S) -> Result<R>) -> Result<R> {
        // A handler that panicked mid-call left no transaction open (rusqlite rolls back on
        // drop), so the store is still sound: take it back.
        let store = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&store)
    }
}

/// The error for a blocking task that did not finish (it panicked, or the runtime is going
/// down): its write, if any, may or may not have committed.
pub(crate) fn task_failed(error: impl std::fmt::Display) -> Error {
    Error::Backend {
        message: format!("the request's task failed: {error}"),
    }
}

/// A store that takes calls from many threads at once (the PostgreSQL store, with its pool of
/// connections), opened and dropped on a thread of its own: its blocking client runs a
/// runtime of its own, which must not start or stop on an async runtime's thread.
pub struct Concurrent<S: Send + 'static>(Option<S>);

impl<S: Send + 'static> Concurrent<S> {
    /// Opens the store with `open` on a thread of its own.
    ///
    /// # Errors
    /// What `open` returns.
    pub fn open(open: impl FnOnce() -> Result<S> + Send) -> Result<Self> {
        let store =
            std::thread::scope(|scope| scope.spawn(open).join()).map_err(task_failed_any)?;
        Ok(Self(Some(store?)))
    }
}

impl<S: Send + 'static> Drop for Concurrent<S> {
    fn drop(&mut self) {
        if let Some(store) = self.0.take() {
            // A panic while closing is the client's, and the store is gone either way.
            let _ = std::thread::spawn(move || drop(store)).join();
        }
    }
}

impl<S> StoreAccess for Concurrent<S>
where
    S: EventJournal + StepStore + OutboxStore + SyncFeed + LeaseStore + Send + Sync + 'static,
{
    type Store = S;

    fn with_store<R>(&self, f: impl FnOnce(&S) -> Result<R>) -> Result<R> {
        match &self.0 {
            Some(store) => f(store),
            None => Err(Error::Backend {
                message: "the store is closed".into(),
            }),
        }
    }
}

fn task_failed_any(_: Box<dyn std::any::Any + Send>) -> Error {
    task_failed("it panicked")
}
