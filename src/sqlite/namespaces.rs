//! SQL of the namespace registry (table `namespaces`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, OptionalExtension, Row};

use super::paging::{self, Listing};
use super::SqliteStore;
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

fn record_from_row(row: &Row<'_>) -> Result<NamespaceRecord> {
    let name: String = row.get(0)?;
    let origin: String = row.get(1)?;
    let state: String = row.get(2)?;
    let placement: Option<String> = row.get(3)?;
    Ok(NamespaceRecord {
        origin: NamespaceOrigin::parse(&origin).ok_or_else(|| corrupt(&name, "origin", &origin))?,
        state: NamespaceState::parse(&state).ok_or_else(|| corrupt(&name, "state", &state))?,
        placement: placement.as_deref().map(serde_json::from_str).transpose()?,
        created_at: row.get(4)?,
        last_seen: row.get(5)?,
        name,
    })
}

impl NamespaceStore for SqliteStore {
    fn register_namespace(
        &self,
        name: &str,
        origin: NamespaceOrigin,
        now: Millis,
    ) -> Result<RegisterOutcome> {
        alone!(self, Operation::RegisterNamespace { name: name.to_owned(), origin, now }, Done::RegisterNamespace { outcome } => outcome);
        check_id("name", name)?;
        let tx = self.write_tx()?;
        let created = tx
            .prepare_cached(
                "INSERT INTO namespaces (name, origin, state, placement, created_at, last_seen)
                 VALUES (?1, ?2, 'active', NULL, ?3, ?3)
                 ON CONFLICT (name) DO NOTHING",
            )?
            .execute(params![name, origin.as_str(), now])?
            == 1;
        if !created {
            tx.prepare_cached(
                "UPDATE namespaces SET last_seen = max(last_seen, ?2) WHERE name = ?1",
            )?
            .execute(params![name, now])?;
        }
        tx.commit()?;
        Ok(if created {
            RegisterOutcome::Created
        } else {
            RegisterOutcome::Existed
        })
    }

    fn put_namespace(&self, record: &NamespaceRecord) -> Result<RegisterOutcome> {
        alone!(self, Operation::PutNamespace { record: record.clone() }, Done::PutNamespace { outcome } => outcome);
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
        let tx = self.write_tx()?;
        let existed = tx
            .prepare_cached("SELECT 1 FROM namespaces WHERE name = ?1")?
            .exists([&record.name])?;
        tx.prepare_cached(&format!(
            "INSERT OR REPLACE INTO namespaces ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        ))?
        .execute(params![
            record.name,
            record.origin.as_str(),
            record.state.as_str(),
            placement,
            record.created_at,
            record.last_seen
        ])?;
        tx.commit()?;
        Ok(if existed {
            RegisterOutcome::Existed
        } else {
            RegisterOutcome::Created
        })
    }

    fn get_namespace(&self, name: &str) -> Result<Option<NamespaceRecord>> {
        check_id("name", name)?;
        let mut stmt = self
            .conn()
            .prepare_cached(&format!("SELECT {COLUMNS} FROM namespaces WHERE name = ?1"))?;
        let mut rows = stmt.query([name])?;
        rows.next()?.map(record_from_row).transpose()
    }

    fn list_namespaces(&self, page: &PageRequest) -> Result<Page<NamespaceRecord>> {
        NAMESPACES.read(
            self.conn(),
            &format!("SELECT {COLUMNS} FROM namespaces WHERE 1"),
            Vec::new(),
            page,
            record_from_row,
            |record| {
                vec![
                    SqlValue::Integer(record.created_at),
                    paging::text(&record.name),
                ]
            },
        )
    }

    fn set_namespace_placement(&self, name: &str, placement: &serde_json::Value) -> Result<()> {
        alone!(self, Operation::SetNamespacePlacement { name: name.to_owned(), placement: placement.clone() }, Done::SetNamespacePlacement {} => ());
        check_id("name", name)?;
        let placement = encode_placement("placement", Some(placement))?;
        let changed = self
            .conn()
            .prepare_cached("UPDATE namespaces SET placement = ?2 WHERE name = ?1")?
            .execute(params![name, placement])?;
        if changed == 0 {
            return Err(Error::not_found("namespace", name));
        }
        Ok(())
    }

    fn deprecate_namespace(&self, name: &str) -> Result<bool> {
        alone!(self, Operation::DeprecateNamespace { name: name.to_owned() }, Done::DeprecateNamespace { deprecated } => deprecated);
        check_id("name", name)?;
        let tx = self.write_tx()?;
        let state: Option<String> = tx
            .prepare_cached("SELECT state FROM namespaces WHERE name = ?1")?
            .query_row([name], |row| row.get(0))
            .optional()?;
        let Some(state) = state else {
            return Err(Error::not_found("namespace", name));
        };
        if state == NamespaceState::Deprecated.as_str() {
            return Ok(false);
        }
        tx.prepare_cached("UPDATE namespaces SET state = ?2 WHERE name = ?1")?
            .execute(params![name, NamespaceState::Deprecated.as_str()])?;
        tx.commit()?;
        Ok(true)
    }
}

/// Namespaces, oldest first.
const NAMESPACES: Listing = Listing {
    name: "namespaces",
    key: "created_at, name",
    key_len: 2,
};
