// The inspector: what the store holds, read back a few times a second. Workflows come from the
// visibility index the engine keeps (with its typed filters), a workflow's steps and timeline
// from its journal, and the timers, effect ledger and artifacts from their own tables. Every
// tab's inspector can approve and cancel; the leader tab's engine carries it out.

import { describeEvent, eventKind, eventLabel } from './describe.js';
import { eventName, foldRun, runsHere, startedOf } from './history.js';
import { html } from './html.js';
import { readAll } from './pages.js';
import { WORKFLOWS } from './workflows.js';
import { worldLedger } from './world.js';

const REFRESH_MS = 250;
const STATUSES = ['running', 'completed', 'failed', 'cancelled'];
const APPROVAL = 'wait approve';
const WAITING = { step: 'calling', sleep: 'timer', wait: 'waiting for signal', child: 'child' };
/** The ledger's states, in words short enough for a narrow column. */
const EFFECT_LABELS = { completed: 'done', started: 'running', outcomeUnknown: 'unknown', failed: 'failed', prepared: 'prepared' };
const EFFECT_WHY = {
  completed: 'its result is recorded: it is never run again',
  started: 'its body is running now',
  outcomeUnknown: 'the page went while this once-step ran: it may or may not have done its work, and is not run again',
  failed: 'its last attempt failed',
};

