//! SQL of the sync server's change feeds (tables `sync_feed`, `sync_feed_heads`) on
//! PostgreSQL, reads bounded by bytes, and the `LISTEN` that tells a server process of the
//! entries other processes record.
//!
//! A push's entry takes the feed's next position with an `UPDATE` of the feed's row in
//! `sync_feed_heads`, in the last statement of the push's transaction (with the push's request
//! record): concurrent pushes to one namespace queue for the feed (an advisory lock taken in
//! the same statement, then the row lock; both held from there to the commit) instead of
//! racing for the position and retrying, and a position is visible only once every position
//! below it is. Each entry also sends `NOTIFY runstore_changes` (delivered at commit) with the
//! schema, the feed and the position, which every server process on the database listens to.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::NoTls;

use super::journal::decode_row_event;
use super::paging::col;
use super::session::{Sql, Tx};
use super::{to_i64, to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::paging::{check_bound, fitting};
use crate::backend::sync::check_change;
use crate::error::Result;
use crate::model::journal::StoredEvent;
use crate::model::sync::*;
use crate::model::Millis;

/// The channel every entry is announced on.
const CHANNEL: &str = "runstore_changes";

/// The first key of the feeds' advisory locks ("rfed"), apart from the leases' ("rnst").
const FEED_LOCK_CLASS: i32 = 0x7266_6564;

/// The start of both statements that record an entry: queues for the feed, takes its next
/// position, inserts the entry. `$1` the feed, `$2` the workflow, `$3` `$4` base and head, `$6`
/// the lock class; `entry` gives the position.
///
/// Concurrent pushes to one feed queue on a transaction-level advisory lock, exclusive, taken
/// just before the feed's row in the same statement (no round trip between the two). Without
/// it they queued on the row itself: each waiter of an `ON CONFLICT DO UPDATE` waits on the
/// transaction id that last updated the row, so every commit woke all of them at once, each
/// looked for the row again and all but one went back to waiting on the winner's id (sampled
/// during `benches/sync_server.rs` at 32 clients: the waiters on `Lock transactionid`, with
/// `LWLock LockManager` waits beside them). A commit grants the advisory lock to the next
/// waiter only, first come first served, and the row's `UPDATE` then finds the row free. The
/// lock is held to the commit like the row's, so positions still commit in order; keyed by
/// the schema and the feed, in a class of its own.
macro_rules! take_position {
    () => {
        "WITH queued AS (
           SELECT pg_advisory_xact_lock($6, hashtext(current_schema() || '/feed/' || $1))),
         taken AS (
           INSERT INTO sync_feed_heads AS h (feed, position) SELECT $1, 1 FROM queued
           ON CONFLICT (feed) DO UPDATE SET position = h.position + 1
           RETURNING position),
         entry AS (
           INSERT INTO sync_feed (feed, position, workflow_id, base, head)
           SELECT $1, position, $2, $3, $4 FROM taken
           RETURNING position)"
    };
}

/// Records that `workflow_id` went from `base` to `head` as the next entry of `feed`, inside
/// the caller's transaction; returns its position.
pub(super) fn record_change_in(
    tx: &mut Tx<'_>,
    feed: &str,
    workflow_id: &str,
    base: u64,
    head: u64,
) -> Result<u64> {
    check_change(feed, workflow_id, base, head)?;
    // One statement, as late in the step as its operations allow (a push, whose last
    // operation this is, records it with its request: `record_change_and_request_in`).
    let row = tx.query_one(
        concat!(
            take_position!(),
            "
         SELECT position, pg_notify($5, current_schema() || E'\\t' || $1 || E'\\t' || position::text)
         FROM entry"
        ),
        &[
            &feed,
            &workflow_id,
            &to_i64("base", base)?,
            &to_i64("head", head)?,
            &CHANNEL,
            &FEED_LOCK_CLASS,
        ],
    )?;
    let position: i64 = col(&row, 0)?;
    to_u64("position", position)
}

