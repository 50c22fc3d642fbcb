// Multi-tab benchmark (printed figures, not assertions): a second tab's time to its first
// result, a follower's per-call cost next to the leader's and an exclusive store's in the same
// run, with the floor under both (a bare postMessage round trip to a worker, a bare
// BroadcastChannel round trip to another page's worker, and one over a MessagePort handed
// across through a SharedWorker), and the long chaos run's hand-off times. Run by
// scripts/bench-tabs.sh.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serveStatic, launchChromium } from './browser.mjs';
import { runChaos, percentiles } from './tabs-chaos.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const HANDOFFS = Number(process.env.BENCH_HANDOFFS ?? 100);
const WRITES = Number(process.env.BENCH_WRITES ?? 10_000);

const server = await serveStatic(join(root, 'tests', 'app', 'dist'));
const browser = await launchChromium();
const openApp = async () => {
  const page = await browser.newPage();
  await page.goto(server.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
};
const open = (page, name, extra = {}) =>
  page.evaluate(
    async ({ name, extra }) => {
      const started = performance.now();
      window.store = await window.runstore.RunStore.open(name, { persistence: 'opfs', ...extra });
      await window.store.head('none');
      return performance.now() - started;
    },
    { name, extra },
  );
/** Microseconds per call: `calls` single-event appends one after another, then as many head reads. */
const perCall = (page, wf) =>
  page.evaluate(
    async ({ wf, calls }) => {
      const s = window.store;
      let started = performance.now();
      for (let i = 0; i < calls; i++) await s.append(wf, [{ type: 'custom', name: 'x', recordedAt: i, data: { i } }], i);
      const append = ((performance.now() - started) * 1000) / calls;
      started = performance.now();
      for (let i = 0; i < calls; i++) await s.head(wf);
      const head = ((performance.now() - started) * 1000) / calls;
      return { append, head };
    },
    { wf, calls: CALLS },
  );

/**
 * The floor under a call, in microseconds per round trip of a message shaped like a call and
 * its answer: from `page` to an echo worker of its own (postMessage); from `page` over a
 * BroadcastChannel to an echo worker that `host` (another page) started; and from `page` to
 * that same worker over a MessagePort handed across through a SharedWorker (the page posts one
 * end of a MessageChannel to the SharedWorker, which hands it to `host`, which hands it to its
 * worker). A follower's call travels the second way, the leader's own the first.
 */
async function floor(host, page, round) {
  const channel = `bench-floor-${round}`;
  const echo = 'onmessage = (e) => postMessage(e.data);';
  const hostEcho = `onmessage = (e) => {
      const port = e.ports[0];
      if (!port) return postMessage(e.data);
      port.onmessage = (m) => port.postMessage(m.data);
      port.postMessage('linked');
    };
    const channel = new BroadcastChannel(${JSON.stringify(channel)});
    channel.onmessage = (e) => channel.postMessage(e.data);`;
  // The SharedWorker passes a port from the page that sends one to every other page connected.
  const broker = `const pages = [];
    onconnect = (e) => {
      const page = e.ports[0];
      pages.push(page);
      page.onmessage = (m) => { for (const other of pages) if (other !== page) other.postMessage(null, [...m.ports]); };
    };`;
  const startEcho = (code) => {
    window.echo?.terminate();
    window.echo = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
    return new Promise((resolve) => {
      window.echo.onmessage = () => resolve();
      window.echo.postMessage('ready?');
    });
  };
  await host.evaluate(startEcho, hostEcho);
  const brokerUrl = await host.evaluate((code) => {
    const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
    window.broker = new SharedWorker(url);
    window.broker.port.onmessage = (m) => window.echo.postMessage(null, [m.ports[0]]);
    return url;
  }, broker);
  await page.evaluate(startEcho, echo);
  const trips = await page.evaluate(
    async ({ channel, calls, brokerUrl }) => {
      const roundTrips = async (send, listen) => {
        let answered;
        listen((event) => answered(event.data));
        const started = performance.now();
        for (let id = 1; id <= calls; id++) {
          await new Promise((resolve) => {
            answered = resolve;
            send({ id, method: 'head', args: [`wf-${id}`], requestId: undefined });
          });
        }
        return ((performance.now() - started) * 1000) / calls;
      };
      const worker = await roundTrips((m) => window.echo.postMessage(m), (on) => (window.echo.onmessage = on));
      const bc = new BroadcastChannel(channel);
      const broadcast = await roundTrips((m) => bc.postMessage(m), (on) => (bc.onmessage = on));
      bc.close();
      const broker = new SharedWorker(brokerUrl);
      const { port1, port2 } = new MessageChannel();
      await new Promise((resolve, reject) => {
        const late = setTimeout(() => reject(new Error('the port did not reach the other page\'s worker in 10 s')), 10_000);
        port1.onmessage = () => resolve(clearTimeout(late));
        broker.port.postMessage(null, [port2]);
      });
      const port = await roundTrips((m) => port1.postMessage(m), (on) => (port1.onmessage = on));
      port1.close();
      broker.port.close();
      window.echo.terminate();
      return { worker, broadcast, port };
    },
    { channel, calls: CALLS, brokerUrl },
  );
  await host.evaluate((url) => {
    window.echo.terminate();
    window.broker.port.close();
    URL.revokeObjectURL(url);
  }, brokerUrl);
  return trips;
}

const leader = await openApp();
const firstOpen = await open(leader, 'bench-tabs');
const secondTab = [];
for (let i = 0; i < 10; i++) {
  const page = await openApp();
  secondTab.push(await open(page, 'bench-tabs'));
  await page.close();
}
const follower = await openApp();
await open(follower, 'bench-tabs');
const alone = await openApp();
await open(alone, 'bench-alone', { exclusive: true });
const rounds = [];
for (let round = 0; round < 2; round++) {
  rounds.push({
    exclusive: await perCall(alone, `alone-${round}`),
    leader: await perCall(leader, `leader-${round}`),
    follower: await perCall(follower, `follower-${round}`),
    floor: await floor(leader, follower, round),
  });
}
for (const page of [leader, follower, alone]) await page.close();

const us = (v) => `${v.toFixed(0)} µs`;
console.log(`first tab: open + first result ${firstOpen.toFixed(0)} ms`);
console.log(`second tab: open + first result, median of 10: ${percentiles(secondTab).p50.toFixed(0)} ms (max ${Math.max(...secondTab).toFixed(0)} ms)`);
console.log(`per call, ${CALLS} each (OPFS, durability full):`);
console.log('| round | call | exclusive tab | leader tab | follower tab | follower / leader | follower − leader |');
console.log('|---|---|---|---|---|---|---|');
rounds.forEach((r, i) => {
  for (const call of ['append', 'head']) {
    console.log(`| ${i + 1} | ${call} | ${us(r.exclusive[call])} | ${us(r.leader[call])} | ${us(r.follower[call])} | ${(r.follower[call] / r.leader[call]).toFixed(2)} | ${us(r.follower[call] - r.leader[call])} |`);
  }
});
console.log('the floor in the same run: a bare round trip of a call-shaped message to an echo worker');
console.log("| round | own worker (postMessage) | other page's worker (BroadcastChannel) | other page's worker (MessagePort through a SharedWorker) | BroadcastChannel − postMessage | MessagePort − postMessage |");
console.log('|---|---|---|---|---|---|');
rounds.forEach(({ floor: f }, i) => {
  console.log(`| ${i + 1} | ${us(f.worker)} | ${us(f.broadcast)} | ${us(f.port)} | ${us(f.broadcast - f.worker)} | ${us(f.port - f.worker)} |`);
});

const started = Date.now();
const chaos = await runChaos(browser, server.url, {
  name: 'bench-chaos',
  minWrites: WRITES,
  minDisruptions: HANDOFFS,
  maxMs: 60 * 60_000,
  log: (line) => process.env.BENCH_VERBOSE && console.log(line),
});
const h = percentiles(chaos.handoffs);
console.log(
  `chaos: ${chaos.calls} calls, ${chaos.acked} acknowledged, ${chaos.disruptions} hand-offs and ${chaos.closes} closes in ${((Date.now() - started) / 1000).toFixed(0)} s; ` +
    `lost ${chaos.lost}, doubled ${chaos.doubled}, wrong data ${chaos.wrongData}, unannounced ${chaos.unannounced}, pending ${chaos.pending}; errors ${JSON.stringify(chaos.errors)}`,
);
console.log(`hand-off, leader loss to the first write acknowledged after the new leader took over (${h.n} measured): p50 ${h.p50} ms, p95 ${h.p95} ms, max ${h.max} ms`);
console.log('where the hand-off time goes, p50 (p95) ms per phase, by how the leader was lost:');
console.log('| lost by | n | until lock | wasm | until files free | open | announce | first ack | total | open attempts |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
const kinds = ['close', 'reload', 'terminate', 'all'];
for (const kind of kinds) {
  const rows = chaos.phases.filter((p) => kind === 'all' || p.kind === kind);
  if (rows.length === 0) continue;
  const cell = (key) => {
    const q = percentiles(rows.map((r) => r[key]));
    return `${q.p50} (${q.p95})`;
  };
  const totals = rows.map((r) => r.lock + r.wasm + r.files + r.open + r.announce + r.firstAck);
  const t = percentiles(totals);
  console.log(`| ${kind} | ${rows.length} | ${cell('lock')} | ${cell('wasm')} | ${cell('files')} | ${cell('open')} | ${cell('announce')} | ${cell('firstAck')} | ${t.p50} (${t.p95}) | ${cell('attempts')} |`);
}
for (const problem of chaos.problems.slice(0, 20)) console.log(`problem: ${problem}`);
await browser.close();
await server.close();
process.exit(chaos.problems.length === 0 ? 0 : 1);
