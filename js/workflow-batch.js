// What one turn of a live run writes, as entries: each a journal event with the operations
// that go with it (a step's ledger record, a timer, a consumed inbox row, a child's start).
// It is committed as one step of the store: the events appended under the run's head, the
// entries' operations, the run's visibility record. A batch too large for one step (a
// Promise.all of hundreds of steps) goes in several, cut between entries: each part holds
// whole entries, so a run that stopped between two parts replays as if its code had issued
// only the first part's commands so far, and issues the rest again. The run's visibility
// record, as of the new head, goes in the last part when the run says it is due
// (`visibility(head)` gives it, or null).

/** What one commit may carry, below the store's 1,000 operations per step. */
const MAX_EVENTS = 400;
const MAX_OPERATIONS = 900;

export class Batch {
  #run;
  #entries = [];
  /** How many entries have landed (a batch committed in parts). */
  #landed = 0;
  /** The operations of the part being committed: index → entry (null for the append and visibility). */
  #owners = [];
  #after = [];

  constructor(run) {
    this.#run = run;
  }

  get empty() {
    return this.#entries.length === this.#landed;
  }

  /** Adds entries, one per event; returns the last. */
  add(...events) {
    let entry = null;
    for (const event of events) {
      entry = { event, ops: [], refuse: null };
      this.#entries.push(entry);
    }
    return entry;
  }

  /** Adds operations to the last entry. */
  stage(ops) {
    const entry = this.#entries.at(-1);
    if (!entry) throw new Error('an operation was staged before any event');
    entry.ops.push(...ops);
  }

  /**
   * Lets the last entry be refused: when the store refuses one of its operations, `refuse(error)`
   * gives what replaces the entry (`{ event, ops }`, from the error and the entry), or null to fail the commit.
   */
  refusable(refuse) {
    this.#entries.at(-1).refuse = refuse;
  }

  after(action) {
    this.#after.push(action);
  }

  /**
   * Commits every entry not landed yet, in parts if it must; resolves to the run's new head.
   * On failure the entries that landed stay landed, and `refuse` says whether the commit can
   * go again.
   */
  async commit(head, visibility) {
    const run = this.#run;
    while (this.#landed < this.#entries.length) {
      const part = this.#nextPart();
      const events = part.map((entry) => entry.event);
      const operations = [{ op: 'append', workflowId: run.workflowId, events, expectedSeq: head }];
      this.#owners = [null];
      for (const entry of part) {
        for (const op of entry.ops) {
          operations.push(op);
          this.#owners.push(entry);
        }
      }
      const last = this.#landed + part.length === this.#entries.length;
      const record = last ? visibility(head + events.length) : null;
      if (record) operations.push({ op: 'upsertVisibility', record });
      // No request id of its own: the expected head refuses a second application, and where a
      // commit can be sent again (a shared store's hand-off) the client gives it one.
      await run.commitStep({ operations });
      head += events.length;
      this.#landed += part.length;
    }
    return head;
  }

  #nextPart() {
    const part = [];
    let events = 0;
    let ops = 1;
    for (const entry of this.#entries.slice(this.#landed)) {
      if (part.length > 0 && (events + 1 > MAX_EVENTS || ops + entry.ops.length > MAX_OPERATIONS)) break;
      part.push(entry);
      events++;
      ops += entry.ops.length;
    }
    return part;
  }

  /** After a failed commit: replaces the entry whose operation the store refused, if it may be; returns whether it was. */
  refuse(error) {
    const entry = Number.isSafeInteger(error?.operation) ? this.#owners[error.operation] : null;
    const replacement = entry?.refuse?.(error, entry);
    if (!replacement) return false;
    Object.assign(entry, replacement, { refuse: null });
    return true;
  }

  /** Runs what waited for the batch to land. */
  landed() {
    for (const action of this.#after) action();
  }
}