/// [`record_change_in`] for a step whose last operation it is, with the step's request
/// record in the same statement: the request's row `seq` gets the outcomes `before` the
/// position `after`, and its commit time, which is returned with the position.
///
/// The record needs the position, so it used to be a statement of its own after the entry's,
/// while the feed was held: one more round trip between the client and the server for each
/// push that every other push to the feed waited for.
pub(super) fn record_change_and_request_in(
    tx: &mut Tx<'_>,
    change: (&str, &str, u64, u64),
    seq: i64,
    (before, after): (&str, &str),
) -> Result<(u64, Millis)> {
    let (feed, workflow_id, base, head) = change;
    check_change(feed, workflow_id, base, head)?;
    let row = tx.query_one(
        concat!(
            take_position!(),
            ",
         request AS (
           UPDATE requests SET outcomes = $8 || entry.position::text || $9,
             committed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
           FROM entry WHERE requests.seq = $7
           RETURNING requests.committed_at)
         SELECT entry.position, request.committed_at,
                pg_notify($5, current_schema() || E'\\t' || $1 || E'\\t' || entry.position::text)
         FROM entry, request"
        ),
        &[
            &feed,
            &workflow_id,
            &to_i64("base", base)?,
            &to_i64("head", head)?,
            &CHANNEL,
            &FEED_LOCK_CLASS,
            &seq,
            &before,
            &after,
        ],
    )?;
    let position: i64 = col(&row, 0)?;
    Ok((to_u64("position", position)?, col(&row, 1)?))
}

/// The events `from + 1 ..= through` of `workflow_id`, decoded.
fn events_between(
    client: &mut impl Sql,
    workflow_id: &str,
    from: u64,
    through: u64,
) -> Result<Vec<StoredEvent>> {
    let rows = client.query(
        "SELECT seq, event FROM events WHERE workflow_id = $1 AND seq > $2 AND seq <= $3
         ORDER BY seq",
        &[
            &workflow_id,
            &to_i64("after", from)?,
            &to_i64("through", through)?,
        ],
    )?;
    rows.iter()
        .map(|row| decode_row_event(workflow_id, row))
        .collect()
}

/// Fills in the events of every entry of a page, in one query for the whole page (a query per
/// entry made a page of 500 entries 500 round trips).
fn events_of_entries(client: &mut impl Sql, entries: &mut [FeedEntry]) -> Result<()> {
    let mut ids = Vec::with_capacity(entries.len());
    let mut bases = Vec::with_capacity(entries.len());
    let mut heads = Vec::with_capacity(entries.len());
    for entry in entries.iter_mut() {
        ids.push(entry.workflow_id.as_str());
        bases.push(to_i64("base", entry.base)?);
        heads.push(to_i64("head", entry.head)?);
    }
    let rows = client.query(
        "SELECT e.seq, e.event, p.i FROM unnest($1::text[], $2::bigint[], $3::bigint[])
           WITH ORDINALITY AS p(workflow_id, base, head, i)
         JOIN events AS e ON e.workflow_id = p.workflow_id AND e.seq > p.base AND e.seq <= p.head
         ORDER BY p.i, e.seq",
        &[&ids, &bases, &heads],
    )?;
    let mut found: Vec<Vec<StoredEvent>> = entries.iter().map(|_| Vec::new()).collect();
    for row in &rows {
        let i: i64 = col(row, 2)?;
        let index = usize::try_from(i - 1)
            .ok()
            .filter(|index| *index < entries.len())
            .ok_or_else(|| crate::Error::Corrupt {
                message: format!("a feed page's events named entry {i}"),
            })?;
        found[index].push(decode_row_event(&entries[index].workflow_id, row)?);
    }
    for (entry, events) in entries.iter_mut().zip(found) {
        entry.events = Some(events);
    }
    Ok(())
}

