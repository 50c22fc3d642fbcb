// The checker of the workflow chaos run (tests/js/workflow-chaos.mjs): what the journals read
// back at the end, the service's log of calls and the driver's log of kills and signals must
// agree on. Each finding is a line of `problems`; `counts` says what was seen.
import { isDeepStrictEqual } from 'node:util';
import { answer } from './workflow-chaos-service.mjs';

/**
 * How long after the service answered a call the tab that made it may have died with the
 * answer not yet recorded (the answer on its way, the commit that records it queued behind
 * another). A body that runs again after a kill later than this ran again although its result
 * had every chance to be recorded.
 */
export const RECORDING_GRACE_MS = 2_000;

/**
 * `plan`: the workflows started, `{ id, signals: [{ signalId, name, payload }] }`; `calls`:
 * the service's log; `kills`: `{ tab, at, how }`; `stored`: `{ journals, effects }` read back.
 */
export function checkChaos({ plan, calls, kills, stored }) {
  const problems = [];
  const counts = { workflows: 0, completed: 0, children: 0, steps: 0, calls: calls.length, reruns: 0, retries: 0, signals: 0, timers: 0, killGaps: [] };
  const callsByKey = groupBy(calls, (call) => call.key);
  const runIds = new Map(Object.entries(stored.journals).map(([id, events]) => [id, events[0]?.runId]));

  for (const call of calls) {
    const runId = runIds.get(call.workflowId);
    if (!runId) problems.push(`a body of ${call.workflowId} ran, a workflow the store does not hold`);
    else if (call.key !== `${call.workflowId}/${runId}/${call.step}`) problems.push(`step ${call.step} of ${call.workflowId} called the service with key ${call.key}, not its run's key`);
  }

  const context = { callsByKey, kills, stored, counts, problems };
  for (const { id, signals } of plan) checkOrder(id, signals, context);
  return { problems, counts };
}

/** An order workflow (tests/js/workflow-chaos-page.js) and its child: each run's checks, its signals, both results. */
function checkOrder(id, signals, context) {
  const { stored, counts, problems } = context;
  counts.workflows++;
  const events = stored.journals[id] ?? [];
  const result = checkRun(id, events, context);
  if (result) counts.completed++;
  checkSignals(id, events, signals, counts, problems);
  const child = events.find((e) => e.kind === 'child');
  if (!child) {
    if (result) problems.push(`${id} completed without starting its child`);
    return;
  }
  const childId = child.data.workflowId;
  const childEvents = stored.journals[childId] ?? [];
  const childResult = checkRun(childId, childEvents, context);
  if (childResult) {
    counts.children++;
    const ans = (step) => answer(`${childId}/${childEvents[0].runId}/${step}`);
    if (!isDeepStrictEqual(childResult.value, { pack: ans('pack'), send: ans('send') })) problems.push(`${childId} completed with ${JSON.stringify(childResult.value)}`);
  }
  const childDone = events.filter((e) => e.kind === 'childDone');
  if (childDone.length !== 1 || !isDeepStrictEqual(childDone[0].data.result, childResult?.value)) {
    problems.push(`${id} recorded its child's end ${childDone.length} times, or with another result than the child's`);
  }
  const expected = result && expectedResult(id, events, childResult?.value);
  if (result && !isDeepStrictEqual(result.value, expected)) problems.push(`${id} completed with ${JSON.stringify(result.value)}, not ${JSON.stringify(expected)}`);
}

/** The checks every run must pass (parents and children); returns `{ value }` of its one completion, or null. */
function checkRun(id, events, { callsByKey, kills, stored, counts, problems }) {
  if (events[0]?.kind !== 'started') {
    problems.push(`${id} was never started`);
    return null;
  }
  const runId = events[0].runId;
  const ends = events.filter((e) => ['completed', 'failed', 'cancelled'].includes(e.kind));
  if (ends.length !== 1 || ends[0].kind !== 'completed' || ends[0] !== events.at(-1)) {
    const last = events.slice(-3).map((e) => e.kind).join(', ');
    problems.push(`${id} ended ${ends.map((e) => e.kind).join(', ') || 'never'} (its last events: ${last})`);
  }
  const byN = groupBy(events.filter((e) => Number.isSafeInteger(e.data?.n)), (e) => e.data.n);
  for (const [n, of] of byN) {
    const command = of[0];
    if (command.kind === 'step') {
      counts.steps++;
      checkStep(id, `${id}/${runId}/${command.data.step}`, command.data.step, of, { callsByKey, kills, stored, counts, problems });
    }
    if (command.kind === 'sleep') {
      counts.timers++;
      for (const fired of of.filter((e) => e.kind === 'timerFired')) {
        if (fired.at < command.data.fireAt) problems.push(`timer ${command.data.timer} of ${id} fired ${command.data.fireAt - fired.at} ms early`);
      }
    }
    if (of.some((e) => e.kind === 'waitTimedOut')) problems.push(`the wait ${n} of ${id} timed out, its 10-minute timeout not due`);
  }
  const completed = ends.find((e) => e.kind === 'completed');
  return ends.length === 1 && completed ? { value: completed.data?.result } : null;
}

