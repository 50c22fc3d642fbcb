//! One read of a namespace's changes for all the `changes` requests that need the same page at
//! once. A push wakes every request waiting on its namespace: with 64 readers, that was 64
//! reads of the same page from the store and 64 serializations of it, for each push. Requests
//! woken together now share one read and its JSON.
//!
//! A request joins a read only if that read began after every wake-up the request was told of
//! (the feed positions of [`super::feed::Told`]): each push that woke it committed before the
//! shared read began, so the answer holds it, as the request's own read would have. A read that
//! ended is not kept: the next request reads again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use tokio::sync::OnceCell;

use super::feed::Told;
use crate::error::Result;
use crate::PageBound;

/// What identifies a page of changes: the same key, read at the same time, is the same answer.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReadKey {
    pub namespace: String,
    pub after: u64,
    pub limit: u32,
    pub max_bytes: u64,
    pub with_events: bool,
}

impl ReadKey {
    pub(crate) fn new(namespace: &str, after: u64, bound: PageBound, with_events: bool) -> Self {
        Self {
            namespace: namespace.to_owned(),
            after,
            limit: bound.limit,
            max_bytes: bound.max_bytes,
            with_events,
        }
    }
}

/// A page of changes as answered: where the next pull starts, and the answer's JSON.
pub(crate) struct ReadAnswer {
    pub cursor: u64,
    pub body: Bytes,
}

/// A read under way, and the wake-ups told before it began.
struct Flight {
    told: Told,
    answer: OnceCell<Result<Arc<ReadAnswer>>>,
}

/// The reads under way in this server process.
#[derive(Default)]
pub(crate) struct SharedReads {
    flights: Mutex<HashMap<ReadKey, Arc<Flight>>>,
}

impl SharedReads {
    /// The answer of a read of `key` that began after the wake-ups `seen` (what the request's
    /// waiter was told): one under way, or `read` now, which `told_now` (the wake-ups told so
    /// far) then describes. A request that drops its read leaves it to the next one waiting.
    pub(crate) async fn read<F, Fut>(
        &self,
        key: ReadKey,
        seen: Told,
        told_now: Told,
        read: F,
    ) -> Result<Arc<ReadAnswer>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<ReadAnswer>>,
    {
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
            match flights.get(&key) {
                Some(flight) if flight.told.covers(seen) => Arc::clone(flight),
                _ => {
                    let flight = Arc::new(Flight {
                        told: told_now,
                        answer: OnceCell::new(),
                    });
                    flights.insert(key.clone(), Arc::clone(&flight));
                    flight
                }
            }
        };
        let answer = flight
            .answer
            .get_or_init(|| async { read().await.map(Arc::new) })
            .await
            .clone();
        let mut flights = self.flights.lock().unwrap_or_else(|p| p.into_inner());
        if flights
            .get(&key)
            .is_some_and(|kept| Arc::ptr_eq(kept, &flight))
        {
            flights.remove(&key);
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(after: u64) -> ReadKey {
        ReadKey::new(
            "ns",
            after,
            PageBound {
                limit: 10,
                max_bytes: 1000,
            },
            true,
        )
    }

    fn told(position: u64) -> Told {
        Told {
            position,
            everyone: 0,
        }
    }

    /// Requests waiting together share one read; a request told of a later push than the read
    /// under way began after does not join it, and reads again.
    #[tokio::test]
    async fn requests_share_a_read_only_if_it_began_after_their_wake_ups() {
        let reads = Arc::new(SharedReads::default());
        let count = Arc::new(AtomicUsize::new(0));
        let (release, gate) = tokio::sync::watch::channel(false);
        let read = |position: u64| {
            let (count, mut gate) = (Arc::clone(&count), gate.clone());
            move || async move {
                count.fetch_add(1, Ordering::SeqCst);
                let _ = gate.wait_for(|open| *open).await;
                Ok(ReadAnswer {
                    cursor: position,
                    body: Bytes::new(),
                })
            }
        };
        let request = |seen: u64, now: u64| {
            let (reads, read) = (Arc::clone(&reads), read(now));
            tokio::spawn(async move { reads.read(key(0), told(seen), told(now), read).await })
        };
        let first: Vec<_> = (0..8).map(|_| request(5, 5)).collect();
        tokio::task::yield_now().await;
        // Told of position 6 after the read under way began at 5: it must not join.
        let later = request(6, 6);
        tokio::task::yield_now().await;
        release.send(true).unwrap();
        for joined in first {
            assert_eq!(joined.await.unwrap().unwrap().cursor, 5);
        }
        assert_eq!(later.await.unwrap().unwrap().cursor, 6);
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "one read for the eight, one for the later"
        );
        assert!(
            reads.flights.lock().unwrap().is_empty(),
            "ended reads are not kept"
        );
    }
}
