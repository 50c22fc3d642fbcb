// A run's timeline: one row per command of its code (steps, timers, waits for a signal,
// children) on a shared time axis from the run's start, each a span from when the code asked
// for it to when it was settled. A step's span is made of its attempts (how each ended) and
// the waits for a retry between them; a timer shows when it was due; a wait, when its signal
// came. Every span also says in text what it shows, for a reader who does not see the bars.
import { clock, duration, html } from './inspector-html.js';

const STATUS_WORDS = {
  done: 'done',
  running: 'running',
  retrying: 'waiting to retry',
  waiting: 'waiting',
  failed: 'failed',
  outcomeUnknown: 'outcome unknown',
  timedOut: 'timed out',
  cancelled: 'cancelled',
};

/** The axis: from the run's start to its end (or now), far enough to show what is due. */
function axis(run, now) {
  let end = run.end ?? now;
  for (const c of run.commands.values()) {
    if (c.status === 'waiting' && c.fireAt) end = Math.max(end, c.fireAt);
    if (c.status === 'retrying' && c.retryAt) end = Math.max(end, c.retryAt);
  }
  const start = run.start;
  return { start, end, width: Math.max(end - start, 1) };
}

/** A bar from `from` to `to` on the axis, at least a sliver wide so that an instant shows. */
function bar(ax, from, to, classes, title) {
  const left = ((from - ax.start) / ax.width) * 100;
  const width = Math.max(((to - from) / ax.width) * 100, 0.6);
  return html`<span class="bar ${classes}" style="left:${left.toFixed(3)}%;width:${Math.min(width, 100 - left).toFixed(3)}%" title="${title}"></span>`;
}

function mark(ax, at, classes, title) {
  const left = ((at - ax.start) / ax.width) * 100;
  return html`<span class="mark ${classes}" style="left:${left.toFixed(3)}%" title="${title}"></span>`;
}

function stepBars(ax, c, now) {
  return c.segments.map((s) => {
    const end = s.end ?? now;
    if (s.kind === 'backoff') {
      const due = s.until ? ` (due ${clock(s.until)})` : '';
      return bar(ax, s.start, s.end ?? Math.max(now, s.until ?? now), 'backoff', `waiting for attempt ${s.attempt ?? ''} ${duration(end - s.start)}${due}`);
    }
    const outcome = s.outcome ?? (s.end === null ? 'running' : c.status === 'done' ? 'done' : c.status);
    return bar(ax, s.start, end, `attempt ${outcome.replace(' ', '-')}`, `attempt ${s.attempt}: ${outcome}, ${duration(end - s.start)}`);
  });
}

function commandBars(ax, c, now) {
  if (c.kind === 'step') return stepBars(ax, c, now);
  const end = c.at ?? now;
  const bars = [bar(ax, c.since, end, `${c.kind} ${c.status}`, `${c.kind} ${c.name}: ${STATUS_WORDS[c.status] ?? c.status}, ${duration(end - c.since)}`)];
  if (c.kind === 'sleep' && c.fireAt) bars.push(mark(ax, c.fireAt, 'due', `due at ${clock(c.fireAt)}`));
  if (c.kind === 'wait' && c.timeoutAt && c.status === 'waiting') bars.push(mark(ax, Math.min(c.timeoutAt, ax.end), 'due', `times out at ${clock(c.timeoutAt)}`));
  if (c.kind === 'wait' && c.at && c.status === 'done') bars.push(mark(ax, c.at, 'signal', `signal at ${clock(c.at)}`));
  return bars;
}

/** What the row says in words: its status, attempts and times. */
function words(c, run, now) {
  const end = c.at ?? now;
  const parts = [STATUS_WORDS[c.status] ?? c.status];
  if (c.kind === 'step' && c.attempt > 1) parts.push(`${c.attempt} attempts`);
  if (c.restarts) parts.push(`${c.restarts} after a restart`);
  parts.push(`at +${duration(c.since - run.start)}`);
  parts.push(c.at ? `took ${duration(end - c.since)}` : `for ${duration(end - c.since)}`);
  return parts.join(' · ');
}

/** The timeline of `run` (foldRun's), `now` the time open spans reach. */
export function timeline(run, now) {
  const ax = axis(run, now);
  const commands = [...run.commands.values()];
  const end = run.end ?? now;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => html`<span style="left:${(f * 100).toFixed(1)}%">+${duration(f * ax.width)}</span>`);
  const rows = commands.map(
    (c) => html`<li class="span-row" data-span="${c.kind} ${c.name}" data-span-status="${c.status}">
      <span class="span-name"><span class="kind ${c.kind}">${c.kind}</span> <code>${c.name}</code></span>
      <span class="track" aria-hidden="true">${commandBars(ax, c, now)}</span>
      <span class="span-words">${words(c, run, now)}</span></li>`,
  );
  const cancel = run.cancelRequestedAt ? mark(ax, run.cancelRequestedAt, 'cancel', `cancel requested at ${clock(run.cancelRequestedAt)}`) : '';
  return html`<ol class="spans" aria-label="Timeline: ${commands.length} commands over ${duration(end - run.start)}">
    <li class="span-row run" data-span="run" data-span-status="${run.status}">
      <span class="span-name"><span class="kind lifecycle">run</span> <code>${run.started.runId}</code></span>
      <span class="track" aria-hidden="true">${bar(ax, run.start, end, `run ${run.status}`, `run: ${run.status}, ${duration(end - run.start)}`)}${cancel}</span>
      <span class="span-words">${run.status} · started ${clock(run.start)} · ${run.end ? 'took' : 'for'} ${duration(end - run.start)}</span></li>
    ${rows}
    <li class="span-row axis" aria-hidden="true"><span class="span-name"></span><span class="ticks">${ticks}</span><span class="span-words"></span></li>
  </ol>`;
}