/** One step: one recorded result, the service's answer, in the ledger too; bodies run again only after a kill. */
function checkStep(id, key, step, events, { callsByKey, kills, stored, counts, problems }) {
  const done = events.filter((e) => e.kind === 'stepDone');
  const failed = events.filter((e) => e.kind === 'stepFailed');
  if (done.length !== 1 || failed.length > 0) problems.push(`step ${step} of ${id} has ${done.length} recorded results and ${failed.length} failures`);
  const expected = answer(key);
  if (done.length > 0 && done.some((e) => e.data.result !== expected)) problems.push(`step ${step} of ${id} recorded ${done.map((e) => e.data.result)}, the service answered ${expected}`);
  const effect = stored.effects[key];
  if (effect?.status?.type !== 'completed' || effect.status.output !== expected) problems.push(`the ledger holds ${JSON.stringify(effect?.status ?? null)} for step ${step} of ${id}`);
  const calls = (callsByKey.get(key) ?? []).toSorted((a, b) => a.at - b.at);
  if (calls.length === 0) return problems.push(`step ${step} of ${id} has a result and its body never called the service`);
  const last = calls.at(-1);
  if (last.failed || effect?.request?.attempt !== last.attempt) problems.push(`step ${step} of ${id}: the ledger's attempt ${effect?.request?.attempt} is not the last call's (${last.attempt}${last.failed ? ', failed' : ''})`);
  const retried = new Set(events.filter((e) => e.kind === 'stepRetry').map((e) => e.data.attempt));
  for (let i = 0; i + 1 < calls.length; i++) {
    const [call, next] = [calls[i], calls[i + 1]];
    if (next.attempt <= call.attempt) problems.push(`step ${step} of ${id} ran attempt ${call.attempt} and then ${next.attempt}`);
    if (call.failed && retried.has(call.attempt)) {
      counts.retries++;
      continue;
    }
    // The tab that made the call died before its outcome could be recorded.
    const kill = kills.find((k) => k.tab === call.tab && k.at <= (call.answeredAt ?? next.at) + RECORDING_GRACE_MS && k.at <= next.at);
    if (kill) {
      counts.reruns++;
      counts.killGaps.push(kill.at - (call.answeredAt ?? kill.at));
    } else {
      const died = kills.find((k) => k.tab === call.tab);
      const when = died ? `its tab ${call.tab} was killed ${died.at - (call.answeredAt ?? call.at)} ms after the answer` : `its tab ${call.tab} was not killed`;
      problems.push(`step ${step} of ${id} ran again: attempt ${call.attempt} in tab ${call.tab}, then attempt ${next.attempt} in tab ${next.tab} ${next.at - call.at} ms later; ${when}`);
    }
  }
  // A failed attempt's retry waits for its durable timer.
  for (const retry of events.filter((e) => e.kind === 'stepRetry')) {
    const next = events.find((e) => e.kind === 'stepAttempt' && e.data.attempt === retry.data.attempt + 1);
    if (next && next.at < retry.data.retryAt) problems.push(`step ${step} of ${id}: attempt ${next.data.attempt} began ${retry.data.retryAt - next.at} ms before its retry time`);
  }
}

/** Every signal sent (by signal id, however often) is in its workflow's journal once, as sent. */
function checkSignals(id, events, signals, counts, problems) {
  const recorded = groupBy(events.filter((e) => e.kind === 'signal'), (e) => e.data.signalId);
  for (const { signalId, name, payload } of signals) {
    counts.signals++;
    const got = recorded.get(signalId) ?? [];
    if (got.length !== 1) problems.push(`signal ${signalId} was delivered to ${id} ${got.length} times`);
    else if (got[0].data.signal !== name || !isDeepStrictEqual(got[0].data.payload, payload)) problems.push(`signal ${signalId} reached ${id} as ${JSON.stringify(got[0].data)}`);
  }
  for (const signalId of recorded.keys()) {
    if (!signals.some((s) => s.signalId === signalId)) problems.push(`${id} recorded signal ${signalId}, which nobody sent`);
  }
}

/** The result the order workflow (tests/js/workflow-chaos-page.js) must return, from the service's answers and the signals. */
function expectedResult(id, events, ship) {
  const ans = (step) => answer(`${id}/${events[0].runId}/${step}`);
  const signals = events.filter((e) => e.kind === 'signal');
  const items = signals.filter((e) => e.data.signal === 'item').map((e) => e.data.payload);
  const steps = { quote: ans('quote'), stock: ans('stock'), price: ans('price'), tax: ans('tax'), flaky: ans('flaky') };
  steps.acks = items.map((_, k) => ans(`ack-${k}`));
  steps.receipt = ans('receipt');
  return { steps, approval: signals.find((e) => e.data.signal === 'approve')?.data.payload, items, ship };
}

/** `items` grouped by `keyOf(item)`, in order (Map.groupBy, which Node 20 lacks). */
function groupBy(items, keyOf) {
  const groups = new Map();
  for (const item of items) {
    const key = keyOf(item);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(item);
  }
  return groups;
}
