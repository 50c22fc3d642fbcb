// The workflow chaos run in Chromium (tests/js/workflow-chaos.mjs), short here; longer with
// WORKFLOW_CHAOS=long (scripts/chaos-workflow.sh --long). Then its negative controls, the same
// run on copies of the package with a defect put in, which the check must fail (one that
// passed them would prove nothing):
// - step results not recorded: a body's value goes to the workflow and nothing records it;
// - an engine in every tab: followers run the workflows too, not only the leader, so bodies
//   run in two tabs although no tab was killed; the journal alone stays consistent (each run's
//   commits are fenced by its head), and only the service's log shows it.
// Each patch names the exact text it replaces: a change of the engine that removes it fails
// here, rather than leaving a control that no longer puts the defect in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runWorkflowChaos, summary } from './workflow-chaos.mjs';

const LONG = process.env.WORKFLOW_CHAOS === 'long';
const RUN = LONG ? { workflows: 150, spreadMs: 180_000, maxMs: 600_000 } : { workflows: 12, spreadMs: 15_000, maxMs: 150_000 };
/** How long each leader leads before it is killed, least-most ms (WORKFLOW_CHAOS_LEAD_MS=0-300 for harsher). */
RUN.leadMs = (process.env.WORKFLOW_CHAOS_LEAD_MS ?? '500-3000').split('-').map(Number);
/** Enough kills for the run to mean something: about one every 2 s of the run. */
const MIN_KILLS = LONG ? 60 : 6;
const log = process.env.WORKFLOW_CHAOS_VERBOSE ? (line) => console.log(line) : undefined;
const print = (title, report) => console.log(`${title}\n${summary(report).replace(/^/gm, '  ')}`);

const CONTROLS = [
  {
    name: 'step results not recorded',
    patch: [
      'workflow-run.js',
      '    exec.enqueue(this.#stepOutcome(exec, command, outcome));',
      '    if (outcome.ok) return exec.settle(command, null, outcome.value);\n    exec.enqueue(this.#stepOutcome(exec, command, outcome));',
    ],
    fails: /step \S+ of \S+ has 0 recorded results/,
  },
  {
    name: 'an engine in every tab',
    patch: ['workflow-engine.js', '    if (store.isLeader !== false) await this.#resume();', '    await this.#resume();'],
    fails: /step \S+ of \S+ ran again/,
  },
];
/** A control's run: shorter, and it need not finish (a defect may stall the runs). */
const CONTROL_RUN = { workflows: 6, spreadMs: 6_000, maxMs: 25_000 };

test('workflow chaos in Chromium: leaders closed and crashed; every run completes once with its steps recorded once, bodies re-run only after a kill, signals once, timers never early', { timeout: RUN.maxMs + 120_000 }, async () => {
  const report = await runWorkflowChaos({ ...RUN, log });
  print('workflow chaos', report);
  assert.deepEqual(report.problems, []);
  assert.ok(report.kills >= MIN_KILLS, `only ${report.kills} kills`);
  assert.ok(report.closed > 0 && report.crashed > 0, 'leaders were both closed and crashed');
  assert.equal(report.completed, RUN.workflows);
  assert.equal(report.children, RUN.workflows);
});

for (const control of CONTROLS) {
  test(`negative control: the chaos check fails ${control.name}`, { timeout: CONTROL_RUN.maxMs + 120_000 }, async () => {
    const report = await runWorkflowChaos({ ...CONTROL_RUN, patches: [control.patch], log });
    print(`negative control (${control.name})`, report);
    for (const problem of report.problems.slice(0, 3)) console.log(`  ${problem}`);
    assert.match(report.problems.join('\n'), control.fails);
  });
}
