//! The workflow-engine half of `RunStoreCore`: journal, timers, outbox, visibility,
//! namespaces and packages. Conversions only; see `facade.rs`.

use wasm_bindgen::prelude::*;

use super::convert::{input, input_or_default};
use super::facade::RunStoreCore;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    // ----- workflow event journal -----

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

    // ----- packages -----

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
