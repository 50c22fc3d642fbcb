//! SQL of the namespace registry (table `namespaces`) on PostgreSQL.

use postgres::Row;

use super::session::Tx;

use super::paging::{col, Key, KeyKind, Listing};
use super::PgStore;
use crate::backend::checks::check_id;
use crate::backend::namespaces::encode_placement;
use crate::error::{Error, Result};
use crate::model::namespaces::*;
use crate::model::{Millis, Page, PageRequest};

const COLUMNS: &str = "name, origin, state, placement, created_at, last_seen";

fn corrupt(name: &str, column: &str, value: &str) -> Error {
    Error::Corrupt {
        message: format!("namespace {name} has unknown {column} {value}"),
    }
}

fn record_from_row(row: &Row) -> Result<NamespaceRecord> {
    let name: String = col(row, 0)?;
    let origin: String = col(row, 1)?;
    let state: String = col(row, 2)?;
    let placement: Option<String> = col(row, 3)?;
    Ok(NamespaceRecord {
        origin: NamespaceOrigin::parse(&origin).ok_or_else(|| corrupt(&name, "origin", &origin))?,
        state: NamespaceState::parse(&state).ok_or_else(|| corrupt(&name, "state", &state))?,
        placement: placement.as_deref().map(serde_json::from_str).transpose()?,
        created_at: col(row, 4)?,
        last_seen: col(row, 5)?,
        name,
    })
}

pub(super) fn register_in(
    tx: &mut Tx<'_>,
    name: &str,
    origin: NamespaceOrigin,
    now: Millis,
) -> Result<RegisterOutcome> {
    check_id("name", name)?;
    let created = tx.execute(
        "INSERT INTO namespaces (name, origin, state, placement, created_at, last_seen)
         VALUES ($1, $2, 'active', NULL, $3, $3)
         ON CONFLICT (name) DO NOTHING",
        &[&name, &origin.as_str(), &now],
    )? == 1;
    if !created {
        tx.execute(
            "UPDATE namespaces SET last_seen = greatest(last_seen, $2) WHERE name = $1",
            &[&name, &now],
        )?;
    }
    Ok(if created {
        RegisterOutcome::Created
    } else {
        RegisterOutcome::Existed
    })
}

pub(super) fn put_in(tx: &mut Tx<'_>, record: &NamespaceRecord) -> Result<RegisterOutcome> {
    check_id("name", &record.name)?;
    if record.last_seen < record.created_at {
        return Err(Error::invalid(
            "lastSeen",
            format!(
                "{} is before createdAt {}",
                record.last_seen, record.created_at
            ),
        ));
    }
    let placement = encode_placement("placement", record.placement.as_ref())?;
    let existed = tx
        .query_opt(
            "SELECT 1 FROM namespaces WHERE name = $1 FOR UPDATE",
            &[&record.name],
        )?
        .is_some();
    let params: [&(dyn postgres::types::ToSql + Sync); 6] = [
        &record.name,
        &record.origin.as_str(),
        &record.state.as_str(),
        &placement,
        &record.created_at,
        &record.last_seen,
    ];
    if existed {
        tx.execute(
            "UPDATE namespaces SET origin = $2, state = $3, placement = $4, created_at = $5,
               last_seen = $6 WHERE name = $1",
            &params,
        )?;
        return Ok(RegisterOutcome::Existed);
    }
    // A plain INSERT: when a concurrent put created the name first, the unique key refuses
    // this one and the transaction runs again, now finding the name.
    tx.execute(
        &format!("INSERT INTO namespaces ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"),
        &params,
    )?;
    Ok(RegisterOutcome::Created)
}

pub(super) fn set_placement_in(
    tx: &mut Tx<'_>,
    name: &str,
    placement: &serde_json::Value,
) -> Result<()> {
    check_id("name", name)?;
    let placement = encode_placement("placement", Some(placement))?;
    let changed = tx.execute(
        "UPDATE namespaces SET placement = $2 WHERE name = $1",
        &[&name, &placement],
    )?;
    if changed == 0 {
        return Err(Error::not_found("namespace", name));
    }
    Ok(())
}

pub(super) fn deprecate_in(tx: &mut Tx<'_>, name: &str) -> Result<bool> {
    check_id("name", name)?;
    let Some(row) = tx.query_opt(
        "SELECT state FROM namespaces WHERE name = $1 FOR UPDATE",
        &[&name],
    )?
    else {
        return Err(Error::not_found("namespace", name));
    };
    let state: String = col(&row, 0)?;
    if state == NamespaceState::Deprecated.as_str() {
        return Ok(false);
    }
    tx.execute(
        "UPDATE namespaces SET state = $2 WHERE name = $1",
        &[&name, &NamespaceState::Deprecated.as_str()],
    )?;
    Ok(true)
}

impl NamespaceStore for PgStore {
    fn register_namespace(
        &self,
        name: &str,
        origin: NamespaceOrigin,
        now: Millis,
    ) -> Result<RegisterOutcome> {
        check_id("name", name)?;
        self.write(|tx| register_in(tx, name, origin, now))
    }

    fn put_namespace(&self, record: &NamespaceRecord) -> Result<RegisterOutcome> {
        check_id("name", &record.name)?;
        self.write(|tx| put_in(tx, record))
    }

    fn get_namespace(&self, name: &str) -> Result<Option<NamespaceRecord>> {
        check_id("name", name)?;
        self.read(|client| {
            client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM namespaces WHERE name = $1"),
                    &[&name],
                )?
                .map(|row| record_from_row(&row))
                .transpose()
        })
    }

    fn list_namespaces(&self, page: &PageRequest) -> Result<Page<NamespaceRecord>> {
        self.read(|client| {
            NAMESPACES.read(
                client,
                &format!("SELECT {COLUMNS} FROM namespaces WHERE TRUE"),
                Vec::new(),
                page,
                record_from_row,
                |record| vec![Key::Int(record.created_at), Key::text(&record.name)],
            )
        })
    }

    fn set_namespace_placement(&self, name: &str, placement: &serde_json::Value) -> Result<()> {
        check_id("name", name)?;
        self.write(|tx| set_placement_in(tx, name, placement))
    }

    fn deprecate_namespace(&self, name: &str) -> Result<bool> {
        check_id("name", name)?;
        self.write(|tx| deprecate_in(tx, name))
    }
}

/// Namespaces, oldest first.
const NAMESPACES: Listing = Listing {
    name: "namespaces",
    key: "created_at, name",
    kinds: &[KeyKind::Int, KeyKind::Text],
};
