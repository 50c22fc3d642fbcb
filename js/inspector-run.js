// One workflow: its visibility record, its journal read in order (and then only what was
// appended since), the last run folded into its commands (a timeline, then each step with its
// attempts and its effect-ledger record), the journal's events one per line, its result, its
// artifacts (the scope named after the workflow) and its run's checkpoints.
import { describeEvent, eventKind, eventLabel } from './inspector-events.js';
import { effectKey, eventName, foldRun } from './inspector-fold.js';
import { bytes, clock, duration, html, iso, json, pill, textOf } from './inspector-html.js';
import { EFFECT_WHY, effectPill } from './inspector-ledger.js';
import { timeline } from './inspector-timeline.js';

/** Events listed at first; the rest on asking (a long journal's list would be slow to draw). */
const EVENTS_SHOWN = 500;
/** Artifacts whose text is shown, up to this size. */
const PREVIEW_BYTES = 16 * 1024;

/**
 * Whether this store's engine may run the workflow: runstore/workflow's origin rule, or, for an
 * engine with leases, any run (it takes the run's lease, or refuses a message with CONFLICT).
 */
export const runsHere = (engine, started) => {
  if (engine?.usesLeases) return true;
  const origin = started?.data?.origin ?? null;
  return origin === null || origin === engine?.device;
};

export class RunView {
  #ctx;
  #el;
  #id = null;
  #state = null;
  #allEvents = false;

  constructor(ctx, element) {
    this.#ctx = ctx;
    this.#el = element;
  }

  get workflowId() {
    return this.#id;
  }

  /** What the view shows now (for an export of the run). */
  get state() {
    return this.#state;
  }

  /** Shows workflow `id` (null: none). */
  async show(id) {
    if (id !== this.#id) {
      this.#id = id;
      this.#state = null;
      this.#allEvents = false;
    }
    return this.refresh();
  }

  showAllEvents() {
    this.#allEvents = true;
    this.render();
  }

  /** Whether `change` (a store notice) concerns the workflow shown. */
  concerns(change) {
    const id = this.#id;
    if (!id) return false;
    if (change.workflowIds.includes(id)) return true;
    if (change.revisions.some((r) => r.id.startsWith(`${id}/`))) return true;
    return change.areas.includes('artifacts') || change.areas.includes('checkpoints') || (change.areas.includes('effects') && !change.revisions.length);
  }

