// One line of plain language per journal event, for a run's event list: a kind (its colour),
// a short label and what happened, in the words of runstore/workflow where the event is one
// of its own, else the event's data as JSON.
import { eventName } from './inspector-fold.js';
import { brief, duration, html } from './inspector-html.js';

const KINDS = {
  started: 'lifecycle',
  completed: 'lifecycle',
  continuedAsNew: 'lifecycle',
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
  child: 'child',
  childDone: 'child',
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
  childDone: 'child done',
};

/** A short label for the event; `note` is what foldRun noted of it. */
export function eventLabel(e, note = {}) {
  if (note.rerun) return 're-run';
  if (note.unknown) return 'unknown';
  return LABELS[eventName(e)] ?? eventName(e);
}

/** The event's kind, which colours it. */
export function eventKind(e, note = {}) {
  return note.rerun || note.unknown ? 'recovered' : (KINDS[eventName(e)] ?? 'other');
}

/** What the event says, in a line; `run` is the run's fold, for the names of its commands. */
export function describeEvent(e, run) {
  const d = e.data && typeof e.data === 'object' ? e.data : {};
  const note = run?.notes.get(e.seq) ?? {};
  const step = html`<code>${run?.commands.get(d.n)?.name ?? '?'}</code>`;
  switch (eventName(e)) {
    case 'started':
      return html`run <code>${e.runId}</code> of <b>${e.workflowType}</b> started${d.input !== undefined ? html`, input <code>${brief(d.input, 100)}</code>` : ''}`;
    case 'step':
      return html`${step} attempt ${d.attempt ?? 1} began`;
    case 'stepDone':
      return html`${step} returned <code>${brief(d.result, 100)}</code>`;
    case 'stepRetry':
      return html`${step} attempt ${d.attempt} failed: ${d.error?.message ?? brief(d.error)}; next attempt in ${duration(d.retryAt - e.recordedAt)} (durable timer)`;
    case 'stepAttempt':
      return note.rerun
        ? html`${step} <b>run again</b> as attempt ${d.attempt} under the same key: the engine stopped while attempt ${d.attempt - 1} ran`
        : html`${step} attempt ${d.attempt} began`;
    case 'stepFailed':
      return note.unknown
        ? html`${step} <b>outcome unknown</b>: the engine stopped while this once-step ran, so it is not run again`
        : html`${step} failed after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}: ${d.error?.message ?? brief(d.error)}${
            run && run.status !== 'failed' && run.lastSeq > e.seq ? html` <span class="dim">(caught: the workflow went on)</span>` : ''}`;
    case 'sleep':
      return html`durable timer <code>${d.timer}</code> set for ${duration(d.fireAt - e.recordedAt)}`;
    case 'timerFired': {
      const late = e.recordedAt - (run?.commands.get(d.n)?.fireAt ?? e.recordedAt);
      return html`timer ${step} fired${late > 1000 ? html` <span class="dim">(${duration(late)} after its time)</span>` : ''}`;
    }
    case 'wait':
      return html`waits for signal <code>${d.signal}</code>${d.timeoutAt ? ` (until ${duration(d.timeoutAt - e.recordedAt)} from now)` : ''}`;
    case 'signal':
      return html`signal <code>${d.signal}</code>${d.payload !== undefined ? html` <code>${brief(d.payload, 80)}</code>` : ''} <span class="dim">(id ${d.signalId})</span>`;
    case 'waitTimedOut':
      return html`no signal ${step} in time`;
    case 'child':
      return html`child <code>${d.workflowId}</code> of type <b>${d.workflowType}</b>${d.detached ? ' (detached)' : ''}`;
    case 'childDone':
      return html`child ${step} ${d.status ?? 'done'}`;
    case 'value':
      return html`recorded <code>${d.kind}</code> = <code>${brief(d.value, 60)}</code>`;
    case 'patch':
      return html`patch <code>${d.patch}</code>`;
    case 'cancelRequested':
      return html`<b>cancel requested</b>${d.reason ? `: ${d.reason}` : ''}`;
    case 'completed':
      return html`<b>completed</b>${d.result !== undefined ? html` with <code>${brief(d.result, 100)}</code>` : ''}`;
    case 'failed':
      return html`<b>failed</b>: ${e.reason}`;
    case 'cancelled':
      return html`<b>cancelled</b>${d.reason ? `: ${d.reason}` : ''}`;
    case 'continuedAsNew':
      return html`continued as new run <code>${e.nextRunId}</code>`;
    default:
      return html`<code>${brief(e.data, 140)}</code>`;
  }
}