impl SyncFeed for PgStore {
    fn read_feed(
        &self,
        feed: &str,
        after: u64,
        bound: PageBound,
        with_events: bool,
    ) -> Result<FeedPage> {
        check_id("feed", feed)?;
        check_bound(bound)?;
        self.read(|client| {
            let rows = client.query(
                "SELECT f.position, f.workflow_id, f.base, f.head,
                        (SELECT coalesce(sum(octet_length(e.event)), 0)::bigint FROM events AS e
                         WHERE e.workflow_id = f.workflow_id
                           AND e.seq > f.base AND e.seq <= f.head)
                 FROM sync_feed AS f
                 WHERE f.feed = $1 AND f.position > $2
                 ORDER BY f.position LIMIT $3",
                &[
                    &feed,
                    &to_i64("after", after)?,
                    &(i64::from(bound.limit) + 1),
                ],
            )?;
            let mut more = rows.len() > bound.limit as usize;
            let mut listed = Vec::with_capacity(rows.len());
            for row in rows.iter().take(bound.limit as usize) {
                let entry = FeedEntry {
                    position: to_u64("position", col(row, 0)?)?,
                    workflow_id: col(row, 1)?,
                    base: to_u64("base", col(row, 2)?)?,
                    head: to_u64("head", col(row, 3)?)?,
                    events: None,
                };
                let bytes = to_u64("bytes", col(row, 4)?)?;
                listed.push((entry, bytes));
            }
            let sizes = listed.iter().map(|(entry, bytes)| {
                let id = entry.workflow_id.len() as u64;
                if with_events {
                    bytes + id
                } else {
                    id
                }
            });
            let fit = fitting(sizes, bound.max_bytes);
            more |= fit < listed.len();
            listed.truncate(fit);
            let mut entries: Vec<FeedEntry> = listed.into_iter().map(|(entry, _)| entry).collect();
            if with_events {
                events_of_entries(client, &mut entries)?;
            }
            Ok(FeedPage { entries, more })
        })
    }

    fn read_events_after(
        &self,
        workflow_id: &str,
        after: u64,
        bound: PageBound,
    ) -> Result<EventsPage> {
        check_id("workflowId", workflow_id)?;
        check_bound(bound)?;
        self.read(|client| {
            let rows = client.query(
                "SELECT seq, octet_length(event)::bigint FROM events
                 WHERE workflow_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[
                    &workflow_id,
                    &to_i64("after", after)?,
                    &(i64::from(bound.limit) + 1),
                ],
            )?;
            let listed = rows.len().min(bound.limit as usize);
            let mut sizes = Vec::with_capacity(listed);
            for row in &rows[..listed] {
                sizes.push(to_u64("bytes", col(row, 1)?)?);
            }
            let fit = fitting(sizes, bound.max_bytes);
            let Some(last) = rows[..fit].last() else {
                return Ok(EventsPage {
                    events: Vec::new(),
                    complete: true,
                });
            };
            let through = to_u64("seq", col(last, 0)?)?;
            Ok(EventsPage {
                events: events_between(client, workflow_id, after, through)?,
                complete: fit == rows.len(),
            })
        })
    }

    fn listen_changes(&self, on_change: OnChange) -> Result<Option<ChangeListener>> {
        let config = self.config.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("runstore-listen".into())
            .spawn(move || listen(&config, on_change.as_ref(), &stopping))
            .map_err(|error| crate::Error::Unavailable {
                message: format!("cannot start the change listener: {error}"),
                request_id: None,
            })?;
        Ok(Some(ChangeListener::new(move || {
            stop.store(true, Ordering::Relaxed);
            let _ = thread.join();
        })))
    }
}

/// How long a listener waits between looks at its stop flag, and before reconnecting.
const LISTEN_TICK: Duration = Duration::from_millis(250);

/// Listens until `stop` is set, reconnecting when the connection is lost. After each
/// (re)connection it calls `on_change("", 0)`: entries recorded while it was not listening
/// went unheard, so every reader must look again.
fn listen(
    config: &postgres::Config,
    on_change: &(dyn Fn(&str, u64) + Send + Sync),
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut client) = config.connect(NoTls) else {
            std::thread::sleep(LISTEN_TICK);
            continue;
        };
        let schema = client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .and_then(|()| client.query_one("SELECT current_schema()", &[]))
            .and_then(|row| row.try_get::<_, String>(0));
        let Ok(schema) = schema else {
            std::thread::sleep(LISTEN_TICK);
            continue;
        };
        on_change("", 0);
        while !stop.load(Ordering::Relaxed) {
            let mut notifications = client.notifications();
            let next = notifications.timeout_iter(LISTEN_TICK).next();
            match next {
                Ok(Some(notification)) => {
                    if let Some((feed, position)) = parse(notification.payload(), &schema) {
                        on_change(feed, position);
                    }
                }
                Ok(None) => {}
                Err(_) => break,
            }
        }
    }
}

/// The feed and position of a notification sent from `schema`.
fn parse<'p>(payload: &'p str, schema: &str) -> Option<(&'p str, u64)> {
    let mut parts = payload.split('\t');
    let (from, feed, position) = (parts.next()?, parts.next()?, parts.next()?);
    (from == schema).then_some(())?;
    Some((feed, position.parse().ok()?))
}
