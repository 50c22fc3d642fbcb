// What this tab took over when it became the leader, for the page's banner: the unfinished
// workflows its engine resumed and the durable timers it armed again, then, as the engine goes
// on, what it found cut off in those runs. The engine records no event for a resume itself;
// its signs are the events it records after it: a step run again under the same key (a
// `stepAttempt` after no failed attempt), a `once` step that throws OUTCOME_UNKNOWN instead.

import { foldRun, runsHere, startedOf } from './history.js';
import { html } from './html.js';
import { readAll } from './pages.js';

export class Recovery {
  #store;
  /** When this tab became the leader (0 until it does): the events after it are this engine's. */
  since = 0;
  /** The workflows left running when it did, and their durable timers. */
  active = [];
  #timers = [];
  /** LangGraph threads resumed from their last checkpoint. */
  threads = 0;

  constructor(store) {
    this.#store = store;
  }

  /** Notes what is unfinished. Called as this tab becomes the leader, before its engine records anything. */
  async begin() {
    this.since = Date.now();
    this.active = await readAll((page) => this.#store.listActive(page));
    this.#timers = await readAll((page) => this.#store.listTimers(page));
  }

  /**
   * `{ runs, timers, reruns, unknown, threads }`: the workflows of this device that were resumed,
   * their timers armed again, the steps run again (`{ workflowId, step, attempt }`), the once-steps
   * found cut off (`{ workflowId, step }`), and the LangGraph threads resumed.
   */
  async summary(engine) {
    const runs = [];
    for (const id of this.active) if (runsHere(engine, await startedOf(this.#store, id))) runs.push(id);
    const reruns = [];
    const unknown = [];
    for (const workflowId of runs) {
      const events = await readAll((page) => this.#store.readHistory(workflowId, page));
      const run = foldRun(events);
      for (const e of events) {
        const note = e.recordedAt >= this.since ? run.notes.get(e.seq) : null;
        const step = run.commands.get(e.data?.n)?.name;
        if (note?.rerun) reruns.push({ workflowId, step, attempt: e.data.attempt });
        if (note?.unknown) unknown.push({ workflowId, step });
      }
    }
    const timers = this.#timers.filter((t) => runs.includes(t.workflowId)).length;
    return { runs, timers, reruns, unknown, threads: this.threads };
  }
}

const count = (n, one) => `${n} ${n === 1 ? one : `${one}s`}`;
const term = (text, why) => html`<span class="term" title="${why}">${text}</span>`;
const REARMED = 'Timers live in the store: each one that had not fired was set again in this tab, and fires at its time, never early.';
const RERUN = 'The page went while the step ran, before its result was recorded: the engine ran it again with the next attempt number and the same idempotency key, which the service keeps once.';
const UNKNOWN = 'The page went while a once-step (one never run twice) was running: it may or may not have done its work. The engine does not run it again; the workflow gets OUTCOME_UNKNOWN and decides.';

/** What `summary` found, in a line whose terms explain themselves; null when nothing was left running. */
export function describeRecovery({ runs, timers, reruns, unknown, threads }) {
  const parts = [];
  if (runs.length) parts.push(html`${count(runs.length, 'unfinished workflow')} resumed from ${runs.length === 1 ? 'its journal' : 'their journals'}`);
  if (timers) parts.push(html`${count(timers, 'durable timer')} ${term('re-armed', REARMED)}`);
  if (reruns.length) {
    const which = reruns.map((r) => `${r.step} attempt ${r.attempt}`).join(', ');
    parts.push(html`${count(reruns.length, 'step')} ${term('run again', RERUN)} under the same key (${which})`);
  }
  if (unknown.length) {
    const which = unknown.map((u) => u.step).join(', ');
    parts.push(html`${count(unknown.length, 'once-step')} ${term('outcome unknown', UNKNOWN)}, not run again (${which})`);
  }
  if (threads) parts.push(html`${count(threads, 'LangGraph thread')} resumed from ${threads === 1 ? 'its' : 'their'} last checkpoint`);
  return parts.length ? html`${parts.map((part, i) => html`${i ? ' · ' : ''}${part}`)}` : null;
}
