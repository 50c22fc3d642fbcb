// The workflow runner. Each workflow is driven by one loop that decides its next step from its
// state (a fold of its journal) and records what it did as one step of the store
// (`store.commit`): the journal events under the expected head, with the outbox rows, timer,
// artifact, checkpoint and visibility record that go with them, all in one transaction. Two
// runners can never both advance one workflow: the second gets SEQUENCE_CONFLICT, re-reads the
// journal and decides again; and a reload can never find the journal ahead of the rest.
//
// Everything it needs to continue lives in the store: the journal, the outbox, the timers, the
// effect ledger, checkpoints. On load, `start` recovers (interrupted effects, stale outbox
// claims) and resumes every workflow that `listActive` reports.
//
// Each workflow runs in the browser profile that started it (its `origin`): a workflow pulled
// from a sync server (another profile's) is only shown, with a visibility record of its own
// journal, and never advanced here, so no effect is performed in two profiles.

import { readAll } from './pages.js';
import { Dispatcher } from './dispatcher.js';
import { markInterruptedEffects, performOnce } from './effects.js';
import { apply, currentStep, custom, emptyState, replay } from './journal.js';
import { WORKFLOWS, callTool, newWorkflowId } from './workflows.js';

const encoder = new TextEncoder();
const TIMER_POLL_MS = 200;

export class Runner {
  #store;
  #driving = new Set();
  /** Workflows whose journal changed while they were driven or shown. */
  #changedMeanwhile = new Set();
  #waiters = new Map();
  #dueTimers = new Set();
  #onChange;
  /** What the last `start` found and did, for the page to show. */
  recovery = null;
  /** Errors that stopped a workflow's loop, by workflow id. */
  errors = new Map();

  constructor(store, { pageLoad, origin, onChange = () => {} }) {
    this.#store = store;
    this.pageLoad = pageLoad;
    this.origin = origin;
    this.#onChange = onChange;
    this.dispatcher = new Dispatcher(store, { onSettled: (workflowId) => this.#wake(workflowId) });
  }

  /** Whether this tab runs the workflows: only the store's leader tab does. */
  running = false;

  async start() {
    if (this.running) return;
    this.running = true;
    const store = this.#store;
    const interrupted = await markInterruptedEffects(store);
    // Only the leader tab runs workflows, so every claim in the outbox was made by a leader
    // that is gone: its activities go back to pending (their effects say what they had done).
    const now = Date.now();
    const rearmed = await store.rearmStaleClaims(now + 1, now, 1000);
    const active = await readAll((page) => store.listActive(page));
    this.recovery = { interrupted, rearmed: rearmed.length, resumed: active.length };
    this.dispatcher.start();
    this.#pollTimers();
    for (const id of active) this.#drive(id, { recovering: true });
  }

  async startWorkflow(type) {
    const def = WORKFLOWS[type];
    const n = await this.#store.countVisibility({ workflowType: type });
    const id = newWorkflowId(type);
    const started = { type: 'started', workflowType: type, runId: crypto.randomUUID(), data: { input: def.input(n), origin: this.origin } };
    await this.#append(emptyState(id), [started]);
    // Another tab leads: its runner adopts the workflow when it hears of the commit.
    if (this.running) this.#drive(id, { recovering: false });
    return id;
  }

  /** Drives the given workflows (ones another tab started) unless they are driven already or done. */
  adopt(ids) {
    if (!this.running) return;
    for (const id of ids) this.#drive(id, { recovering: false });
  }

  /** Stops driving: this tab is no longer the leader. */
  stop() {
    this.running = false;
    this.dispatcher.stop();
  }

  async #drive(id, { recovering }) {
    if (this.#driving.has(id)) {
      this.#changedMeanwhile.add(id);
      return;
    }
    this.#driving.add(id);
    try {
      let s = await this.#load(id);
      // Another profile's workflow: shown as far as its journal here goes, again after each
      // change that came while it was being shown (the last one may be its completion).
      while (s.origin !== null && s.origin !== this.origin) {
        this.#changedMeanwhile.delete(id);
        await this.#show(s);
        if (!this.#changedMeanwhile.has(id)) return;
        s = await this.#load(id);
      }
      if (recovering && s.status === 'running') {
        s = await this.#append(s, [custom('recovered', { pageLoad: this.pageLoad, ...s.resumedFrom })]);
      }
      while (s.status === 'running' && this.running) {
        try {
          s = await this.#advance(s);
        } catch (error) {
          if (error.code !== 'SEQUENCE_CONFLICT') throw error;
          s = await this.#load(id); // another runner advanced it: decide again from the journal
        }
      }
    } catch (error) {
      this.errors.set(id, error);
      console.error(`workflow ${id} stopped:`, error);
    } finally {
      this.#driving.delete(id);
      this.#changedMeanwhile.delete(id);
      this.#onChange();
    }
  }

  /** Records the visibility of another profile's workflow, as far as its journal here goes. */
  async #show(s) {
    if (s.status === 'pending') return;
    try {
      await this.#store.commit({ operations: [{ op: 'upsertVisibility', record: this.#visibility(s) }] });
    } catch (error) {
      // CONFLICT: a record of a later head is there already (a later pull showed it first).
      if (error.code !== 'CONFLICT') throw error;
    }
  }

  /** The workflow's state: its checkpoint, then the journal events recorded after it. */
  async #load(id) {
    const store = this.#store;
    let checkpoint = null;
    try {
      checkpoint = await store.loadCheckpoint(`${id}/state`);
    } catch (error) {
      if (error.code !== 'NOT_FOUND') throw error;
    }
    const base = checkpoint ? structuredClone(checkpoint.state) : emptyState(id);
    const tail = await readAll((page) => store.readHistoryFrom(id, base.head + 1, page));
    const s = replay(base, tail);
    s.checkpointRevision = checkpoint?.revision ?? null;
    s.resumedFrom = { checkpointRevision: s.checkpointRevision, checkpointSeq: checkpoint?.state.head ?? 0, replayed: tail.length };
    return s;
  }

