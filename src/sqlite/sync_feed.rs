//! SQL of the sync server's change feeds (tables `sync_feed`, `sync_feed_heads`) and of reads
//! bounded by bytes. A push's entry takes the feed's next position in the push's own
//! `IMMEDIATE` transaction, so positions follow commit order.

use rusqlite::{params, Connection};

use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int, to_sql_int};
use crate::backend::events::decode_at;
use crate::backend::paging::{check_bound, fitting};
use crate::backend::sync::check_change;
use crate::error::Result;
use crate::model::journal::StoredEvent;
use crate::model::sync::*;

/// A feed entry as listed, with the stored size of its events.
struct Listed {
    entry: FeedEntry,
    bytes: u64,
}

impl SqliteStore {
    /// Records that `workflow_id` went from `base` to `head` as the next entry of `feed`;
    /// returns its position.
    pub(super) fn record_change(
        &self,
        feed: &str,
        workflow_id: &str,
        base: u64,
        head: u64,
    ) -> Result<u64> {
        check_change(feed, workflow_id, base, head)?;
        let tx = self.write_tx()?;
        let position: i64 = tx
            .prepare_cached(
                "INSERT INTO sync_feed_heads (feed, position) VALUES (?1, 1)
                 ON CONFLICT (feed) DO UPDATE SET position = position + 1
                 RETURNING position",
            )?
            .query_row([feed], |row| row.get(0))?;
        tx.prepare_cached(
            "INSERT INTO sync_feed (feed, position, workflow_id, base, head)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            feed,
            position,
            workflow_id,
            to_sql_int("base", base)?,
            to_sql_int("head", head)?
        ])?;
        tx.commit()?;
        from_sql_int("position", position)
    }
}

/// The entries of `feed` after `after`, one more than `limit` (to tell whether more follow),
/// each with the stored size of its events.
fn list_entries(conn: &Connection, feed: &str, after: u64, limit: u32) -> Result<Vec<Listed>> {
    let mut stmt = conn.prepare_cached(
        "SELECT f.position, f.workflow_id, f.base, f.head,
                (SELECT coalesce(sum(length(e.event)), 0) FROM events AS e
                 WHERE e.workflow_id = f.workflow_id AND e.seq > f.base AND e.seq <= f.head)
         FROM sync_feed AS f
         WHERE f.feed = ?1 AND f.position > ?2
         ORDER BY f.position LIMIT ?3",
    )?;
    let rows = stmt.query_map(
        params![feed, to_sql_int("after", after)?, i64::from(limit) + 1],
        |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, i64>(4)?,
            ))
        },
    )?;
    rows.map(|row| {
        let (position, workflow_id, base, head, bytes) = row?;
        Ok(Listed {
            entry: FeedEntry {
                position: from_sql_int("position", position)?,
                workflow_id,
                base: from_sql_int("base", base)?,
                head: from_sql_int("head", head)?,
                events: None,
            },
            bytes: from_sql_int("bytes", bytes)?,
        })
    })
    .collect()
}

/// The events `from + 1 ..= through` of `workflow_id`, decoded.
fn events_between(
    conn: &Connection,
    workflow_id: &str,
    from: u64,
    through: u64,
) -> Result<Vec<StoredEvent>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, event FROM events WHERE workflow_id = ?1 AND seq > ?2 AND seq <= ?3
         ORDER BY seq",
    )?;
    let mut rows = stmt.query(params![
        workflow_id,
        to_sql_int("after", from)?,
        to_sql_int("through", through)?
    ])?;
    let mut events = Vec::new();
    while let Some(row) = rows.next()? {
        let seq = from_sql_int("seq", row.get(0)?)?;
        let event = decode_at(workflow_id, seq, row.get_ref(1)?.as_blob()?)?;
        events.push(StoredEvent { seq, event });
    }
    Ok(events)
}

impl SyncFeed for SqliteStore {
    fn read_feed(
        &self,
        feed: &str,
        after: u64,
        bound: PageBound,
        with_events: bool,
    ) -> Result<FeedPage> {
        check_id("feed", feed)?;
        check_bound(bound)?;
        // One snapshot for the listing and the events, even while another connection writes.
        let _snapshot = self.conn().unchecked_transaction()?;
        let mut listed = list_entries(self.conn(), feed, after, bound.limit)?;
        let mut more = listed.len() > bound.limit as usize;
        listed.truncate(bound.limit as usize);
        let sizes = listed.iter().map(|l| {
            let id = l.entry.workflow_id.len() as u64;
            if with_events {
                l.bytes + id
            } else {
                id
            }
        });
        let fit = fitting(sizes, bound.max_bytes);
        more |= fit < listed.len();
        listed.truncate(fit);
        let mut entries = Vec::with_capacity(listed.len());
        for Listed { mut entry, .. } in listed {
            if with_events {
                entry.events = Some(events_between(
                    self.conn(),
                    &entry.workflow_id,
                    entry.base,
                    entry.head,
                )?);
            }
            entries.push(entry);
        }
        Ok(FeedPage { entries, more })
    }

    fn read_events_after(
        &self,
        workflow_id: &str,
        after: u64,
        bound: PageBound,
    ) -> Result<EventsPage> {
        check_id("workflowId", workflow_id)?;
        check_bound(bound)?;
        let _snapshot = self.conn().unchecked_transaction()?;
        let sizes: Vec<(i64, i64)> = self
            .conn()
            .prepare_cached(
                "SELECT seq, length(event) FROM events WHERE workflow_id = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )?
            .query_map(
                params![
                    workflow_id,
                    to_sql_int("after", after)?,
                    i64::from(bound.limit) + 1
                ],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let listed = sizes.len().min(bound.limit as usize);
        let fit = fitting(
            sizes[..listed].iter().map(|&(_, bytes)| bytes as u64),
            bound.max_bytes,
        );
        let Some(&(last, _)) = sizes[..fit].last() else {
            return Ok(EventsPage {
                events: Vec::new(),
                complete: true,
            });
        };
        let events = events_between(self.conn(), workflow_id, after, from_sql_int("seq", last)?)?;
        Ok(EventsPage {
            events,
            complete: fit == sizes.len(),
        })
    }

    fn listen_changes(&self, _on_change: OnChange) -> Result<Option<ChangeListener>> {
        // A SQLite file has one server process writing it, which tells its own waiters.
        Ok(None)
    }
}
