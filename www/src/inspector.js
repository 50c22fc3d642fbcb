// The inspector: what the store holds, read back a few times a second. Workflows come from
// the visibility index (with its typed filters), a workflow's timeline from its journal, and
// the outbox, timers, checkpoints, effect ledger and artifacts from their own tables.

import { readAll } from './pages.js';
import { describeEvent, eventKind, eventLabel } from './describe.js';
import { html } from './html.js';
import { WORKFLOWS, stepOrder } from './workflows.js';
import { worldLedger } from './world.js';

const REFRESH_MS = 250;
const STATUSES = ['running', 'completed', 'failed'];
const OUTBOX_STATUSES = ['claimed', 'pending', 'failed', 'done', 'cancelled'];
const OUTBOX_LABELS = { pending: 'pending', claimed: 'in flight', done: 'done', failed: 'dead letter', cancelled: 'cancelled' };

const seconds = (ms) => `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)}s`;
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
const pill = (status, label = status) => html`<span class="pill ${status}">${label}</span>`;
const title = (type) => WORKFLOWS[type]?.title ?? type;
const byStep = (x, y) =>
  stepOrder(x.idempotencyKey) - stepOrder(y.idempotencyKey) || x.idempotencyKey.localeCompare(y.idempotencyKey);

export class Inspector {
  #root;
  #store;
  #runner;
  #selected = null;
  #filter = { status: null, type: null, deadLetters: false, recovered: false };
  #busy = false;
  #again = false;
  #soon = null;
  #rendered = new Map();

  constructor(root, store, runner) {
    this.#root = root;
    this.#store = store;
    this.#runner = runner;
    root.addEventListener('click', (event) => this.#onClick(event));
    root.addEventListener('change', (event) => this.#onChange(event));
  }

  start() {
    this.#root.hidden = false;
    setInterval(() => this.refresh(), REFRESH_MS);
    this.refresh();
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
      const snapshot = await this.#snapshot();
      this.#render(snapshot);
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
    const search = [];
    if (f.deadLetters) search.push({ key: 'deadLetters', op: 'gt', value: 0 });
    if (f.recovered) search.push({ key: 'recoveries', op: 'gt', value: 0 });
    return { workflowType: f.type, statuses: f.status ? [f.status] : [], search };
  }

  async #snapshot() {
    const store = this.#store;
    const filter = this.#visibilityFilter();
    const page = await store.listVisibility(filter, 50, null);
    const total = await store.countVisibility({});
    const counts = {};
    for (const status of STATUSES) counts[status] = await store.countVisibility({ ...filter, statuses: [status] });
    const outbox = [];
    for (const status of OUTBOX_STATUSES) outbox.push(...(await store.listOutbox(status, { limit: 100 })).items);
    const timers = (await store.listTimers({ limit: 100 })).items;
    const effects = (await store.listEffects(null, { limit: 500 })).items;
    if (!this.#selected || !page.records.some((r) => r.workflowId === this.#selected)) {
      this.#selected = page.records[0]?.workflowId ?? null;
    }
    let detail = null;
    if (this.#selected) {
      const id = this.#selected;
      const record = await store.getVisibility(id);
      const history = await readAll((page) => store.readHistory(id, page));
      let checkpoint = null;
      try {
        checkpoint = await store.loadCheckpoint(`${id}/state`);
      } catch (error) {
        if (error.code !== 'NOT_FOUND') throw error;
      }
      const artifacts = (await store.listArtifacts(id, { limit: 100 })).items;
      const previews = {};
      for (const a of artifacts) {
        const artifact = await store.getArtifact(id, a.artifactId); // verifies the digest
        previews[a.artifactId] = new TextDecoder().decode(artifact.bytes);
      }
      detail = { record, history, checkpoint, artifacts, previews };
    }
    return { now: Date.now(), page, total, counts, outbox, timers, effects, world: worldLedger(), detail };
  }

  #render(snap) {
    this.#put('workflows', this.#workflows(snap));
    this.#put('detail', this.#detail(snap));
    this.#put('outbox', this.#outbox(snap));
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

  #onClick(event) {
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
    if (name === 'deadLetters') this.#filter.deadLetters = checked;
    if (name === 'recovered') this.#filter.recovered = checked;
    this.refresh();
  }

  #workflows({ page, total, counts, now }) {
    const f = this.#filter;
    const shown = STATUSES.reduce((n, s) => n + counts[s], 0);
    const tabs = [['', 'all', shown], ...STATUSES.map((s) => [s, s, counts[s]])].map(
      ([value, label, n]) =>
        html`<button class="tab ${(f.status ?? '') === value ? 'on' : ''}" data-filter-status="${value}">${label} <b>${n}</b></button>`,
    );
    const types = Object.entries(WORKFLOWS).map(
      ([type, def]) => html`<option value="${type}" ${f.type === type ? 'selected' : ''}>${def.title}</option>`,
    );
    const rows = page.records.map((r) => this.#workflowRow(r, now));
    return html`
      <h2>Workflows <small>${page.records.length} of ${total} · visibility index</small></h2>
      <div class="tabs">${tabs}</div>
      <div class="filters">
        <select name="type"><option value="">every type</option>${types}</select>
        <label><input type="checkbox" name="deadLetters" ${f.deadLetters ? 'checked' : ''} /> with dead letters</label>
        <label><input type="checkbox" name="recovered" ${f.recovered ? 'checked' : ''} /> resumed after reload</label>
      </div>
      <ul class="wf-list">${rows.length ? rows : [html`<li class="empty">No workflow matches. Start one above.</li>`]}</ul>`;
  }

