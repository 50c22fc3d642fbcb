import { serveStatic, launchChromium } from './browser.mjs';
import { runChaos, percentiles } from './tabs-chaos.mjs';
const dists = { old: '/tmp/ab/app/dist', new: '/work/wt/tabs/tests/app/dist' };
for (const variant of (process.env.ORDER ?? 'old,new').split(',')) {
  const server = await serveStatic(dists[variant]);
  const browser = await launchChromium();
  const chaos = await runChaos(browser, server.url, { name: 'ab-chaos', minWrites: 2000, minDisruptions: Number(process.env.N ?? 30), maxMs: 600_000 });
  const h = percentiles(chaos.handoffs);
  console.log(variant, `n ${h.n} p50 ${h.p50} p95 ${h.p95} max ${h.max}; acked ${chaos.acked}; problems ${chaos.problems.length}`);
  await browser.close(); await server.close();
}
