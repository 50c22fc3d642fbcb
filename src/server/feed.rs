//! Wake-ups for `changes` requests waiting on a namespace: each push tells the namespace's
//! waiters the feed's new position, pushes through this process directly, pushes through
//! other processes through the store's change listener (PostgreSQL's `LISTEN`). A waiter reads
//! the feed once when it starts and then only when woken, never on a timer.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// The latest feed position each namespace's waiters were told of.
#[derive(Default)]
pub(crate) struct FeedSignals {
    by_namespace: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Bumped when every waiter must look again (the listener lost its connection).
    everyone: watch::Sender<u64>,
}

/// The wake-ups told so far: a namespace's latest feed position, and how many calls to look
/// again there were.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Told {
    pub position: u64,
    pub everyone: u64,
}

impl Told {
    /// Whether every wake-up of `other` was told by the time of this one.
    pub(crate) fn covers(self, other: Told) -> bool {
        self.position >= other.position && self.everyone >= other.everyone
    }
}

/// What a waiter waits on: its namespace's pushes, and the calls to look again.
pub(crate) struct Waiter {
    namespace: watch::Receiver<u64>,
    everyone: watch::Receiver<u64>,
}

impl Waiter {
    /// Resolves at the next push to the namespace (or call to look again) after the last.
    pub(crate) async fn changed(&mut self) {
        tokio::select! {
            _ = self.namespace.changed() => {}
            _ = self.everyone.changed() => {}
        }
    }

    /// The wake-ups told so far, as this waiter sees them.
    pub(crate) fn seen(&self) -> Told {
        Told {
            position: *self.namespace.borrow(),
            everyone: *self.everyone.borrow(),
        }
    }
}

impl FeedSignals {
    /// A waiter that wakes at the namespace's next push.
    pub(crate) fn subscribe(&self, namespace: &str) -> Waiter {
        let mut map = self.by_namespace.lock().unwrap_or_else(|p| p.into_inner());
        let namespace = map
            .entry(namespace.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Waiter {
            namespace,
            everyone: self.everyone.subscribe(),
        }
    }

    /// The wake-ups told so far to `namespace`'s waiters.
    pub(crate) fn told(&self, namespace: &str) -> Told {
        let map = self.by_namespace.lock().unwrap_or_else(|p| p.into_inner());
        Told {
            position: map.get(namespace).map_or(0, |sender| *sender.borrow()),
            everyone: *self.everyone.borrow(),
        }
    }

    /// Tells the namespace's waiters its feed reached `position`; position 0 (from the
    /// listener) tells every waiter of every namespace to look again.
    pub(crate) fn notify(&self, namespace: &str, position: u64) {
        if position == 0 {
            self.everyone.send_modify(|n| *n = n.wrapping_add(1));
            return;
        }
        let map = self.by_namespace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = map.get(namespace) {
            sender.send_if_modified(|seen| {
                let newer = position > *seen;
                *seen = (*seen).max(position);
                newer
            });
        }
    }
}
