//! Wake-ups for `changes` requests waiting on a namespace: each push tells the namespace's
//! waiters the feed's new head. This only shortens the wait: a waiter re-reads the feed in
//! the store, so pushes through another server process are seen when its wait ends.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

/// The latest feed head each namespace's waiters were told of.
#[derive(Default)]
pub(crate) struct FeedSignals {
    by_namespace: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl FeedSignals {
    /// A receiver that wakes at the namespace's next push.
    pub(crate) fn subscribe(&self, namespace: &str) -> watch::Receiver<u64> {
        let mut map = self.by_namespace.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(namespace.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Tells the namespace's waiters its feed reached `head`.
    pub(crate) fn notify(&self, namespace: &str, head: u64) {
        let map = self.by_namespace.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = map.get(namespace) {
            sender.send_if_modified(|seen| {
                let newer = head > *seen;
                *seen = (*seen).max(head);
                newer
            });
        }
    }
}
