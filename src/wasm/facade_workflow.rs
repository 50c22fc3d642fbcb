//! The workflow-engine half of `RunStoreCore`: journal, timers, outbox, visibility,
//! namespaces and packages. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
use crate::model::fields::{in_argument, renamed};
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    // ----- workflow event journal -----

    /// Appends events when the stored head equals `expectedSeq`; returns the new head. SEQUENCE_CONFLICT otherwise.
    #[wasm_bindgen(js_name = append, unchecked_return_type = "number")]
    pub fn append(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Event[]")] events: JsValue,
        #[wasm_bindgen(js_name = expectedSeq, unchecked_param_type = "number")]
        expected_seq: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let events: Vec<Event> = input("events", events)?;
        let expected_seq: u64 = input("expectedSeq", expected_seq)?;
        self.call(|s| s.append(&workflow_id, &events, expected_seq))
    }

    /// As `append`, and inserts outbox rows in the same transaction; a dispatch key that exists
    /// is CONFLICT and nothing is written.
    #[wasm_bindgen(js_name = appendWithOutbox, unchecked_return_type = "number")]
    pub fn append_with_outbox(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Event[]")] events: JsValue,
        #[wasm_bindgen(js_name = expectedSeq, unchecked_param_type = "number")]
        expected_seq: JsValue,
        #[wasm_bindgen(unchecked_param_type = "NewOutboxRow[]")] outbox: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let events: Vec<Event> = input("events", events)?;
        let expected_seq: u64 = input("expectedSeq", expected_seq)?;
        let outbox: Vec<NewOutboxRow> = input("outbox", outbox)?;
        self.call(|s| s.append_with_outbox(&workflow_id, &events, expected_seq, &outbox))
    }

    /// A page of the workflow's events in seq order (`page`: `{ limit?, cursor? }`; default 1000 items, at most 10000).
    #[wasm_bindgen(js_name = readHistory, unchecked_return_type = "Page<StoredEvent>")]
    pub fn read_history(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_json(|s| s.read_history_json(&workflow_id, 0, &page))
    }

    /// A page of the events with seq >= `fromSeq`.
    #[wasm_bindgen(js_name = readHistoryFrom, unchecked_return_type = "Page<StoredEvent>")]
    pub fn read_history_from(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(js_name = fromSeq, unchecked_param_type = "number")] from_seq: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let from_seq: u64 = input("fromSeq", from_seq)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_json(|s| s.read_history_json(&workflow_id, from_seq, &page))
    }

    /// `readHistoryFrom` as JSON text, for the main-thread client's worker (see
    /// `RunStoreCore::call_text`); not part of the API, hence the name.
    #[wasm_bindgen(js_name = __historyText, skip_typescript)]
    pub fn history_text(
        &self,
        workflow_id: JsValue,
        from_seq: JsValue,
        page: JsValue,
    ) -> Result<String, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let from_seq: u64 = input("fromSeq", from_seq)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call_text(|s| s.read_history_json(&workflow_id, from_seq, &page))
    }

    /// The seq of the workflow's last event; 0 when it has none.
    #[wasm_bindgen(js_name = head, unchecked_return_type = "number")]
    pub fn head(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.head(&workflow_id))
    }

    /// A page of the workflow ids with events.
    #[wasm_bindgen(js_name = listWorkflowIds, unchecked_return_type = "Page<string>")]
    pub fn list_workflow_ids(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_workflow_ids(&page))
    }

    /// A page of the ids of workflows whose status is not terminal.
    #[wasm_bindgen(js_name = listActive, unchecked_return_type = "Page<string>")]
    pub fn list_active(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_active(&page))
    }

    /// A page of the ids of paused workflows.
    #[wasm_bindgen(js_name = listPaused, unchecked_return_type = "Page<string>")]
    pub fn list_paused(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_paused(&page))
    }

    /// The projected status of one workflow; NOT_FOUND when it has no events.
    #[wasm_bindgen(js_name = workflowSummary, unchecked_return_type = "WorkflowSummary")]
    pub fn workflow_summary(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.workflow_summary(&workflow_id))
    }

    /// A page of the workflow summaries matching the query, newest start first.
    #[wasm_bindgen(js_name = queryWorkflows, unchecked_return_type = "Page<WorkflowSummary>")]
    pub fn query_workflows(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "WorkflowQuery")] query: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let query: WorkflowQuery = input_or_default("query", query)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.query_workflows(&query, &page))
    }

    /// The runs of a workflow in continue-as-new order.
    #[wasm_bindgen(js_name = readRunChain, unchecked_return_type = "RunSummary[]")]
    pub fn read_run_chain(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.read_run_chain(&workflow_id))
    }

    /// The first stored event this code cannot decode, or null.
    #[wasm_bindgen(js_name = findUndecodableEvent, unchecked_return_type = "UndecodableEvent | null")]
    pub fn find_undecodable_event(&self) -> Result<JsValue, JsValue> {
        self.call(|s| s.find_undecodable_event())
    }

    // ----- durable timers -----

    /// Schedules a timer, replacing the fire time of one with the same ids.
    #[wasm_bindgen(js_name = scheduleTimer, unchecked_return_type = "undefined")]
    pub fn schedule_timer(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(js_name = timerId, unchecked_param_type = "string")] timer_id: JsValue,
        #[wasm_bindgen(js_name = fireAt, unchecked_param_type = "number")] fire_at: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let timer_id: String = input("timerId", timer_id)?;
        let fire_at: Millis = input("fireAt", fire_at)?;
        self.call_unit(|s| s.schedule_timer(&workflow_id, &timer_id, fire_at))
    }

    /// A page of the timers due at `asOf`, by fire time.
    #[wasm_bindgen(js_name = dueTimers, unchecked_return_type = "Page<Timer>")]
    pub fn due_timers(
        &self,
        #[wasm_bindgen(js_name = asOf, unchecked_param_type = "number")] as_of: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let as_of: Millis = input("asOf", as_of)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.due_timers(as_of, &page))
    }

    /// Removes a timer; returns whether it existed.
    #[wasm_bindgen(js_name = cancelTimer, unchecked_return_type = "boolean")]
    pub fn cancel_timer(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
        #[wasm_bindgen(js_name = timerId, unchecked_param_type = "string")] timer_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        let timer_id: String = input("timerId", timer_id)?;
        self.call(|s| s.cancel_timer(&workflow_id, &timer_id))
    }

    /// A page of the timers, by fire time.
    #[wasm_bindgen(js_name = listTimers, unchecked_return_type = "Page<Timer>")]
    pub fn list_timers(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_timers(&page))
    }

    // ----- outbox -----

    /// Inserts rows, ignoring keys that exist; returns how many were inserted.
    #[wasm_bindgen(js_name = insertOutbox, unchecked_return_type = "number")]
    pub fn insert_outbox(
        &self,
        #[wasm_bindgen(unchecked_param_type = "NewOutboxRow[]")] rows: JsValue,
    ) -> Result<JsValue, JsValue> {
        let rows: Vec<NewOutboxRow> = input("rows", rows)?;
        self.call(|s| s.insert_outbox(&rows).map_err(renamed("outbox", "rows")))
    }

    /// Claims up to `limit` due pending rows, oldest `visibleAfter` first.
    #[wasm_bindgen(js_name = claimOutbox, unchecked_return_type = "OutboxRow[]")]
    pub fn claim_outbox(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ClaimFilter")] filter: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now: Millis = input("now", now)?;
        let limit: u32 = input("limit", limit)?;
        let filter: ClaimFilter = input_or_default("filter", filter)?;
        self.call(|s| s.claim_outbox(now, limit, &filter))
    }

    /// Marks a live row done, if `claimToken` is its current claim token; CONFLICT otherwise.
    #[wasm_bindgen(js_name = completeOutbox, unchecked_return_type = "undefined")]
    pub fn complete_outbox(
        &self,
        #[wasm_bindgen(js_name = dispatchKey, unchecked_param_type = "string")]
        dispatch_key: JsValue,
        #[wasm_bindgen(js_name = claimToken, unchecked_param_type = "number")] claim_token: JsValue,
    ) -> Result<JsValue, JsValue> {
        let dispatch_key: String = input("dispatchKey", dispatch_key)?;
        let claim_token: u64 = input("claimToken", claim_token)?;
        self.call_unit(|s| s.complete_outbox(&dispatch_key, claim_token))
    }

    /// Marks several claimed rows done in one transaction, all or none.
    #[wasm_bindgen(js_name = completeOutboxBatch, unchecked_return_type = "undefined")]
    pub fn complete_outbox_batch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OutboxClaim[]")] claims: JsValue,
    ) -> Result<JsValue, JsValue> {
        let claims: Vec<OutboxClaim> = input("claims", claims)?;
        self.call_unit(|s| s.complete_outbox_batch(&claims))
    }

    /// Returns a live row to pending with its next attempt and a later fence, or dead-letters
    /// it when that attempt reaches its maximum; returns the row's new status.
    #[wasm_bindgen(js_name = retryOutbox, unchecked_return_type = "'pending' | 'failed'")]
    pub fn retry_outbox(
        &self,
        #[wasm_bindgen(js_name = dispatchKey, unchecked_param_type = "string")]
        dispatch_key: JsValue,
        #[wasm_bindgen(js_name = claimToken, unchecked_param_type = "number")] claim_token: JsValue,
        #[wasm_bindgen(js_name = nextAttempt, unchecked_param_type = "number")]
        next_attempt: JsValue,
        #[wasm_bindgen(js_name = visibleAfter, unchecked_param_type = "number")]
        visible_after: JsValue,
    ) -> Result<JsValue, JsValue> {
        let dispatch_key: String = input("dispatchKey", dispatch_key)?;
        let claim_token: u64 = input("claimToken", claim_token)?;
        let next_attempt: u32 = input("nextAttempt", next_attempt)?;
        let visible_after: Millis = input("visibleAfter", visible_after)?;
        self.call(|s| s.retry_outbox(&dispatch_key, claim_token, next_attempt, visible_after))
    }

    /// Moves a live row to the dead letter state `failed` with a reason.
    #[wasm_bindgen(js_name = failOutbox, unchecked_return_type = "undefined")]
    pub fn fail_outbox(
        &self,
        #[wasm_bindgen(js_name = dispatchKey, unchecked_param_type = "string")]
        dispatch_key: JsValue,
        #[wasm_bindgen(js_name = claimToken, unchecked_param_type = "number")] claim_token: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] reason: JsValue,
    ) -> Result<JsValue, JsValue> {
        let dispatch_key: String = input("dispatchKey", dispatch_key)?;
        let claim_token: u64 = input("claimToken", claim_token)?;
        let reason: String = input("reason", reason)?;
        self.call_unit(|s| s.fail_outbox(&dispatch_key, claim_token, &reason))
    }

    /// Cancels every live row of a workflow; returns their keys.
    #[wasm_bindgen(js_name = cancelWorkflowOutbox, unchecked_return_type = "string[]")]
    pub fn cancel_workflow_outbox(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.cancel_workflow_outbox(&workflow_id))
    }

    /// Returns rows claimed before `olderThan` to pending, counting an attempt; a row out of
    /// attempts becomes a dead letter instead.
    #[wasm_bindgen(js_name = rearmStaleClaims, unchecked_return_type = "OutboxRow[]")]
    pub fn rearm_stale_claims(
        &self,
        #[wasm_bindgen(js_name = olderThan, unchecked_param_type = "number")] older_than: JsValue,
        #[wasm_bindgen(js_name = visibleAfter, unchecked_param_type = "number")]
        visible_after: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] limit: JsValue,
    ) -> Result<JsValue, JsValue> {
        let older_than: Millis = input("olderThan", older_than)?;
        let visible_after: Millis = input("visibleAfter", visible_after)?;
        let limit: u32 = input("limit", limit)?;
        self.call(|s| s.rearm_stale_claims(older_than, visible_after, limit))
    }

    /// A page of the rows claimed before `olderThan`, unchanged.
    #[wasm_bindgen(js_name = listStaleClaims, unchecked_return_type = "Page<OutboxRow>")]
    pub fn list_stale_claims(
        &self,
        #[wasm_bindgen(js_name = olderThan, unchecked_param_type = "number")] older_than: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let older_than: Millis = input("olderThan", older_than)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_stale_claims(older_than, &page))
    }

    /// A page of the ids of workflows with pending or claimed rows.
    #[wasm_bindgen(js_name = listUnsettledWorkflows, unchecked_return_type = "Page<string>")]
    pub fn list_unsettled_workflows(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_unsettled_workflows(&page))
    }

    /// In-flight and claimed counts per namespace, in one pass.
    #[wasm_bindgen(js_name = namespaceLoads, unchecked_return_type = "Record<string, NamespaceLoad>")]
    pub fn namespace_loads(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] namespaces: JsValue,
    ) -> Result<JsValue, JsValue> {
        let namespaces: Vec<String> = input("namespaces", namespaces)?;
        self.call(|s| s.namespace_loads(&namespaces))
    }

    /// Routes with rows due at `now`.
    #[wasm_bindgen(js_name = claimableRoutes, unchecked_return_type = "ClaimScope[]")]
    pub fn claimable_routes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let now: Millis = input("now", now)?;
        self.call(|s| s.claimable_routes(now))
    }

    /// One row's state, or null.
    #[wasm_bindgen(js_name = outboxRowState, unchecked_return_type = "OutboxRowState | null")]
    pub fn outbox_row_state(
        &self,
        #[wasm_bindgen(js_name = dispatchKey, unchecked_param_type = "string")]
        dispatch_key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let dispatch_key: String = input("dispatchKey", dispatch_key)?;
        self.call(|s| s.outbox_row_state(&dispatch_key))
    }

    /// A page of the rows in a status (all when null), by key.
    #[wasm_bindgen(js_name = listOutbox, unchecked_return_type = "Page<OutboxRow>")]
    pub fn list_outbox(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OutboxStatus | null")] status: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let status: Option<OutboxStatus> = input("status", status)?;
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_outbox(status, &page))
    }

    // ----- visibility -----

    /// Inserts or replaces a workflow's visibility record; CONFLICT when it would go backwards
    /// (a lower `head`, an older run, a closed run reopened).
    #[wasm_bindgen(js_name = upsertVisibility, unchecked_return_type = "undefined")]
    pub fn upsert_visibility(
        &self,
        #[wasm_bindgen(unchecked_param_type = "VisibilityRecord")] record: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record: VisibilityRecord = input("record", record)?;
        self.call_unit(|s| {
            s.upsert_visibility(&record)
                .map_err(in_argument("record", &[]))
        })
    }

    /// One record, or null.
    #[wasm_bindgen(js_name = getVisibility, unchecked_return_type = "VisibilityRecord | null")]
    pub fn get_visibility(
        &self,
        #[wasm_bindgen(js_name = workflowId, unchecked_param_type = "string")] workflow_id: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_id: String = input("workflowId", workflow_id)?;
        self.call(|s| s.get_visibility(&workflow_id))
    }

    /// A page of records matching the filter, newest start first.
    #[wasm_bindgen(js_name = listVisibility, unchecked_return_type = "VisibilityPage")]
    pub fn list_visibility(
        &self,
        #[wasm_bindgen(unchecked_param_type = "VisibilityFilter")] filter: JsValue,
        #[wasm_bindgen(js_name = pageSize, unchecked_param_type = "number")] page_size: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string | null")] cursor: JsValue,
    ) -> Result<JsValue, JsValue> {
        let filter: VisibilityFilter = input_or_default("filter", filter)?;
        let page_size: u32 = input("pageSize", page_size)?;
        let cursor: Option<String> = input("cursor", cursor)?;
        self.call(|s| s.list_visibility(&filter, page_size, cursor.as_deref()))
    }

    /// How many records match the filter.
    #[wasm_bindgen(js_name = countVisibility, unchecked_return_type = "number")]
    pub fn count_visibility(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "VisibilityFilter")] filter: JsValue,
    ) -> Result<JsValue, JsValue> {
        let filter: VisibilityFilter = input_or_default("filter", filter)?;
        self.call(|s| s.count_visibility(&filter))
    }

    // ----- namespaces -----

    /// Registers a namespace on first use; says whether it was created.
    #[wasm_bindgen(js_name = registerNamespace, unchecked_return_type = "RegisterOutcome")]
    pub fn register_namespace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "NamespaceOrigin")] origin: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number")] now: JsValue,
    ) -> Result<JsValue, JsValue> {
        let name: String = input("name", name)?;
        let origin: NamespaceOrigin = input("origin", origin)?;
        let now: Millis = input("now", now)?;
        self.call(|s| s.register_namespace(&name, origin, now))
    }

    /// Creates or replaces a namespace record.
    #[wasm_bindgen(js_name = putNamespace, unchecked_return_type = "RegisterOutcome")]
    pub fn put_namespace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "NamespaceRecord")] record: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record: NamespaceRecord = input("record", record)?;
        self.call(|s| s.put_namespace(&record).map_err(in_argument("record", &[])))
    }

    /// One namespace, or null.
    #[wasm_bindgen(js_name = getNamespace, unchecked_return_type = "NamespaceRecord | null")]
    pub fn get_namespace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Result<JsValue, JsValue> {
        let name: String = input("name", name)?;
        self.call(|s| s.get_namespace(&name))
    }

    /// A page of the namespaces, oldest first.
    #[wasm_bindgen(js_name = listNamespaces, unchecked_return_type = "Page<NamespaceRecord>")]
    pub fn list_namespaces(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_namespaces(&page))
    }

    /// Sets (or, with null, clears) a namespace's placement.
    #[wasm_bindgen(js_name = setNamespacePlacement, unchecked_return_type = "undefined")]
    pub fn set_namespace_placement(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] placement: JsValue,
    ) -> Result<JsValue, JsValue> {
        let name: String = input("name", name)?;
        let placement: serde_json::Value = input("placement", placement)?;
        self.call_unit(|s| s.set_namespace_placement(&name, &placement))
    }

    /// Deprecates a namespace; false when it already was.
    #[wasm_bindgen(js_name = deprecateNamespace, unchecked_return_type = "boolean")]
    pub fn deprecate_namespace(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
    ) -> Result<JsValue, JsValue> {
        let name: String = input("name", name)?;
        self.call(|s| s.deprecate_namespace(&name))
    }

    // ----- packages -----

    /// Stores a package and routes its type to it, atomically.
    #[wasm_bindgen(js_name = putPackage, unchecked_return_type = "undefined")]
    pub fn put_package(
        &self,
        #[wasm_bindgen(unchecked_param_type = "PackageRecord")] record: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record: PackageRecord = input("record", record)?;
        self.call_unit(|s| s.put_package(&record).map_err(in_argument("record", &[])))
    }

    /// Stores a package once and routes every member type to it, atomically.
    #[wasm_bindgen(js_name = putPackageForTypes, unchecked_return_type = "undefined")]
    pub fn put_package_for_types(
        &self,
        #[wasm_bindgen(unchecked_param_type = "PackageRecord")] record: JsValue,
        #[wasm_bindgen(js_name = memberTypes, unchecked_param_type = "string[]")]
        member_types: JsValue,
    ) -> Result<JsValue, JsValue> {
        let record: PackageRecord = input("record", record)?;
        let member_types: Vec<String> = input("memberTypes", member_types)?;
        self.call_unit(|s| {
            s.put_package_for_types(&record, &member_types)
                .map_err(in_argument("record", &["memberTypes"]))
        })
    }

    /// One package, or null.
    #[wasm_bindgen(js_name = getPackage, unchecked_return_type = "PackageRecord | null")]
    pub fn get_package(
        &self,
        #[wasm_bindgen(js_name = workflowType, unchecked_param_type = "string")]
        workflow_type: JsValue,
        #[wasm_bindgen(js_name = contentHash, unchecked_param_type = "string")]
        content_hash: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_type: String = input("workflowType", workflow_type)?;
        let content_hash: String = input("contentHash", content_hash)?;
        self.call(|s| s.get_package(&workflow_type, &content_hash))
    }

    /// A page of the packages' metadata in deploy order; `getPackage` reads an archive.
    #[wasm_bindgen(js_name = listPackages, unchecked_return_type = "Page<PackageMeta>")]
    pub fn list_packages(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_packages(&page))
    }

    /// Deletes a package; returns the types whose route went with it.
    #[wasm_bindgen(js_name = deletePackage, unchecked_return_type = "string[]")]
    pub fn delete_package(
        &self,
        #[wasm_bindgen(js_name = workflowType, unchecked_param_type = "string")]
        workflow_type: JsValue,
        #[wasm_bindgen(js_name = contentHash, unchecked_param_type = "string")]
        content_hash: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_type: String = input("workflowType", workflow_type)?;
        let content_hash: String = input("contentHash", content_hash)?;
        self.call_freeing(|s| s.delete_package(&workflow_type, &content_hash))
    }

    /// Routes a workflow type to a stored package hash.
    #[wasm_bindgen(js_name = setPackageRoute, unchecked_return_type = "undefined")]
    pub fn set_package_route(
        &self,
        #[wasm_bindgen(js_name = workflowType, unchecked_param_type = "string")]
        workflow_type: JsValue,
        #[wasm_bindgen(js_name = contentHash, unchecked_param_type = "string")]
        content_hash: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_type: String = input("workflowType", workflow_type)?;
        let content_hash: String = input("contentHash", content_hash)?;
        self.call_unit(|s| s.set_package_route(&workflow_type, &content_hash))
    }

    /// A page of the routes, by type.
    #[wasm_bindgen(js_name = listPackageRoutes, unchecked_return_type = "Page<PackageRoute>")]
    pub fn list_package_routes(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "PageRequest")] page: JsValue,
    ) -> Result<JsValue, JsValue> {
        let page: PageRequest = input_or_default("page", page)?;
        self.call(|s| s.list_package_routes(&page))
    }

    /// The hash a type is routed to, or null.
    #[wasm_bindgen(js_name = getPackageRoute, unchecked_return_type = "string | null")]
    pub fn get_package_route(
        &self,
        #[wasm_bindgen(js_name = workflowType, unchecked_param_type = "string")]
        workflow_type: JsValue,
    ) -> Result<JsValue, JsValue> {
        let workflow_type: String = input("workflowType", workflow_type)?;
        self.call(|s| s.get_package_route(&workflow_type))
    }
}
