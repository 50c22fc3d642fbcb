//! `RunStoreCore`'s read methods other than the hot ones (a workflow's history, its head and
//! checkpoints keep exports of their own): js/core.js defines each, calling `__read` with the
//! method's name and its arguments, so that they share one wrapper instead of each being an
//! export with its own (`facade_writes.rs` does the same for the writes). Each argument is read
//! as the method read it before, under its parameter's name.

use wasm_bindgen::prelude::*;

use super::convert::js_error;
use super::facade::RunStoreCore;
use super::facade_steps::Arguments;
use super::to_js::to_js;
use crate::*;

#[wasm_bindgen]
impl RunStoreCore {
    /// `runstore/core`'s way in for the read methods below (js/core.js): the method `method`
    /// with its arguments as JS values, at most three (a missing one is `undefined`, as in
    /// JS), passed one by one rather than in an array each call would read back through JS.
    /// Not part of the API, hence the name.
    #[wasm_bindgen(js_name = __read, skip_typescript)]
    pub fn read_method(
        &self,
        method: &str,
        first: JsValue,
        second: JsValue,
        third: JsValue,
    ) -> Result<JsValue, JsValue> {
        let arguments = Arguments::Values(vec![first, second, third].into_iter());
        self.read(method, arguments).map_err(js_error)
    }
}

impl RunStoreCore {
    /// Reads the arguments of `method` in order, then runs it on the open store (an argument's
    /// error comes before a closed store's, as the methods had them).
    fn read(&self, method: &str, mut a: Arguments) -> Result<JsValue> {
        match method {
            "listWorkflowIds" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_workflow_ids(&page))
            }
            "listActive" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_active(&page))
            }
            "listPaused" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_paused(&page))
            }
            "workflowSummary" => {
                let workflow_id: String = a.next("workflowId")?;
                self.answer(self.store()?.workflow_summary(&workflow_id))
            }
            "queryWorkflows" => {
                let query: WorkflowQuery = a.next_or_default("query")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.query_workflows(&query, &page))
            }
            "readRunChain" => {
                let workflow_id: String = a.next("workflowId")?;
                self.answer(self.store()?.read_run_chain(&workflow_id))
            }
            "findUndecodableEvent" => self.answer(self.store()?.find_undecodable_event()),
            "dueTimers" => {
                let as_of: Millis = a.next("asOf")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.due_timers(as_of, &page))
            }
            "listTimers" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_timers(&page))
            }
            "listStaleClaims" => {
                let older_than: Millis = a.next("olderThan")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_stale_claims(older_than, &page))
            }
            "listUnsettledWorkflows" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_unsettled_workflows(&page))
            }
            "namespaceLoads" => {
                let namespaces: Vec<String> = a.next("namespaces")?;
                self.answer(self.store()?.namespace_loads(&namespaces))
            }
            "claimableRoutes" => {
                let now: Millis = a.next("now")?;
                self.answer(self.store()?.claimable_routes(now))
            }
            "outboxRowState" => {
                let dispatch_key: String = a.next("dispatchKey")?;
                self.answer(self.store()?.outbox_row_state(&dispatch_key))
            }
            "listOutbox" => {
                let status: Option<OutboxStatus> = a.next("status")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_outbox(status, &page))
            }
            "getVisibility" => {
                let workflow_id: String = a.next("workflowId")?;
                self.answer(self.store()?.get_visibility(&workflow_id))
            }
            "listVisibility" => {
                let filter: VisibilityFilter = a.next_or_default("filter")?;
                let page_size: u32 = a.next("pageSize")?;
                let cursor: Option<String> = a.next("cursor")?;
                self.answer(
                    self.store()?
                        .list_visibility(&filter, page_size, cursor.as_deref()),
                )
            }
            "countVisibility" => {
                let filter: VisibilityFilter = a.next_or_default("filter")?;
                self.answer(self.store()?.count_visibility(&filter))
            }
            "getNamespace" => {
                let name: String = a.next("name")?;
                self.answer(self.store()?.get_namespace(&name))
            }
            "listNamespaces" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_namespaces(&page))
            }
            "getPackage" => {
                let workflow_type: String = a.next("workflowType")?;
                let content_hash: String = a.next("contentHash")?;
                self.answer(self.store()?.get_package(&workflow_type, &content_hash))
            }
            "listPackages" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_packages(&page))
            }
            "listPackageRoutes" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_package_routes(&page))
            }
            "getPackageRoute" => {
                let workflow_type: String = a.next("workflowType")?;
                self.answer(self.store()?.get_package_route(&workflow_type))
            }
            "loadEffect" => {
                let effect_id: String = a.next("effectId")?;
                self.answer(self.store()?.load_effect(&effect_id))
            }
            "findEffect" => {
                let capability_id: String = a.next("capabilityId")?;
                let idempotency_key: String = a.next("idempotencyKey")?;
                self.answer(self.store()?.find_effect(&capability_id, &idempotency_key))
            }
            "listUnresolvedEffects" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_unresolved_effects(&page))
            }
            "listEffects" => {
                let status: Option<EffectStatusKind> = a.next("status")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_effects(status, &page))
            }
            "readRunEvents" => {
                let run_id: String = a.next("runId")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.read_run_events(&run_id, &page))
            }
            "listRunIds" => {
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_run_ids(&page))
            }
            "getArtifact" => {
                let scope: String = a.next("scope")?;
                let artifact_id: String = a.next("artifactId")?;
                self.answer(self.store()?.get_artifact(&scope, &artifact_id))
            }
            "listArtifacts" => {
                let scope: String = a.next("scope")?;
                let page: PageRequest = a.next_or_default("page")?;
                self.answer(self.store()?.list_artifacts(&scope, &page))
            }
            "loadConversation" => {
                let conversation_id: String = a.next("conversationId")?;
                self.answer(self.store()?.load_conversation(&conversation_id))
            }
            other => Err(Error::invalid(
                "method",
                format!("{} is not a read", crate::error::clip(other)),
            )),
        }
    }

    /// A read's result as its answer (see [`RunStoreCore::call`]).
    fn answer<T: serde::Serialize>(&self, result: Result<T>) -> Result<JsValue> {
        result
            .map_err(|e| self.full_if_short(e))
            .and_then(|value| to_js(&value))
    }
}

