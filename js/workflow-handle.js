// A workflow as its callers hold it: by id, from any tab, worker or process.

export class WorkflowHandle {
  #engine;

  constructor(engine, workflowId) {
    this.#engine = engine;
    this.workflowId = workflowId;
  }

  /** Resolves to the workflow's result once it completed (see WorkflowEngine#result). */
  result(options) {
    return this.#engine.result(this.workflowId, options);
  }

  /** Where the workflow stands (see WorkflowEngine#describe). */
  describe() {
    return this.#engine.describe(this.workflowId);
  }

  /** Sends it signal `name` (see WorkflowEngine#signal). */
  signal(name, payload, options) {
    return this.#engine.signal(this.workflowId, name, payload, options);
  }

  /** Runs it again after its last run failed or was cancelled (see WorkflowEngine#retry). */
  retry(options) {
    return this.#engine.retry(this.workflowId, options);
  }

  /** Asks it to cancel (see WorkflowEngine#cancel). */
  cancel(options) {
    return this.#engine.cancel(this.workflowId, options);
  }
}
