// A workflow's state is a fold of its journal: `apply` every stored event, in seq order, to
// the state the previous ones built. The runner resumes from a checkpoint of this state (taken
// after each step) plus the journal events recorded after it, or from the whole journal.

import { WORKFLOWS } from './workflows.js';

export const custom = (name, data) => ({ type: 'custom', name, data });

export function emptyState(workflowId) {
  return {
    id: workflowId,
    head: 0,
    status: 'pending',
    type: null,
    runId: null,
    // The browser profile whose runner drives it (see runner.js): workflows pulled from a sync
    // server are shown here, and run where they were started.
    origin: null,
    input: null,
    startedAt: null,
    closedAt: null,
    done: {}, // step id -> true
    outputs: {}, // step id -> output (for activities: activity name -> output)
    activities: {}, // step id -> [{ name, type, key, optional, settled }]
    activityCount: 0,
    timers: {}, // step id -> { fireAt, fired }
    deadLetters: 0,
    recoveries: 0,
    failedStep: null,
    failureReason: null,
  };
}

export function replay(state, events) {
  for (const event of events) apply(state, event);
  return state;
}

/** Applies one stored event to `state` (in place). */
export function apply(s, e) {
  s.head = e.seq;
  switch (e.type) {
    case 'started':
      Object.assign(s, { status: 'running', type: e.workflowType, runId: e.runId, input: e.data.input, origin: e.data.origin ?? null, startedAt: e.recordedAt });
      break;
    case 'completed':
      Object.assign(s, { status: 'completed', closedAt: e.recordedAt });
      break;
    case 'failed':
      Object.assign(s, { status: 'failed', closedAt: e.recordedAt, failedStep: e.data?.step ?? null, failureReason: e.reason });
      break;
    case 'custom':
      applyCustom(s, e.name, e.data);
      break;
    default:
  }
  return s;
}

function applyCustom(s, name, d) {
  switch (name) {
    case 'toolCalled':
    case 'artifactStored':
      s.outputs[d.step] = d.output;
      s.done[d.step] = true;
      break;
    case 'activitiesScheduled':
      s.activities[d.step] = d.activities.map((a) => ({ ...a, settled: false }));
      s.outputs[d.step] = {};
      s.activityCount += d.activities.length;
      break;
    case 'activityCompleted':
    case 'activityDeadLettered': {
      const list = s.activities[d.step];
      list.find((a) => a.name === d.name).settled = true;
      s.outputs[d.step][d.name] = name === 'activityCompleted' ? d.output : null;
      if (name === 'activityDeadLettered') s.deadLetters++;
      if (list.every((a) => a.settled)) s.done[d.step] = true;
      break;
    }
    case 'timerStarted':
      s.timers[d.step] = { fireAt: d.fireAt, fired: false };
      break;
    case 'timerFired':
      s.timers[d.step].fired = true;
      s.done[d.step] = true;
      break;
    case 'recovered':
      s.recoveries++;
      break;
    default:
  }
}

/** The first step not done yet, or null when every step is. */
export function currentStep(s) {
  return WORKFLOWS[s.type]?.steps.find((step) => !s.done[step.id]) ?? null;
}
