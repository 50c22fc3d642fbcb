//! SQL of workflow packages and their routes (tables `packages`, `package_routes`) on
//! PostgreSQL.

use postgres::Row;

use super::session::Tx;

use super::paging::{col, Key, KeyKind, Listing};
use super::{to_u64, PgStore};
use crate::backend::checks::check_id;
use crate::backend::packages::{check_hash, check_record};
use crate::error::{Error, Result};
use crate::model::packages::*;
use crate::model::{Page, PageRequest};

const COLUMNS: &str = "workflow_type, content_hash, archive, deployed_at";

fn record_from_row(row: &Row) -> Result<PackageRecord> {
    Ok(PackageRecord {
        workflow_type: col(row, 0)?,
        content_hash: col(row, 1)?,
        archive: col(row, 2)?,
        deployed_at: col(row, 3)?,
    })
}

fn route(tx: &mut Tx<'_>, workflow_type: &str, content_hash: &str) -> Result<()> {
    tx.execute(
        "INSERT INTO package_routes (workflow_type, content_hash) VALUES ($1, $2)
         ON CONFLICT (workflow_type) DO UPDATE SET content_hash = excluded.content_hash",
        &[&workflow_type, &content_hash],
    )?;
    Ok(())
}

/// Whether a package has the hash; locks one such package (`FOR SHARE`), so that a concurrent
/// delete cannot leave the route written next pointing at nothing.
fn hash_is_stored(tx: &mut Tx<'_>, content_hash: &str) -> Result<bool> {
    Ok(tx
        .query_opt(
            "SELECT 1 FROM packages WHERE content_hash = $1 LIMIT 1 FOR SHARE",
            &[&content_hash],
        )?
        .is_some())
}

fn check_put(record: &PackageRecord, member_types: &[String]) -> Result<()> {
    check_record(record)?;
    for (i, member) in member_types.iter().enumerate() {
        check_id(&format!("memberTypes[{i}]"), member)?;
    }
    Ok(())
}

pub(super) fn put_in(
    tx: &mut Tx<'_>,
    record: &PackageRecord,
    member_types: &[String],
) -> Result<()> {
    check_put(record, member_types)?;
    tx.execute(
        &format!(
            "INSERT INTO packages ({COLUMNS}) VALUES ($1, $2, $3, $4)
             ON CONFLICT (workflow_type, content_hash)
             DO UPDATE SET archive = excluded.archive, deployed_at = excluded.deployed_at"
        ),
        &[
            &record.workflow_type,
            &record.content_hash,
            &record.archive,
            &record.deployed_at,
        ],
    )?;
    route(tx, &record.workflow_type, &record.content_hash)?;
    for member in member_types {
        route(tx, member, &record.content_hash)?;
    }
    Ok(())
}

pub(super) fn delete_in(
    tx: &mut Tx<'_>,
    workflow_type: &str,
    content_hash: &str,
) -> Result<Vec<String>> {
    check_id("workflowType", workflow_type)?;
    check_hash("contentHash", content_hash)?;
    let deleted = tx.execute(
        "DELETE FROM packages WHERE workflow_type = $1 AND content_hash = $2",
        &[&workflow_type, &content_hash],
    )?;
    if deleted == 0 {
        return Err(Error::not_found(
            "package",
            format!("{workflow_type}@{content_hash}"),
        ));
    }
    if hash_is_stored(tx, content_hash)? {
        return Ok(Vec::new());
    }
    let rows = tx.query(
        "DELETE FROM package_routes WHERE content_hash = $1 RETURNING workflow_type",
        &[&content_hash],
    )?;
    let mut types = rows
        .iter()
        .map(|row| col(row, 0))
        .collect::<Result<Vec<String>>>()?;
    types.sort();
    Ok(types)
}

pub(super) fn set_route_in(tx: &mut Tx<'_>, workflow_type: &str, content_hash: &str) -> Result<()> {
    check_id("workflowType", workflow_type)?;
    check_hash("contentHash", content_hash)?;
    if !hash_is_stored(tx, content_hash)? {
        return Err(Error::not_found("package with hash", content_hash));
    }
    route(tx, workflow_type, content_hash)
}

impl PackageStore for PgStore {
    fn put_package(&self, record: &PackageRecord) -> Result<()> {
        self.put_package_for_types(record, &[])
    }

    fn put_package_for_types(&self, record: &PackageRecord, member_types: &[String]) -> Result<()> {
        check_put(record, member_types)?;
        self.write(|tx| put_in(tx, record, member_types))
    }

    fn get_package(
        &self,
        workflow_type: &str,
        content_hash: &str,
    ) -> Result<Option<PackageRecord>> {
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        self.read(|client| {
            client
                .query_opt(
                    &format!(
                        "SELECT {COLUMNS} FROM packages WHERE workflow_type = $1 AND content_hash = $2"
                    ),
                    &[&workflow_type, &content_hash],
                )?
                .map(|row| record_from_row(&row))
                .transpose()
        })
    }

    fn list_packages(&self, page: &PageRequest) -> Result<Page<PackageMeta>> {
        self.read(|client| {
            PACKAGES.read(
                client,
                "SELECT workflow_type, content_hash, octet_length(archive)::bigint, deployed_at
                 FROM packages WHERE TRUE",
                Vec::new(),
                page,
                |row| {
                    Ok(PackageMeta {
                        workflow_type: col(row, 0)?,
                        content_hash: col(row, 1)?,
                        size_bytes: to_u64("archive length", col(row, 2)?)?,
                        deployed_at: col(row, 3)?,
                    })
                },
                |meta| {
                    vec![
                        Key::Int(meta.deployed_at),
                        Key::text(&meta.workflow_type),
                        Key::text(&meta.content_hash),
                    ]
                },
            )
        })
    }

    fn delete_package(&self, workflow_type: &str, content_hash: &str) -> Result<Vec<String>> {
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        self.write(|tx| delete_in(tx, workflow_type, content_hash))
    }

    fn set_package_route(&self, workflow_type: &str, content_hash: &str) -> Result<()> {
        check_id("workflowType", workflow_type)?;
        check_hash("contentHash", content_hash)?;
        self.write(|tx| set_route_in(tx, workflow_type, content_hash))
    }

    fn list_package_routes(&self, page: &PageRequest) -> Result<Page<PackageRoute>> {
        self.read(|client| {
            ROUTES.read(
                client,
                "SELECT workflow_type, content_hash FROM package_routes WHERE TRUE",
                Vec::new(),
                page,
                |row| {
                    Ok(PackageRoute {
                        workflow_type: col(row, 0)?,
                        content_hash: col(row, 1)?,
                    })
                },
                |route| vec![Key::text(&route.workflow_type)],
            )
        })
    }

    fn get_package_route(&self, workflow_type: &str) -> Result<Option<String>> {
        check_id("workflowType", workflow_type)?;
        self.read(|client| {
            client
                .query_opt(
                    "SELECT content_hash FROM package_routes WHERE workflow_type = $1",
                    &[&workflow_type],
                )?
                .map(|row| col(&row, 0))
                .transpose()
        })
    }
}

/// Packages in deploy order.
const PACKAGES: Listing = Listing {
    name: "packages",
    key: "deployed_at, workflow_type, content_hash",
    kinds: &[KeyKind::Int, KeyKind::Text, KeyKind::Text],
};

/// Routes by workflow type.
const ROUTES: Listing = Listing {
    name: "packageRoutes",
    key: "workflow_type",
    kinds: &[KeyKind::Text],
};