  /** Reads what changed of the workflow shown, and draws it. */
  async refresh() {
    const id = this.#id;
    if (!id) return this.render();
    const state = await read(this.#ctx.store, id, this.#state?.id === id ? this.#state : null);
    if (id !== this.#id) return undefined;
    this.#state = state;
    return this.render();
  }

  render() {
    this.#ctx.put(this.#el, String(this.#markup(Date.now())));
  }

  #markup(now) {
    const s = this.#state;
    if (!this.#id) return html`<p class="empty">Select a workflow to see its timeline, steps and journal.</p>`;
    if (!s) return html`<p class="empty">Reading <code>${this.#id}</code>…</p>`;
    if (!s.record && !s.events.length) return html`<p class="empty">No workflow <code>${this.#id}</code> in this store (purged, or not started).</p>`;
    const r = s.record ?? {};
    const run = s.run;
    const status = r.status ?? run?.status ?? 'unknown';
    const engine = this.#ctx.engine;
    const mine = engine && runsHere(engine, run?.started);
    const open = status === 'running' || status === 'pending' || status === 'blocked';
    const write = !this.#ctx.readOnly && engine && mine && open;
    const again = !this.#ctx.readOnly && engine?.retry && mine && (status === 'failed' || status === 'cancelled');
    const actions = html`<div class="actions">
      ${write ? html`<button type="button" data-action="signal" data-arg="${this.#id}">Signal…</button>
        <button type="button" data-action="cancel" data-arg="${this.#id}">Cancel…</button>` : ''}
      ${again ? html`<button type="button" data-action="retry" data-arg="${this.#id}">Run again…</button>` : ''}
      <button type="button" data-action="export-run" data-arg="${this.#id}">Export JSON…</button></div>`;
    const start = r.startTime ?? run?.start;
    const end = r.closeTime ?? run?.end;
    return html`
      <header class="run-head">
        <h2><span class="type">${r.workflowType ?? run?.started.workflowType}</span> <code data-run-id="${this.#id}">${this.#id}</code> ${pill(status)}</h2>
        ${actions}
      </header>
      <p class="meta">run <code>${r.runId ?? run?.started.runId}</code> · started <time title="${iso(start)}">${clock(start, now)}</time> ·
        ${end ? html`took ${duration(end - start)}` : html`running for ${duration(now - start)}`} · journal head ${s.head}
        ${engine && run && !mine ? html` · <span class="badge" title="started on another device, which runs it; pulled here by sync">another device's</span>` : ''}
        ${this.#ctx.store?.server ? html` · <span class="badge" data-server-copy title="the server holds journals only: effect-ledger records, artifacts and checkpoints stay on the device that runs it">the server's journal</span>` : ''}
        ${r.failureReason ? html` · <span class="bad">${r.failedStep ? `${r.failedStep}: ` : ''}${r.failureReason}</span>` : ''}</p>
      ${run ? html`<h3>Timeline</h3>${timeline(run, now)}<h3>Steps <small>each with its effect-ledger record</small></h3>${this.#steps(run, s.effects, now)}` : ''}
      <h3>Journal <small>${s.events.length} events, in order</small></h3>${this.#events(s, run)}
      <div class="pair">
        <div><h3>Input</h3><pre class="json">${json(run?.started.data?.input)}</pre>
          <h3>Result</h3>${run && run.status !== 'running' ? html`<pre class="json">${json(run.error ?? run.result ?? null)}</pre>` : html`<p class="empty">not yet</p>`}</div>
        <div>${this.#artifacts(s)}${this.#checkpoints(s)}</div>
      </div>`;
  }

  #steps(run, effects, now) {
    const rows = [...run.commands.values()].map((c) => {
      const effect = c.kind === 'step' ? effects.get(c.name) : null;
      const due = c.status === 'retrying' ? c.retryAt : c.kind === 'sleep' && c.status === 'waiting' ? c.fireAt : null;
      const tries = c.kind === 'step' ? [`${c.attempt}`, c.retries && `${c.retries} retried`, c.restarts && `${c.restarts} re-run after a restart`].filter(Boolean).join(' · ') : '';
      const why = c.status === 'outcomeUnknown' ? EFFECT_WHY.outcomeUnknown : '';
      return html`<tr data-step="${c.name}" data-step-status="${c.status}" data-attempts="${c.attempt ?? ''}">
        <td><span class="kind ${c.kind}">${c.kind}</span></td><td class="key"><code>${c.name}</code></td>
        <td>${pill(c.status, c.status === 'outcomeUnknown' ? 'outcome unknown' : c.status, why)}${due ? ` due in ${duration(Math.max(0, due - now))}` : ''}</td>
        <td class="wrap">${tries}${c.error && c.status !== 'done' ? html` <span class="dim">${c.error.message ?? ''}</span>` : ''}</td>
        <td>${effect === undefined ? '' : effect ? effectPill(effect) : html`<span class="dim">none</span>`}</td></tr>`;
    });
    if (!rows.length) return html`<p class="empty">no steps, timers or waits yet</p>`;
    return html`<div class="scroll-x"><table class="steps"><thead><tr><th></th><th>name</th><th>status</th><th title="attempts begun, the first included">attempts</th><th>ledger</th></tr></thead>
      <tbody>${rows}</tbody></table></div>`;
  }

  #events(s, run) {
    const shown = this.#allEvents ? s.events : s.events.slice(0, EVENTS_SHOWN);
    const start = s.events[0]?.recordedAt ?? 0;
    const rows = shown.map((e) => {
      const note = run?.notes.get(e.seq);
      return html`<tr class="ev ${eventKind(e, note)}" data-event="${eventName(e)}">
        <td class="num">${e.seq}</td><td class="num" title="${iso(e.recordedAt)}">+${duration(e.recordedAt - start)}</td>
        <td><span class="kind ${eventKind(e, note)}">${eventLabel(e, note)}</span></td><td class="what">${describeEvent(e, run)}</td></tr>`;
    });
    const more = s.events.length > shown.length
      ? html`<button type="button" data-action="all-events">Show all ${s.events.length} events</button>` : '';
    return html`<div class="scroll-x"><table class="events"><tbody>${rows}</tbody></table></div>${more}`;
  }

  #artifacts(s) {
    if (!s.artifacts.length) return html`<h3>Artifacts</h3><p class="empty">none</p>`;
    const items = s.artifacts.map((a) => {
      const preview = s.previews.get(a.artifactId);
      return html`<div class="artifact" data-artifact="${a.name ?? a.artifactId}">
        <div><strong>${a.name ?? a.artifactId}</strong> <span class="dim">${a.mediaType} · ${bytes(a.sizeBytes)} · sha256 ${a.sha256.slice(0, 12)}…</span>
        <button type="button" class="small" data-action="download-artifact" data-scope="${a.scope}" data-arg="${a.artifactId}">Download</button></div>
        ${preview !== undefined && preview !== null ? html`<pre>${preview}</pre>` : ''}</div>`;
    });
    return html`<h3>Artifacts <small>scope <code>${this.#id}</code></small></h3>${items}`;
  }

  #checkpoints(s) {
    if (!s.checkpoints.length) return '';
    const items = s.checkpoints.map(
      (c) => html`<li><button type="button" class="link" data-action="open-checkpoint" data-arg="${c.checkpointId}"><code>${c.checkpointId}</code></button> revision ${c.revision} · ${clock(c.updatedAt)}</li>`,
    );
    return html`<h3>Checkpoints of the run</h3><ul class="plain">${items}</ul>`;
  }
}

/** Every page of a listing. */
async function all(read) {
  const items = [];
  let cursor = null;
  do {
    const page = await read({ limit: 1000, cursor });
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** Reads workflow `id`, from `before` on (the events it read are not read again). */
async function read(store, id, before) {
  const record = await store.getVisibility(id);
  let head = 0;
  try {
    head = (await store.workflowSummary(id)).head;
  } catch (error) {
    if (error?.code !== 'NOT_FOUND') throw error;
  }
  // A journal shorter than what was read was purged (and maybe written again): read it whole.
  const kept = before && head >= before.head ? before.events : [];
  const from = (kept.at(-1)?.seq ?? 0) + 1;
  const events = head >= from ? [...kept, ...(await all((page) => store.readHistoryFrom(id, from, page)))] : kept;
  const run = foldRun(events);
  const runId = run?.started.runId ?? record?.runId ?? null;
  const effects = new Map();
  for (const c of run?.commands.values() ?? []) {
    if (c.kind === 'step') effects.set(c.name, await store.loadEffect(effectKey(id, runId, c.name)));
  }
  const artifacts = await all((page) => store.listArtifacts(id, page));
  const previews = new Map(before?.previews ?? []);
  for (const a of artifacts) {
    if (previews.has(a.artifactId) || a.sizeBytes > PREVIEW_BYTES) continue;
    const media = a.mediaType.split(';')[0];
    if (!media.startsWith('text/') && !/json|xml|yaml|markdown/.test(media)) continue;
    previews.set(a.artifactId, textOf((await store.getArtifact(id, a.artifactId)).bytes));
  }
  const checkpoints = runId ? await all((page) => store.listRunCheckpoints(runId, page)) : [];
  return { id, record, head: head || events.length, events, run, effects, artifacts, previews, checkpoints };
}
