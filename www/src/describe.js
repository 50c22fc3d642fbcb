// One line of plain language per journal event, for the inspector's timeline.

import { html } from './html.js';
import { WORKFLOWS } from './workflows.js';

const KINDS = {
  started: 'lifecycle',
  completed: 'lifecycle',
  failed: 'failed',
  toolCalled: 'tool',
  activitiesScheduled: 'outbox',
  activityCompleted: 'outbox',
  activityDeadLettered: 'dead',
  timerStarted: 'timer',
  timerFired: 'timer',
  artifactStored: 'artifact',
  recovered: 'recovered',
};

const LABELS = {
  toolCalled: 'tool call',
  activitiesScheduled: 'dispatch',
  activityCompleted: 'activity',
  activityDeadLettered: 'dead letter',
  timerStarted: 'timer set',
  timerFired: 'timer fired',
  artifactStored: 'artifact',
  recovered: 'resumed',
};

/** A short label for the event's type. */
export function eventLabel(e) {
  return e.type === 'custom' ? (LABELS[e.name] ?? e.name) : e.type;
}

export function eventKind(e) {
  return KINDS[e.type === 'custom' ? e.name : e.type] ?? 'other';
}

const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;

/** What a service answered, in a few words. */
function answer(capability, o) {
  if (!o) return '';
  switch (capability) {
    case 'llm.plan':
      return `${o.plan.length}-step plan`;
    case 'llm.summarize':
      return `“${o.summary}”`;
    case 'search.web':
      return `${o.hits.length} hits`;
    case 'docs.fetch':
      return `${o.words} words`;
    case 'email.send':
      return `sent ${o.messageId} to ${o.to}`;
    case 'payments.charge':
      return `charged ${(o.amountCents / 100).toFixed(2)} EUR as ${o.chargeId}`;
    case 'warehouse.reserve':
      return `reserved in bin ${o.bin}`;
    case 'shipping.book':
      return `tracking ${o.tracking}`;
    default:
      return JSON.stringify(o).slice(0, 80);
  }
}

export function describeEvent(e) {
  const d = e.data ?? {};
  switch (e.type === 'custom' ? e.name : e.type) {
    case 'started':
      return html`run of <b>${WORKFLOWS[e.workflowType]?.title ?? e.workflowType}</b> started: ${WORKFLOWS[e.workflowType]?.describe(d.input) ?? ''}`;
    case 'completed':
      return html`<b>completed</b>`;
    case 'failed':
      return html`<b>failed</b>: ${e.reason}`;
    case 'toolCalled':
      return html`<code>${d.tool}</code> → ${answer(d.tool, d.output)}
        ${d.reconciled ? html`<span class="badge recovered">re-issued with its key after a reload</span>` : ''}`;
    case 'activitiesScheduled':
      return html`${d.activities.length} activities into the outbox, same transaction:
        ${d.activities.map((a, i) => html`${i ? ', ' : ''}<code>${a.type}</code>`)}`;
    case 'activityCompleted':
      return html`<code>${d.type}</code> → ${answer(d.type, d.output)}${d.attempts > 1 ? html` <span class="dim">(attempt ${d.attempts})</span>` : ''}`;
    case 'activityDeadLettered':
      return html`<code>${d.type}</code> <b>dead letter</b> after ${d.attempts} attempts: ${d.error}
        ${d.optional ? html`<span class="dim">(optional: the workflow goes on)</span>` : ''}`;
    case 'timerStarted':
      return html`durable timer <code>${d.timerId}</code> for ${secs(d.fireAt - e.recordedAt)}: ${d.why}`;
    case 'timerFired':
      return html`timer <code>${d.timerId}</code> fired${d.lateMs > 1000 ? html` <span class="dim">(${secs(d.lateMs)} late)</span>` : ''}`;
    case 'artifactStored':
      return html`stored <b>${d.output.name}</b> (${d.output.sizeBytes} B, sha256 ${d.output.sha256.slice(0, 10)}…)`;
    case 'recovered':
      return html`<b>resumed by page load #${d.pageLoad}</b> from ${
        d.checkpointRevision === null ? 'the journal alone' : html`checkpoint rev ${d.checkpointRevision} (seq ${d.checkpointSeq})`
      } + ${d.replayed} journal event${d.replayed === 1 ? '' : 's'}`;
    default:
      return html`${JSON.stringify(d).slice(0, 100)}`;
  }
}
