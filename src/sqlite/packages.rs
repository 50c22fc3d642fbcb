//! SQL of workflow packages and their routes (tables `packages`, `package_routes`).

use crate::model::steps::{Operation, OperationOutcome as Done};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::paging::{self, Listing};
use super::SqliteStore;
use crate::backend::checks::{check_id, from_sql_int};
use crate::backend::packages::{check_hash, check_record};
use crate::error::{Error, Result};
use crate::model::packages::*;
use crate::model::{Page, PageRequest};

const COLUMNS: &str = "workflow_type, content_hash, archive, deployed_at";

fn record_from_row(row: &Row<'_>) -> rusqlite::Result<PackageRecord> {
    Ok(PackageRecord {
        workflow_type: row.get(0)?,
        content_hash: row.get(1)?,
        archive: row.get(2)?,
        deployed_at: row.get(3)?,
    })
}

fn route_in(tx: &Connection, workflow_type: &str, content_hash: &str) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO package_routes (workflow_type, content_hash) VALUES (?1, ?2)
         ON CONFLICT (workflow_type) DO UPDATE SET content_hash = excluded.content_hash",
    )?
    .execute([workflow_type, content_hash])?;
    Ok(())
}

fn hash_is_stored(tx: &Connection, content_hash: &str) -> Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM packages WHERE content_hash = ?1 LIMIT 1")?
        .exists([content_hash])?)
}

impl PackageStore for SqliteStore {
    fn put_package(&self, record: &PackageRecord) -> Result<()> {
        self.put_package_for_types(record, &[])
    }

    fn put_package_for_types(&self, record: &PackageRecord, member_types: &[String]) -> Result<()> {
        alone!(self, Operation::PutPackage { record: record.clone(), member_types: Some(member_types.to_vec()) }, Done::PutPackage {} => ());
        check_record(record)?;
        for (i, member) in member_types.iter().enumerate() {
            check_id(&format!("memberTypes[{i}]"), member)?;
        }
        let tx = self.write_tx()?;
        tx.prepare_cached(&format!(
            "INSERT INTO packages ({COLUMNS}) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (workflow_type, content_hash)
             DO UPDATE SET archive = excluded.archive, deployed_at = excluded.deployed_at"
        ))?
        .execute(params![
            record.workflow_type,
            record.content_hash,
            record.archive,
            record.deployed_at
        ])?;
        route_in(&tx, &record.workflow_type, &record.content_hash)?;
        for member in member_types {
            route_in(&tx, member, &record.content_hash)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn get_package(
        &self,
        workflow_type: &str,
        content_hash: &str,
    ) -> Result<Option<PackageRecord>> {
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        Ok(self
            .conn()
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM packages WHERE workflow_type = ?1 AND content_hash = ?2"
            ))?
            .query_row([workflow_type, content_hash], record_from_row)
            .optional()?)
    }

    fn list_packages(&self, page: &PageRequest) -> Result<Page<PackageMeta>> {
        PACKAGES.read(
            self.conn(),
            "SELECT workflow_type, content_hash, length(archive), deployed_at FROM packages
             WHERE 1",
            Vec::new(),
            page,
            |row| {
                Ok(PackageMeta {
                    workflow_type: row.get(0)?,
                    content_hash: row.get(1)?,
                    size_bytes: from_sql_int("archive length", row.get(2)?)?,
                    deployed_at: row.get(3)?,
                })
            },
            |meta| {
                vec![
                    SqlValue::Integer(meta.deployed_at),
                    paging::text(&meta.workflow_type),
                    paging::text(&meta.content_hash),
                ]
            },
        )
    }

    fn delete_package(&self, workflow_type: &str, content_hash: &str) -> Result<Vec<String>> {
        alone!(self, Operation::DeletePackage { workflow_type: workflow_type.to_owned(), content_hash: content_hash.to_owned() }, Done::DeletePackage { dropped_routes } => dropped_routes);
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        let unrouted =
            self.delete_with_room(|| self.delete_package_in_tx(workflow_type, content_hash))?;
        self.release_space();
        Ok(unrouted)
    }

    fn set_package_route(&self, workflow_type: &str, content_hash: &str) -> Result<()> {
        alone!(self, Operation::SetPackageRoute { workflow_type: workflow_type.to_owned(), content_hash: content_hash.to_owned() }, Done::SetPackageRoute {} => ());
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        let tx = self.write_tx()?;
        if !hash_is_stored(&tx, content_hash)? {
            return Err(Error::not_found("package with hash", content_hash));
        }
        route_in(&tx, workflow_type, content_hash)?;
        tx.commit()?;
        Ok(())
    }

    fn list_package_routes(&self, page: &PageRequest) -> Result<Page<PackageRoute>> {
        ROUTES.read(
            self.conn(),
            "SELECT workflow_type, content_hash FROM package_routes WHERE 1",
            Vec::new(),
            page,
            |row| {
                Ok(PackageRoute {
                    workflow_type: row.get(0)?,
                    content_hash: row.get(1)?,
                })
            },
            |route| vec![paging::text(&route.workflow_type)],
        )
    }

    fn get_package_route(&self, workflow_type: &str) -> Result<Option<String>> {
        check_id("workflowType", workflow_type)?;
        Ok(self
            .conn()
            .prepare_cached("SELECT content_hash FROM package_routes WHERE workflow_type = ?1")?
            .query_row([workflow_type], |row| row.get(0))
            .optional()?)
    }
}

/// Packages in deploy order.
const PACKAGES: Listing = Listing {
    name: "packages",
    key: "deployed_at, workflow_type, content_hash",
    key_len: 3,
};

/// Routes by workflow type.
const ROUTES: Listing = Listing {
    name: "packageRoutes",
    key: "workflow_type",
    key_len: 1,
};

impl SqliteStore {
    /// The delete of one package and the routes it leaves dangling, in one transaction.
    fn delete_package_in_tx(&self, workflow_type: &str, content_hash: &str) -> Result<Vec<String>> {
        let tx = self.write_tx()?;
        let deleted = tx
            .prepare_cached("DELETE FROM packages WHERE workflow_type = ?1 AND content_hash = ?2")?
            .execute([workflow_type, content_hash])?;
        if deleted == 0 {
            return Err(Error::not_found(
                "package",
                format!("{workflow_type}@{content_hash}"),
            ));
        }
        let unrouted = if hash_is_stored(&tx, content_hash)? {
            Vec::new()
        } else {
            let mut stmt = tx.prepare_cached(
                "DELETE FROM package_routes WHERE content_hash = ?1 RETURNING workflow_type",
            )?;
            let types = stmt.query_map([content_hash], |row| row.get::<_, String>(0))?;
            let mut types = types.collect::<rusqlite::Result<Vec<_>>>()?;
            types.sort();
            types
        };
        tx.commit()?;
        Ok(unrouted)
    }
}