// Their declarations, merged into the class's.
#[wasm_bindgen(typescript_custom_section)]
const READ_METHOD_TYPES: &str = r#"
export interface RunStoreCore {
    /**
     * A page of the workflow ids with events.
     */
    listWorkflowIds(page?: PageRequest): Page<string>;
    /**
     * A page of the ids of workflows whose status is not terminal.
     */
    listActive(page?: PageRequest): Page<string>;
    /**
     * A page of the ids of paused workflows.
     */
    listPaused(page?: PageRequest): Page<string>;
    /**
     * The projected status of one workflow; NOT_FOUND when it has no events.
     */
    workflowSummary(workflowId: string): WorkflowSummary;
    /**
     * A page of the workflow summaries matching the query, newest start first.
     */
    queryWorkflows(query?: WorkflowQuery, page?: PageRequest): Page<WorkflowSummary>;
    /**
     * The runs of a workflow in continue-as-new order.
     */
    readRunChain(workflowId: string): RunSummary[];
    /**
     * The first stored event this code cannot decode, or null.
     */
    findUndecodableEvent(): UndecodableEvent | null;
    /**
     * A page of the timers due at `asOf`, by fire time.
     */
    dueTimers(asOf: number, page?: PageRequest): Page<Timer>;
    /**
     * A page of the timers, by fire time.
     */
    listTimers(page?: PageRequest): Page<Timer>;
    /**
     * A page of the rows claimed before `olderThan`, unchanged.
     */
    listStaleClaims(olderThan: number, page?: PageRequest): Page<OutboxRow>;
    /**
     * A page of the ids of workflows with pending or claimed rows.
     */
    listUnsettledWorkflows(page?: PageRequest): Page<string>;
    /**
     * In-flight and claimed counts per namespace, in one pass.
     */
    namespaceLoads(namespaces: string[]): Record<string, NamespaceLoad>;
    /**
     * Routes with rows due at `now`.
     */
    claimableRoutes(now: number): ClaimScope[];
    /**
     * One row's state, or null.
     */
    outboxRowState(dispatchKey: string): OutboxRowState | null;
    /**
     * A page of the rows in a status (all when null), by key.
     */
    listOutbox(status: OutboxStatus | null, page?: PageRequest): Page<OutboxRow>;
    /**
     * One record, or null.
     */
    getVisibility(workflowId: string): VisibilityRecord | null;
    /**
     * A page of records matching the filter, newest start first.
     */
    listVisibility(filter: VisibilityFilter, pageSize: number, cursor?: string | null): VisibilityPage;
    /**
     * How many records match the filter.
     */
    countVisibility(filter?: VisibilityFilter): number;
    /**
     * One namespace, or null.
     */
    getNamespace(name: string): NamespaceRecord | null;
    /**
     * A page of the namespaces, oldest first.
     */
    listNamespaces(page?: PageRequest): Page<NamespaceRecord>;
    /**
     * One package, or null.
     */
    getPackage(workflowType: string, contentHash: string): PackageRecord | null;
    /**
     * A page of the packages' metadata in deploy order; `getPackage` reads an archive.
     */
    listPackages(page?: PageRequest): Page<PackageMeta>;
    /**
     * A page of the routes, by type.
     */
    listPackageRoutes(page?: PageRequest): Page<PackageRoute>;
    /**
     * The hash a type is routed to, or null.
     */
    getPackageRoute(workflowType: string): string | null;
    /**
     * One effect record, or null.
     */
    loadEffect(effectId: string): EffectRecord | null;
    /**
     * The effect holding an idempotency key of a capability, or null.
     */
    findEffect(capabilityId: string, idempotencyKey: string): EffectRecord | null;
    /**
     * A page of the effects left started or outcome-unknown, to reconcile after a crash.
     */
    listUnresolvedEffects(page?: PageRequest): Page<EffectRecord>;
    /**
     * A page of the effects in a status (all when null), by id.
     */
    listEffects(status: EffectStatusKind | null, page?: PageRequest): Page<EffectRecord>;
    /**
     * A page of a run's events in sequence order.
     */
    readRunEvents(runId: string, page?: PageRequest): Page<RunEvent>;
    /**
     * A page of the run ids with events.
     */
    listRunIds(page?: PageRequest): Page<string>;
    /**
     * An artifact with its bytes, digest verified (CORRUPT on mismatch).
     */
    getArtifact(scope: string, artifactId: string): Artifact;
    /**
     * A page of the artifacts of a scope, without bytes.
     */
    listArtifacts(scope: string, page?: PageRequest): Page<ArtifactMeta>;
    /**
     * A conversation's state, or null.
     */
    loadConversation(conversationId: string): ConversationState | null;
}
"#;
