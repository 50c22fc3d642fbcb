//! One store holds every namespace: the server keeps each namespace's records under ids that
//! start with the namespace, and strips that prefix from everything it answers.
//!
//! - workflow `w` of namespace `ns` is stored as `ns/w/w`;
//! - the namespace's change feed is the store's feed `ns` (see [`crate::SyncFeed`]);
//! - outbox dispatch keys are `ns/<key>`;
//! - request ids stay as sent, in the request log's scope `ns`: each namespace keeps its own
//!   window of ids, so one namespace's traffic cannot push another's out.

use crate::error::{Error, Result};
use crate::{NewOutboxRow, OutboxRow, RequestKey, MAX_ID_BYTES};

/// The ids of one namespace.
#[derive(Debug, Clone)]
pub struct Scope {
    namespace: String,
    workflow_prefix: String,
    key_prefix: String,
}

impl Scope {
    /// The scope of `namespace` (a name [`super::auth::Grants`] admitted).
    pub fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            workflow_prefix: format!("{namespace}/w/"),
            key_prefix: format!("{namespace}/"),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The namespace's change feed.
    pub fn feed(&self) -> String {
        format!("{}/feed", self.namespace)
    }

    /// The stored id of the client's workflow `id` (given as `field`).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty id, or one too long once prefixed.
    pub fn workflow(&self, field: &str, id: &str) -> Result<String> {
        Self::prefixed(field, &self.workflow_prefix, id)
    }

    /// The request log's key of the client's request id: the id as sent, in the namespace's
    /// scope, with the request's fingerprint.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (field `requestId`) for an empty or oversized id.
    pub fn request_key(&self, request_id: &str, fingerprint: String) -> Result<RequestKey> {
        Self::prefixed("requestId", "", request_id)?;
        Ok(RequestKey {
            scope: self.namespace.clone(),
            id: request_id.to_owned(),
            fingerprint,
        })
    }

    /// The stored form of the client's dispatch key.
    ///
    /// # Errors
    /// As [`Scope::workflow`].
    pub fn key(&self, field: &str, key: &str) -> Result<String> {
        Self::prefixed(field, &self.key_prefix, key)
    }

    fn prefixed(field: &str, prefix: &str, id: &str) -> Result<String> {
        if id.is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        if prefix.len() + id.len() > MAX_ID_BYTES {
            return Err(Error::invalid(
                field,
                format!(
                    "is {} bytes long; the limit in this namespace is {}",
                    id.len(),
                    MAX_ID_BYTES - prefix.len()
                ),
            ));
        }
        Ok(format!("{prefix}{id}"))
    }

    /// A pushed outbox row as stored: scoped key and workflow, and the namespace as its route
    /// namespace (a row naming another namespace is refused).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming `outbox[i].field`.
    pub fn outbox_row(&self, index: usize, mut row: NewOutboxRow) -> Result<NewOutboxRow> {
        let field = |name: &str| format!("outbox[{index}].{name}");
        row.dispatch_key = self.key(&field("dispatchKey"), &row.dispatch_key)?;
        row.workflow_id = self.workflow(&field("workflowId"), &row.workflow_id)?;
        match &row.namespace {
            Some(other) if other != &self.namespace => {
                return Err(Error::invalid(
                    field("namespace"),
                    "must be the push's namespace, or absent",
                ))
            }
            _ => row.namespace = Some(self.namespace.clone()),
        }
        Ok(row)
    }

    /// A stored outbox row as the namespace's worker sees it.
    pub fn unscope_row(&self, mut row: OutboxRow) -> OutboxRow {
        row.dispatch_key = self.strip_key(row.dispatch_key);
        row.workflow_id = self.strip_workflow(row.workflow_id);
        row
    }

    /// A stored workflow id as the client knows it.
    pub fn client_workflow(&self, id: String) -> String {
        self.strip_workflow(id)
    }

    fn strip_workflow(&self, id: String) -> String {
        id.strip_prefix(&self.workflow_prefix)
            .map_or(id.clone(), str::to_owned)
    }

    fn strip_key(&self, id: String) -> String {
        id.strip_prefix(&self.key_prefix)
            .map_or(id.clone(), str::to_owned)
    }

    /// `error` as the client should see it: without the step that wraps it (the client sent
    /// no step) and with the client's own ids.
    pub fn unscope_error(&self, error: Error) -> Error {
        match error {
            Error::Operation { error, .. } => self.unscope_error(*error),
            Error::SequenceConflict {
                workflow_id,
                expected,
                actual,
            } => Error::SequenceConflict {
                workflow_id: self.strip_workflow(workflow_id),
                expected,
                actual,
            },
            Error::LifecycleConflict {
                workflow_id,
                event,
                status,
            } => Error::LifecycleConflict {
                workflow_id: self.strip_workflow(workflow_id),
                event,
                status,
            },
            Error::Conflict {
                entity,
                id,
                expected,
                actual,
            } => Error::Conflict {
                entity,
                id: self.strip_for(entity, id),
                expected,
                actual,
            },
            Error::Fenced {
                workflow_id,
                holder,
                epoch,
                current_holder,
                current_epoch,
            } => Error::Fenced {
                workflow_id: self.strip_workflow(workflow_id),
                holder,
                epoch,
                current_holder,
                current_epoch,
            },
            Error::LeaseHeld {
                workflow_id,
                holder,
                epoch,
                expires_in_ms,
            } => Error::LeaseHeld {
                workflow_id: self.strip_workflow(workflow_id),
                holder,
                epoch,
                expires_in_ms,
            },
            Error::NotFound { entity, id } => Error::NotFound {
                entity,
                id: self.strip_for(entity, id),
            },
            other => other,
        }
    }

    /// A workflow's id, or a dispatch key or request id, by the kind of record it names.
    fn strip_for(&self, entity: &str, id: String) -> String {
        if entity == "workflow" {
            self.strip_workflow(id)
        } else {
            self.strip_key(id)
        }
    }
}
