// The demo's own cards beside the package's inspector (runstore/inspector, which shows what the
// store holds): the research agents waiting for a person (Approve sends the signal), and the
// simulated services' own count of what they were asked and what they did, beside the effect
// ledger, which is what this demo sets out to show: every effect applied exactly once.

import { runsHere, startedOf } from './history.js';
import { html } from './html.js';
import { WORKFLOWS } from './workflows.js';
import { worldLedger } from './world.js';

const APPROVAL = 'wait approve';
/** The ledger's states, in words short enough for a narrow column. */
const EFFECT_LABELS = { completed: 'done', started: 'running', outcomeUnknown: 'unknown', failed: 'failed', prepared: 'prepared' };
const EFFECT_WHY = {
  completed: 'its result is recorded: it is never run again',
  started: 'its body is running now',
  outcomeUnknown: 'the page went while this once-step ran: it may or may not have done its work, and is not run again',
  failed: 'its last attempt failed',
};

const pill = (status, label = status, why = '') => html`<span class="pill ${status}" title="${why}">${label}</span>`;

/** Replaces the card's content only when it changed, so that its scroll and a pressed button survive. */
function put(element, fragment) {
  const markup = String(fragment);
  if (element.dataset.drawn === markup) return;
  element.dataset.drawn = markup;
  element.innerHTML = markup;
}

/** Research agents that wait for a person, each with its Approve button (in this device's runs). */
export async function renderApprovals(element, store, engine) {
  const filter = { statuses: ['running'], search: [{ key: 'waiting', op: 'eq', value: APPROVAL }] };
  const { records } = await store.listVisibility(filter, 50, null);
  const rows = [];
  for (const r of records) {
    const started = await startedOf(store, r.workflowId);
    const mine = started && runsHere(engine, started);
    const subject = (started && WORKFLOWS[r.workflowType]?.describe(started.data.input)) ?? '';
    rows.push(html`<li data-waiting="${r.workflowId}"><code>${r.workflowId}</code> <span class="dim">${subject}</span>
      ${mine ? html`<button class="small" data-approve="${r.workflowId}">Approve</button>` : html`<span class="badge synced" title="started on another device, which runs it">synced</span>`}</li>`);
  }
  put(element, html`<h2>Waiting for you <small>visibility search <code>waiting = '${APPROVAL}'</code></small></h2>
    ${rows.length ? html`<ul class="plain">${rows}</ul>` : html`<p class="empty">No workflow waits for an approval.</p>`}`);
}

/** One click on Approve, here or in another tab, is one signal: its id is kept once. */
export function onApprove(element, engine) {
  element.addEventListener('click', (event) => {
    const button = event.target.closest('[data-approve]');
    if (!button) return;
    button.disabled = true;
    const id = button.dataset.approve;
    engine.signal(id, 'approve', { by: 'the Approve button' }, { signalId: `approve/${id}` }).catch((error) => console.error(error));
  });
}

/** The effect ledger beside the services' own count (tries begun, calls received, times applied). */
export async function renderServices(element, store) {
  const effects = (await store.listEffects(null, { limit: 1000 })).items;
  const world = worldLedger();
  const counts = {};
  for (const e of effects) counts[e.status.type] = (counts[e.status.type] ?? 0) + 1;
  // A completed effect applied once, any other at most once.
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
    html`<tr class="group"><td colspan="5"><code>${workflow}</code></td></tr>`,
    list.map((e) => effectRow(e, world[e.idempotencyKey])),
  ]);
  const verdict = completed.length
    ? once
      ? html`<p class="verdict ok" data-verdict="once">✓ each of ${completed.length} service calls done was performed exactly once, by the services' own count</p>`
      : html`<p class="verdict bad" data-verdict="repeated">✗ an effect was performed more than once</p>`
    : '';
  put(element, html`
    <h2>Side effects <small>effect ledger vs. what the services saw</small></h2>
    <div class="chips">${chips}</div>
    <p class="legend"><b>unknown</b>: ${EFFECT_WHY.outcomeUnknown}. <b>tries</b>: attempts the engine began; <b>calls</b>: requests the service got; <b>applied</b>: times it took effect.</p>
    ${verdict}
    <table class="rows effects">
      <colgroup><col style="width:76px" /><col /><col style="width:36px" /><col style="width:36px" /><col style="width:56px" /></colgroup>
      <thead><tr><th>ledger</th><th>step</th><th class="num">tries</th><th class="num">calls</th><th class="num">applied</th></tr></thead>
      <tbody>${rows.length ? rows : [html`<tr><td class="empty" colspan="5">no effect yet</td></tr>`]}</tbody>
    </table>`);
}

function effectRow(e, seen) {
  // The engine's records carry the attempt; the LangGraph agent's tool calls do not.
  const tries = e.request?.attempt ?? '–';
  const status = e.status.type;
  return html`<tr data-effect-status="${status}" data-effect-key="${e.idempotencyKey}">
    <td>${pill(status, EFFECT_LABELS[status] ?? status, EFFECT_WHY[status])}</td>
    <td class="key" title="${e.idempotencyKey}"><code>${e.capabilityId}</code></td>
    <td class="num">${tries}</td><td class="num">${seen ? seen.calls : '–'}</td>
    <td class="num ${seen?.performed > 1 ? 'bad' : ''}">${seen ? seen.performed : '–'}</td></tr>`;
}