  async #advance(s) {
    const step = currentStep(s);
    if (!step) return this.#append(s, [{ type: 'completed', data: null }]);
    switch (step.kind) {
      case 'tool':
        return this.#tool(s, step);
      case 'activities':
        return this.#activities(s, step);
      case 'timer':
        return this.#timer(s, step);
      case 'artifact':
        return this.#artifact(s, step);
      default:
        throw new Error(`unknown step kind ${step.kind}`);
    }
  }

  async #tool(s, step) {
    const key = `${s.id}/${step.id}`;
    let result;
    try {
      result = await performOnce(this.#store, { capability: step.tool, key, request: step.args(s) }, (args) =>
        callTool(step.tool, key, args),
      );
    } catch (error) {
      if (error.code) throw error; // the store's, not the tool's
      return this.#append(s, [{ type: 'failed', reason: `${step.tool}: ${error.message}`, data: { step: step.id } }]);
    }
    const { output, issued, reconciled } = result;
    return this.#append(s, [custom('toolCalled', { step: step.id, tool: step.tool, key, output, issued, reconciled })]);
  }

  async #activities(s, step) {
    const store = this.#store;
    const scheduled = s.activities[step.id];
    if (!scheduled) {
      const list = step.activities(s).map((a) => ({
        name: a.name,
        type: a.type,
        key: `${s.id}/${step.id}/${a.name}`,
        optional: a.optional ?? false,
        input: a.input,
      }));
      const rows = list.map((a, i) => ({
        dispatchKey: a.key,
        workflowId: s.id,
        ordinal: s.activityCount + i,
        activityType: a.type,
        input: encoder.encode(JSON.stringify(a.input)),
        visibleAfter: Date.now(),
        runId: s.runId,
        namespace: 'demo',
        taskQueue: 'activities',
      }));
      const activities = list.map(({ input, ...a }) => a);
      return this.#append(s, [custom('activitiesScheduled', { step: step.id, activities })], { outbox: rows });
    }
    const events = [];
    for (const a of scheduled.filter((x) => !x.settled)) {
      const row = await store.outboxRowState(a.key);
      if (row?.status !== 'done' && row?.status !== 'failed') continue;
      const effect = await store.findEffect(a.type, a.key);
      const base = { step: step.id, name: a.name, type: a.type, key: a.key, attempts: row.attempt + 1 };
      if (row.status === 'done') {
        events.push(custom('activityCompleted', { ...base, output: effect.status.output }));
      } else {
        events.push(custom('activityDeadLettered', { ...base, error: effect?.status.error ?? row.deadReason ?? 'unknown', optional: a.optional }));
        if (!a.optional) {
          events.push({ type: 'failed', reason: `${a.type} dead-lettered`, data: { step: step.id } });
          break;
        }
      }
    }
    if (events.length) return this.#append(s, events);
    await this.#wait(s.id, 1000);
    return s;
  }

  async #timer(s, step) {
    const timer = s.timers[step.id];
    const target = { workflowId: s.id, timerId: step.id };
    if (!timer) {
      const fireAt = Date.now() + step.ms;
      return this.#append(s, [custom('timerStarted', { step: step.id, timerId: step.id, fireAt, why: step.why })], {
        operations: [{ op: 'scheduleTimer', ...target, fireAt }],
      });
    }
    if (!this.#dueTimers.has(`${s.id} ${step.id}`)) {
      await this.#wait(s.id, 1000);
      return s;
    }
    return this.#append(s, [custom('timerFired', { step: step.id, timerId: step.id, lateMs: Date.now() - timer.fireAt })], {
      operations: [{ op: 'cancelTimer', ...target }],
    });
  }

  /** The artifact and the event that records it commit together; the event names it by digest. */
  async #artifact(s, step) {
    const bytes = encoder.encode(step.content(s));
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    const sha256 = [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
    const output = { name: step.name, sizeBytes: bytes.length, sha256 };
    const artifact = { scope: s.id, mediaType: step.mediaType, name: step.name, bytes, idempotencyKey: `${s.id}/${step.id}` };
    return this.#append(s, [custom('artifactStored', { step: step.id, output })], {
      operations: [{ op: 'putArtifact', artifact, now: Date.now() }],
    });
  }

  /**
   * Records one step of the workflow in one commit: `events` appended under the state's head
   * with their `outbox` rows, the step's own `operations` (timers, artifacts), then the checkpoint of the
   * state those events lead to and its visibility record. Returns that state; on any error
   * nothing was written and `s` is unchanged.
   */
  async #append(s, events, { outbox = [], operations = [] } = {}) {
    const stamped = events.map((e) => ({ ...e, recordedAt: Date.now() }));
    const next = structuredClone(s);
    stamped.forEach((e, i) => apply(next, { ...e, seq: s.head + 1 + i }));
    const expected = s.checkpointRevision;
    next.checkpointRevision = expected == null ? 0 : expected + 1;
    await this.#store.commit({
      operations: [
        { op: 'append', workflowId: s.id, events: stamped, expectedSeq: s.head, outbox },
        ...operations,
        { op: 'compareAndSwapCheckpoint', checkpoint: this.#checkpoint(next), expectedRevision: expected },
        { op: 'upsertVisibility', record: this.#visibility(next) },
      ],
    });
    this.#onChange();
    return next;
  }

  #checkpoint(s) {
    const { checkpointRevision: revision, resumedFrom, ...state } = s;
    return { checkpointId: `${s.id}/state`, runId: s.runId, revision, state, updatedAt: Date.now() };
  }

  #visibility(s) {
    const def = WORKFLOWS[s.type];
    const step = currentStep(s);
    const waitingOn = s.status !== 'running' ? null : step?.kind === 'timer' && s.timers[step.id] ? 'timer' : step?.kind === 'activities' && s.activities[step.id] ? 'activities' : step?.kind ?? null;
    return {
      workflowId: s.id,
      runId: s.runId,
      workflowType: s.type,
      status: s.status,
      startTime: s.startedAt,
      closeTime: s.closedAt,
      failedStep: s.failedStep,
      failureReason: s.failureReason,
      // The journal head this record reflects: a late upsert of an older state is refused.
      head: s.head,
      searchAttributes: {
        subject: def.describe(s.input),
        step: step?.id ?? 'done',
        waitingOn,
        stepsDone: Object.keys(s.done).length,
        steps: def.steps.length,
        deadLetters: s.deadLetters,
        recoveries: s.recoveries,
      },
    };
  }

  #pollTimers() {
    const tick = async () => {
      try {
        const now = Date.now();
        const due = await readAll((page) => this.#store.dueTimers(now, page));
        this.#dueTimers = new Set(due.map((t) => `${t.workflowId} ${t.timerId}`));
        for (const t of due) this.#wake(t.workflowId);
      } catch (error) {
        console.error('timer poll failed:', error);
      }
      if (this.running) setTimeout(tick, TIMER_POLL_MS);
    };
    tick();
  }

  #wait(id, ms) {
    return new Promise((resolve) => {
      const waiters = this.#waiters.get(id) ?? new Set();
      this.#waiters.set(id, waiters);
      const done = () => {
        clearTimeout(timeout);
        waiters.delete(done);
        resolve();
      };
      const timeout = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  #wake(id) {
    for (const done of [...(this.#waiters.get(id) ?? [])]) done();
  }
}
