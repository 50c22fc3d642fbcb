//! Custom events named after their step, and a workflow's history read back as those names:
//! what the browser tests write and check.

use runstore::{Event, EventJournal, EventKind, PageRequest, SqliteStore};

pub fn custom(name: &str, at: i64) -> Event {
    Event {
        kind: EventKind::Custom { name: name.into() },
        recorded_at: at,
        data: serde_json::json!({ "step": name }),
    }
}

pub fn names(store: &SqliteStore, workflow: &str) -> Vec<String> {
    store
        .read_history(workflow, &PageRequest::default())
        .unwrap()
        .items
        .into_iter()
        .map(|stored| match stored.event.kind {
            EventKind::Custom { name } => name,
            other => panic!("unexpected event {other:?}"),
        })
        .collect()
}
