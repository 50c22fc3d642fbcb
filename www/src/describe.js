// One line of plain language per journal event of the engine, for the inspector's timeline.

import { eventName } from './history.js';
import { html } from './html.js';
import { WORKFLOWS } from './workflows.js';

const KINDS = {
  started: 'lifecycle',
  completed: 'lifecycle',
  failed: 'failed',
  cancelled: 'failed',
  cancelRequested: 'failed',
  step: 'step',
  stepDone: 'step',
  stepAttempt: 'retry',
  stepRetry: 'retry',
  stepFailed: 'failed',
  sleep: 'timer',
  timerFired: 'timer',
  wait: 'signal',
  signal: 'signal',
  waitTimedOut: 'signal',
};

const LABELS = {
  step: 'step',
  stepDone: 'result',
  stepRetry: 'retry',
  stepAttempt: 'attempt',
  stepFailed: 'step failed',
  sleep: 'timer set',
  timerFired: 'timer fired',
  wait: 'wait',
  signal: 'signal',
  waitTimedOut: 'timed out',
  cancelRequested: 'cancel',
};

/** A short label for the event; `note` is what foldRun says of it. */
export function eventLabel(e, note = {}) {
  if (note.rerun) return 're-run';
  if (note.unknown) return 'unknown';
  return LABELS[eventName(e)] ?? eventName(e);
}

export function eventKind(e, note = {}) {
  return note.rerun || note.unknown ? 'recovered' : (KINDS[eventName(e)] ?? 'other');
}

const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;

/** What a step returned, in a few words. */
function answer(step, o) {
  if (!o) return '';
  switch (step) {
    case 'llm.plan':
      return `${o.plan.length}-step plan`;
    case 'llm.summarize':
      return `“${o.summary}”`;
    case 'search.web':
      return `${o.hits.length} hits`;
    case 'docs.fetch':
      return `${o.words} words`;
    case 'email.send':
      return o.unknown ? o.unknown : `sent ${o.messageId} to ${o.to}`;
    case 'payments.charge':
      return `charged ${(o.amountCents / 100).toFixed(2)} EUR as ${o.chargeId}`;
    case 'payments.refund':
      return `refunded as ${o.refundId}`;
    case 'warehouse.reserve':
      return `reserved in bin ${o.bin}`;
    case 'shipping.book':
      return `tracking ${o.tracking}`;
    default:
      return o.sizeBytes !== undefined ? `stored ${o.name} (${o.sizeBytes} B) with the step's result` : JSON.stringify(o).slice(0, 80);
  }
}

/** The event in a line; `run` is the run's fold (foldRun), for the names of the commands. */
export function describeEvent(e, run) {
  const d = e.data ?? {};
  const note = run?.notes.get(e.seq) ?? {};
  const step = html`<code>${run?.commands.get(d.n)?.name ?? '?'}</code>`;
  switch (eventName(e)) {
    case 'started': {
      const def = WORKFLOWS[e.workflowType];
      return html`run of <b>${def?.title ?? e.workflowType}</b> started: ${def?.describe(d.input) ?? ''}`;
    }
    case 'step':
      return html`${step} runs (attempt 1) under the step's idempotency key`;
    case 'stepDone':
      return html`${step} → ${answer(run?.commands.get(d.n)?.name, d.result)}${d.result?.replayed ? html` <span class="dim">(the service's first answer, replayed)</span>` : ''}`;
    case 'stepRetry':
      return html`${step} attempt ${d.attempt} failed: ${d.error?.message}; next attempt in ${secs(d.retryAt - e.recordedAt)} (durable timer)`;
    case 'stepAttempt':
      return note.rerun
        ? html`${step} <b>run again</b> as attempt ${d.attempt}, same key: the page went while it ran`
        : html`${step} attempt ${d.attempt}`;
    case 'stepFailed':
      return note.unknown
        ? html`${step} <b>outcome unknown</b>: the page went while this once-step ran, so it is not run again; the workflow decides`
        : html`${step} failed after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}: ${d.error?.message}
          ${run?.status !== 'failed' ? html`<span class="dim">(caught: the workflow goes on without it)</span>` : ''}`;
    case 'sleep':
      return html`durable timer <code>${d.timer}</code> for ${secs(d.fireAt - e.recordedAt)}`;
    case 'timerFired': {
      const late = e.recordedAt - (run?.commands.get(d.n)?.fireAt ?? e.recordedAt);
      return html`timer ${step} fired${late > 1000 ? html` <span class="dim">(${secs(late)} late)</span>` : ''}`;
    }
    case 'wait':
      return html`waits for signal <code>${d.signal}</code>${d.timeoutAt ? ` (at most ${Math.round((d.timeoutAt - e.recordedAt) / 60_000)} min)` : ''}`;
    case 'signal':
      return html`signal <code>${d.signal}</code>${d.payload?.by ? ` from ${d.payload.by}` : ''} <span class="dim">(id ${d.signalId})</span>`;
    case 'waitTimedOut':
      return html`no signal ${step} in time`;
    case 'cancelRequested':
      return html`<b>cancel requested</b>${d.reason ? `: ${d.reason}` : ''}`;
    case 'completed':
      return html`<b>completed</b>`;
    case 'failed':
      return html`<b>failed</b>: ${e.reason}`;
    case 'cancelled':
      return html`<b>cancelled</b>${d.reason ? `: ${d.reason}` : ''}`;
    default:
      return html`${JSON.stringify(d).slice(0, 100)}`;
  }
}