const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)}s`;
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
const pill = (status, label = status, why = '') => html`<span class="pill ${status}" title="${why}">${label}</span>`;
const title = (type) => WORKFLOWS[type]?.title ?? type;
const subject = (type, started) => (started && WORKFLOWS[type]?.describe(started.data.input)) ?? '';
const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** What a running workflow waits on, in words, from its visibility record (`step llm.plan`, `sleep cool-down`, `wait approve`). */
function waitingText(waiting) {
  if (!waiting) return 'running';
  if (waiting === APPROVAL) return 'waiting for approval';
  const [kind, name] = waiting.split(' ');
  return `${WAITING[kind] ?? kind} ${name}`;
}

export class Inspector {
  #root;
  #store;
  #engine;
  #selected = null;
  #filter = { status: null, type: null, approval: false };
  #busy = false;
  #again = false;
  #soon = null;
  #rendered = new Map();

  constructor(root, store, engine) {
    this.#root = root;
    this.#store = store;
    this.#engine = engine;
    root.addEventListener('click', (event) => this.#onClick(event).catch((error) => console.error(error)));
    root.addEventListener('change', (event) => this.#onChange(event));
  }

  /** Shows the cards once they have content (an empty card would flash first), then keeps them fresh. */
  async start() {
    await this.refresh();
    this.#root.hidden = false;
    setInterval(() => this.refresh(), REFRESH_MS);
  }

  select(workflowId) {
    this.#selected = workflowId;
    this.refresh();
  }

  refreshSoon() {
    clearTimeout(this.#soon);
    this.#soon = setTimeout(() => this.refresh(), 30);
  }

  async refresh() {
    if (this.#busy) {
      this.#again = true;
      return;
    }
    this.#busy = true;
    try {
      this.#render(await this.#snapshot());
    } catch (error) {
      console.error('inspector refresh failed:', error);
    } finally {
      this.#busy = false;
      if (this.#again) {
        this.#again = false;
        this.refresh();
      }
    }
  }

  #visibilityFilter() {
    const f = this.#filter;
    const search = f.approval ? [{ key: 'waiting', op: 'eq', value: APPROVAL }] : [];
    return { workflowType: f.type, statuses: f.status ? [f.status] : [], search };
  }

  async #snapshot() {
    const store = this.#store;
    const filter = this.#visibilityFilter();
    const page = await store.listVisibility(filter, 50, null);
    const total = await store.countVisibility({});
    const counts = {};
    for (const status of STATUSES) counts[status] = await store.countVisibility({ ...filter, statuses: [status] });
    const started = {};
    for (const r of page.records) started[r.workflowId] = await startedOf(store, r.workflowId);
    const timers = (await store.listTimers({ limit: 100 })).items;
    const effects = (await store.listEffects(null, { limit: 500 })).items;
    if (!this.#selected || !page.records.some((r) => r.workflowId === this.#selected)) {
      this.#selected = page.records[0]?.workflowId ?? null;
    }
    let detail = null;
    if (this.#selected) {
      const id = this.#selected;
      const events = await readAll((p) => store.readHistory(id, p));
      const artifacts = (await store.listArtifacts(id, { limit: 100 })).items;
      const previews = {};
      for (const a of artifacts) {
        const artifact = await store.getArtifact(id, a.artifactId); // verifies the digest
        previews[a.artifactId] = new TextDecoder().decode(artifact.bytes);
      }
      detail = { record: await store.getVisibility(id), events, run: foldRun(events), artifacts, previews };
    }
    return { now: Date.now(), page, total, counts, started, timers, effects, world: worldLedger(), detail };
  }

  #render(snap) {
    this.#put('workflows', this.#workflows(snap));
    this.#put('detail', this.#detail(snap));
    this.#put('timers', this.#timers(snap));
    this.#put('effects', this.#effects(snap));
  }

  /** Replaces a section only when its content changed, so scrolling and selection survive. */
  #put(id, fragment) {
    const content = String(fragment);
    if (this.#rendered.get(id) === content) return;
    this.#rendered.set(id, content);
    this.#root.querySelector(`#${id}`).innerHTML = content;
  }

  async #onClick(event) {
    const approve = event.target.closest('[data-approve]');
    if (approve) {
      approve.disabled = true;
      // One signal id per workflow: a second click (here or in another tab) is kept once.
      const id = approve.dataset.approve;
      return this.#engine.signal(id, 'approve', { by: 'the Approve button' }, { signalId: `approve/${id}` });
    }
    const cancel = event.target.closest('[data-cancel]');
    if (cancel) {
      cancel.disabled = true;
      return this.#engine.cancel(cancel.dataset.cancel, { reason: 'the Cancel button' });
    }
    const row = event.target.closest('[data-workflow-id]');
    if (row) return this.select(row.dataset.workflowId);
    const status = event.target.closest('[data-filter-status]');
    if (status) {
      this.#filter.status = status.dataset.filterStatus || null;
      this.refresh();
    }
  }

  #onChange(event) {
    const { name, value, checked } = event.target;
    if (name === 'type') this.#filter.type = value || null;
    if (name === 'approval') this.#filter.approval = checked;
    this.refresh();
  }

  #workflows({ page, total, counts, started }) {
    const f = this.#filter;
    const shown = STATUSES.reduce((n, s) => n + counts[s], 0);
    const tabs = [['', 'all', shown], ...STATUSES.map((s) => [s, s, counts[s]])].map(
      ([value, label, n]) =>
        html`<button class="tab ${(f.status ?? '') === value ? 'on' : ''}" data-filter-status="${value}">${label} <b>${n}</b></button>`,
    );
    const types = Object.entries(WORKFLOWS).map(
      ([type, def]) => html`<option value="${type}" ${f.type === type ? 'selected' : ''}>${def.title}</option>`,
    );
    const rows = page.records.map((r) => this.#workflowRow(r, started[r.workflowId]));
    return html`
      <h2>Workflows <small>${page.records.length} of ${total} · visibility index</small></h2>
      <div class="tabs">${tabs}</div>
      <div class="filters">
        <select name="type"><option value="">every type</option>${types}</select>
        <label title="search attribute waiting = '${APPROVAL}'"><input type="checkbox" name="approval" ${f.approval ? 'checked' : ''} /> waiting for approval</label>
      </div>
      <ul class="wf-list">${rows.length ? rows : [html`<li class="empty">No workflow matches. Start one above.</li>`]}</ul>`;
  }

  #workflowRow(r, started) {
    const a = r.searchAttributes;
    const where = {
      running: `${a.steps} steps done · ${waitingText(a.waiting)}`,
      completed: `${a.steps} steps in ${seconds(r.closeTime - r.startTime)}`,
      cancelled: `cancelled after ${a.steps} steps`,
    }[r.status] ?? `${r.status}: ${r.failureReason}`;
    const mine = started && runsHere(this.#engine, started);
    const approve = r.status === 'running' && a.waiting === APPROVAL && mine;
    return html`
      <li class="wf ${r.workflowId === this.#selected ? 'selected' : ''}" data-workflow-id="${r.workflowId}" data-status="${r.status}">
        <div class="wf-head">${pill(r.status)}<strong>${title(r.workflowType)}</strong><span class="ago">${clock(r.startTime)}</span></div>
        <div class="wf-sub"><code>${r.workflowId}</code> · ${subject(r.workflowType, started)}${mine ? '' : html` · <span class="badge synced" title="started on another device, which runs it; synced here">synced</span>`}</div>
        <div class="wf-foot"><span>${where}</span>${approve ? html`<button class="small" data-approve="${r.workflowId}">Approve</button>` : ''}</div>
      </li>`;
  }

  #detail({ detail, now }) {
    if (!detail?.record || !detail.run) return html`<h2>Workflow</h2><p class="empty">Select a workflow to see its journal.</p>`;
    const { record: r, events, run, artifacts, previews } = detail;
    const start = run.started.recordedAt;
    const timeline = events.map((e) => {
      const note = run.notes.get(e.seq);
      return html`<tr class="ev ${eventKind(e, note)}" data-event="${eventName(e)}">
        <td class="seq">${e.seq}</td><td class="t" title="${clock(e.recordedAt)}">+${seconds(e.recordedAt - start)}</td>
        <td><span class="kind ${eventKind(e, note)}">${eventLabel(e, note)}</span></td>
        <td class="what">${describeEvent(e, run)}</td></tr>`;
    });
    const cancel = r.status === 'running' && runsHere(this.#engine, run.started);
    return html`
      <h2>${title(r.workflowType)} <code>${r.workflowId}</code> ${pill(r.status)}
        ${cancel ? html`<button class="small secondary" data-cancel="${r.workflowId}">Cancel</button>` : ''}</h2>
      <p class="meta">${subject(r.workflowType, run.started)} · run <code>${r.runId.slice(0, 8)}</code> · started ${clock(r.startTime)} ·
        ${r.closeTime ? 'took' : 'running for'} ${seconds((r.closeTime ?? now) - r.startTime)} · journal head ${events.length}</p>
      <h3>Steps <small>what the code asked for, from the journal</small></h3>
      ${this.#steps(run, now)}
      <h3>Journal <small>readHistory · each decision one commit</small></h3>
      <table class="timeline"><tbody>${timeline}</tbody></table>
      <div class="pair">
        <div><h3>Result</h3>${run.status === 'running' ? html`<p class="empty">not yet</p>` : html`<pre class="result">${JSON.stringify(run.result ?? run.error ?? null, null, 1)}</pre>`}</div>
        <div>${this.#artifacts(artifacts, previews)}</div>
      </div>`;
  }

  #steps(run, now) {
    const rows = [...run.commands.values()].map((c) => {
      let tries = '';
      if (c.kind === 'step') {
        const retries = c.retries && plural(c.retries, 'retry', 'retries');
        const reruns = c.reruns.length && plural(c.reruns.length, 're-run after a reload', 're-runs after reloads');
        tries = [c.attempt, retries, reruns].filter(Boolean).join(' · ');
      }
      const due = c.status === 'retrying' ? c.retryAt : c.kind === 'sleep' && c.status === 'waiting' ? c.fireAt : null;
      const when = due === null ? '' : ` in ${seconds(Math.max(0, due - now))}`;
      return html`<tr data-step="${c.name}" data-step-status="${c.status}" data-attempts="${c.attempt ?? ''}">
        <td><span class="kind ${c.kind}">${c.kind}</span></td><td class="key"><code>${c.name}</code></td>
        <td>${pill(c.status, c.status === 'outcomeUnknown' ? 'unknown' : c.status, EFFECT_WHY[c.status] ?? '')}${when}</td><td class="wrap">${tries}</td></tr>`;
    });
    return html`<table class="rows steps">
      <thead><tr><th></th><th>name</th><th>status</th><th title="attempts begun, the first included">attempts</th></tr></thead>
      <tbody>${rows}</tbody></table>`;
  }

  #artifacts(artifacts, previews) {
    if (!artifacts.length) return html`<h3>Artifacts</h3><p class="empty">none yet</p>`;
    const items = artifacts.map(
      (a) => html`<div class="artifact" data-artifact="${a.name}">
        <div><strong>${a.name}</strong> <span class="dim">${a.mediaType} · ${a.sizeBytes} B · sha256 ${a.sha256.slice(0, 12)}… ✓</span></div>
        <pre>${previews[a.artifactId]}</pre></div>`,
    );
    return html`<h3>Artifacts <small>digest verified on read</small></h3>${items}`;
  }

  #timers({ timers, now }) {
    const rows = timers.map(
      (t) => html`<tr data-timer="${t.workflowId}/${t.timerId}"><td class="key"><code>${t.timerId}</code><div class="dim">${t.workflowId}</div></td>
        <td class="num">${t.fireAt <= now ? html`<span class="pill due">due</span>` : `in ${seconds(t.fireAt - now)}`}</td></tr>`,
    );
    return html`
      <h2>Durable timers <small>${timers.length} scheduled · sleeps, retries, signal timeouts</small></h2>
      <table class="rows">
        <colgroup><col /><col style="width:72px" /></colgroup>
        <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="2">no timer pending</td></tr>`]}</tbody>
      </table>`;
  }

  #effects({ effects, world }) {
    const counts = {};
    for (const e of effects) counts[e.status.type] = (counts[e.status.type] ?? 0) + 1;
    // The services' own count: a completed effect applied once, any other at most once.
    const called = effects.filter((e) => world[e.idempotencyKey]);
    const completed = called.filter((e) => e.status.type === 'completed');
    const once = called.every((e) => {
      const applied = world[e.idempotencyKey].performed;
      return e.status.type === 'completed' ? applied === 1 : applied <= 1;
    });
    const chips = ['completed', 'started', 'outcomeUnknown', 'failed'].map(
      (s) => html`<span class="chip ${s}" data-effect-count="${s}" title="${EFFECT_WHY[s]}">${EFFECT_LABELS[s]} <b>${counts[s] ?? 0}</b></span>`,
    );
    const byWorkflow = new Map();
    for (const e of effects) {
      const workflow = e.idempotencyKey.split('/')[0];
      byWorkflow.set(workflow, [...(byWorkflow.get(workflow) ?? []), e]);
    }
    const rows = [...byWorkflow].sort(([x], [y]) => x.localeCompare(y)).map(([workflow, list]) => [
      html`<tr class="group ${workflow === this.#selected ? 'mine' : ''}"><td colspan="5"><code>${workflow}</code></td></tr>`,
      list.map((e) => this.#effectRow(e, world[e.idempotencyKey])),
    ]);
    const verdict = completed.length
      ? once
        ? html`<p class="verdict ok" data-verdict="once">✓ each of ${completed.length} service calls done was performed exactly once, by the services' own count</p>`
        : html`<p class="verdict bad" data-verdict="repeated">✗ an effect was performed more than once</p>`
      : '';
    return html`
      <h2>Side effects <small>effect ledger vs. what the services saw</small></h2>
      <div class="chips">${chips}</div>
      <p class="legend"><b>unknown</b>: ${EFFECT_WHY.outcomeUnknown}. <b>tries</b>: attempts the engine began; <b>calls</b>: requests the service got; <b>applied</b>: times it took effect.</p>
      ${verdict}
      <table class="rows effects">
        <colgroup><col style="width:76px" /><col /><col style="width:36px" /><col style="width:36px" /><col style="width:56px" /></colgroup>
        <thead><tr><th>ledger</th><th>step</th><th class="num">tries</th><th class="num">calls</th><th class="num">applied</th></tr></thead>
        <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="5">no effect yet</td></tr>`]}</tbody>
      </table>`;
  }

  #effectRow(e, seen) {
    // The engine's records carry the attempt; the LangGraph agent's tool calls do not.
    const tries = e.request?.attempt ?? '–';
    const status = e.status.type;
    return html`<tr data-effect-status="${status}" data-effect-key="${e.idempotencyKey}">
      <td>${pill(status, EFFECT_LABELS[status] ?? status, EFFECT_WHY[status])}</td>
      <td class="key" title="${e.idempotencyKey}"><code>${e.capabilityId}</code></td>
      <td class="num">${tries}</td><td class="num">${seen ? seen.calls : '–'}</td>
      <td class="num ${seen?.performed > 1 ? 'bad' : ''}">${seen ? seen.performed : '–'}</td></tr>`;
  }
}