  #workflowRow(r, now) {
    const a = r.searchAttributes;
    const pct = Math.round((100 * a.stepsDone) / a.steps);
    const where =
      r.status === 'running'
        ? `step ${a.stepsDone + 1}/${a.steps}: ${a.step}${a.waitingOn === 'timer' ? ' (timer)' : a.waitingOn === 'activities' ? ' (activities)' : ''}`
        : r.status === 'completed'
          ? `${a.steps} steps in ${seconds(r.closeTime - r.startTime)}`
          : `failed at ${r.failedStep}: ${r.failureReason}`;
    const stopped = this.#runner.errors.get(r.workflowId);
    const badges = [];
    if (stopped) badges.push(html`<span class="badge dead" title="${stopped.message}">runner stopped: ${stopped.code ?? 'error'}</span>`);
    if (a.recoveries) badges.push(html`<span class="badge recovered" title="resumed after a reload">↻ ${a.recoveries}</span>`);
    if (a.deadLetters) badges.push(html`<span class="badge dead" title="activities dead-lettered">✉ ${a.deadLetters} dead</span>`);
    return html`
      <li class="wf ${r.workflowId === this.#selected ? 'selected' : ''}" data-workflow-id="${r.workflowId}" data-status="${r.status}">
        <div class="wf-head">${pill(r.status)}<strong>${title(r.workflowType)}</strong><span class="ago">${clock(r.startTime)}</span></div>
        <div class="wf-sub"><code>${r.workflowId}</code> · ${a.subject}</div>
        <div class="progress ${r.status}"><span style="width:${pct}%"></span></div>
        <div class="wf-foot"><span>${where}</span><span class="badges">${badges}</span></div>
      </li>`;
  }

  #detail({ detail, now }) {
    if (!detail?.record) return html`<h2>Workflow</h2><p class="empty">Select a workflow to see its journal.</p>`;
    const { record: r, history, checkpoint, artifacts, previews } = detail;
    const def = WORKFLOWS[r.workflowType];
    const done = new Set(checkpoint?.state ? Object.keys(checkpoint.state.done) : []);
    const current = r.status === 'running' ? r.searchAttributes.step : null;
    const steps = def.steps.map(
      (s) =>
        html`<li class="step ${done.has(s.id) ? 'done' : s.id === current ? 'current' : ''}"><span class="kind ${s.kind}">${s.kind}</span>${s.id}</li>`,
    );
    const start = history[0]?.recordedAt ?? r.startTime;
    const events = history.map((e) => {
      const kind = eventKind(e);
      return html`<tr class="ev ${kind}" data-event="${e.type === 'custom' ? e.name : e.type}">
        <td class="seq">${e.seq}</td><td class="t" title="${clock(e.recordedAt)}">+${seconds(e.recordedAt - start)}</td>
        <td><span class="kind ${kind}">${eventLabel(e)}</span></td>
        <td class="what">${describeEvent(e)}</td></tr>`;
    });
    const elapsed = (r.closeTime ?? now) - r.startTime;
    return html`
      <h2>${def.title} <code>${r.workflowId}</code> ${pill(r.status)}</h2>
      <p class="meta">${r.searchAttributes.subject} · run <code>${r.runId.slice(0, 8)}</code> · started ${clock(r.startTime)} ·
        ${r.closeTime ? 'took' : 'running for'} ${seconds(elapsed)} · journal head ${history.length}</p>
      <ol class="steps">${steps}</ol>
      <h3>Journal <small>readHistory · appended under the expected head</small></h3>
      <table class="timeline"><tbody>${events}</tbody></table>
      <div class="pair">
        <div>${this.#checkpoint(checkpoint, now, def)}</div>
        <div>${this.#artifacts(artifacts, previews)}</div>
      </div>`;
  }

  #checkpoint(c, now, def) {
    if (!c) return html`<h3>Checkpoint</h3><p class="empty">none yet</p>`;
    const s = c.state;
    const done = def.steps.filter((step) => s.done[step.id]).map((step) => step.id);
    const remembered = def.steps.filter((step) => step.id in s.outputs).map((step) => step.id);
    return html`
      <h3>Checkpoint <small>compare-and-swap</small></h3>
      <dl class="kv" data-checkpoint-revision="${c.revision}">
        <dt>id</dt><dd><code>${c.checkpointId}</code></dd>
        <dt>revision</dt><dd>${c.revision} · state at seq ${s.head} · ${seconds(now - c.updatedAt)} ago</dd>
        <dt>steps done</dt><dd>${done.length}/${def.steps.length}${done.length ? ` (${done.join(', ')})` : ''}</dd>
        <dt>outputs kept</dt><dd>${remembered.join(', ') || '—'}</dd>
      </dl>`;
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

  #outbox({ outbox, now }) {
    const counts = Object.fromEntries(OUTBOX_STATUSES.map((s) => [s, 0]));
    for (const row of outbox) counts[row.status]++;
    const chips = ['pending', 'claimed', 'done', 'failed'].map(
      (s) => html`<span class="chip ${s}" data-outbox-count="${s}">${OUTBOX_LABELS[s]} <b>${counts[s]}</b></span>`,
    );
    const rows = outbox.map((o) => {
      const when =
        o.status === 'pending'
          ? o.visibleAfter > now
            ? `retry in ${seconds(o.visibleAfter - now)}`
            : 'due'
          : o.status === 'claimed'
            ? `claimed ${seconds(now - o.claimedAt)} ago`
            : '';
      return html`<tr data-outbox-status="${o.status}" data-dispatch-key="${o.dispatchKey}">
        <td>${pill(o.status, OUTBOX_LABELS[o.status])}</td><td><code>${o.activityType}</code></td>
        <td class="dim">${o.workflowId}</td><td class="num" title="attempt">#${o.attempt + 1}</td><td class="dim">${when}</td></tr>`;
    });
    return html`
      <h2>Outbox <small>at-least-once activities</small></h2>
      <div class="chips">${chips}</div>
      <table class="rows">
        <colgroup><col style="width:86px" /><col /><col style="width:128px" /><col style="width:36px" /><col style="width:112px" /></colgroup>
        <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="5">empty</td></tr>`]}</tbody>
      </table>`;
  }

  #timers({ timers, now }) {
    const rows = timers.map(
      (t) => html`<tr data-timer="${t.workflowId}/${t.timerId}"><td><code>${t.timerId}</code></td><td class="dim">${t.workflowId}</td>
        <td class="num">${t.fireAt <= now ? html`<span class="pill due">due</span>` : `fires in ${seconds(t.fireAt - now)}`}</td></tr>`,
    );
    return html`
      <h2>Durable timers <small>${timers.length} scheduled</small></h2>
      <table class="rows">
        <colgroup><col /><col /><col style="width:112px" /></colgroup>
        <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="3">no timer pending</td></tr>`]}</tbody>
      </table>`;
  }

  #effects({ effects, world }) {
    const counts = {};
    for (const e of effects) counts[e.status.type] = (counts[e.status.type] ?? 0) + 1;
    const completed = effects.filter((e) => e.status.type === 'completed');
    const once = completed.every((e) => world[e.idempotencyKey]?.performed === 1);
    const chips = ['completed', 'started', 'outcomeUnknown', 'failed'].map(
      (s) => html`<span class="chip ${s}" data-effect-count="${s}">${s} <b>${counts[s] ?? 0}</b></span>`,
    );
    const byWorkflow = new Map();
    for (const e of [...effects].sort(byStep)) {
      const workflow = e.idempotencyKey.split('/')[0];
      byWorkflow.set(workflow, [...(byWorkflow.get(workflow) ?? []), e]);
    }
    const rows = [...byWorkflow].sort(([x], [y]) => x.localeCompare(y)).map(([workflow, list]) => [
      html`<tr class="group ${workflow === this.#selected ? 'mine' : ''}"><td colspan="6"><code>${workflow}</code></td></tr>`,
      list.map((e) => this.#effectRow(e, world[e.idempotencyKey])),
    ]);
    const verdict = completed.length
      ? once
        ? html`<p class="verdict ok" data-verdict="once">✓ each of ${completed.length} completed effects was performed exactly once</p>`
        : html`<p class="verdict bad" data-verdict="repeated">✗ an effect was performed more than once</p>`
      : '';
    return html`
      <h2>Side effects <small>effect ledger vs. what the services saw</small></h2>
      <div class="chips">${chips}</div>
      ${verdict}
      <table class="rows effects">
        <colgroup><col style="width:112px" /><col /><col /><col style="width:50px" /><col style="width:40px" /><col style="width:56px" /></colgroup>
        <thead><tr><th>ledger</th><th>key</th><th>capability</th><th class="num" title="requests the runner issued (↻: re-issued after a reload)">sent</th><th class="num" title="requests the service received">recv</th><th class="num" title="times the service applied the effect">applied</th></tr></thead>
        <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="6">no effect yet</td></tr>`]}</tbody>
      </table>`;
  }

  #effectRow(e, seen = { calls: 0, performed: 0 }) {
    const step = e.idempotencyKey.split('/').slice(1).join('/');
    const reissued = e.request.reconciled
      ? html` <span class="badge recovered" title="cut off by a reload, re-issued with the same key">↻</span>`
      : '';
    return html`<tr data-effect-status="${e.status.type}" data-effect-key="${e.idempotencyKey}">
      <td>${pill(e.status.type)}</td><td class="key" title="${e.idempotencyKey}">${step}</td><td><code>${e.capabilityId}</code></td>
      <td class="num">${e.request.issued}${reissued}</td><td class="num">${seen.calls}</td>
      <td class="num ${seen.performed > 1 ? 'bad' : ''}">${seen.performed}</td></tr>`;
  }
}
