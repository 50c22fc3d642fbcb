// Encrypting a plain store that has data (printed figures, not assertions), in headless
// Chromium through the packed package on OPFS: `rekey(key, { onProgress })` in place, next to
// the way there without it in the same page (a plain export, a new store opened with the key,
// the export imported into it), and next to `rekey` of the same store once encrypted
// (SQLCipher's own, page by page). Each on a fresh copy of the same store. Run by
// scripts/bench-encrypt.sh.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serveStatic, launchChromium } from './browser.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 20_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

const server = await serveStatic(join(root, 'tests', 'app', 'dist'));
const browser = await launchChromium();
try {
  const rows = [];
  for (let run = 1; run <= RUNS; run++) {
    const page = await browser.newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => window.runstore !== undefined);
    const got = await page.evaluate(async ({ workflows, run }) => {
      const { RunStore } = window.runstore;
      const options = { persistence: 'opfs', durability: 'relaxed', exclusive: true };
      const key = crypto.getRandomValues(new Uint8Array(32));
      const note = 'x'.repeat(200);
      const filled = async (name) => {
        const store = await RunStore.open(name, options);
        const step = 500;
        for (let at = 0; at < workflows; at += step) {
          const operations = [];
          for (let n = at; n < Math.min(at + step, workflows); n++) {
            operations.push({ op: 'append', workflowId: `wf-${n}`, expectedSeq: 0, events: [{ type: 'custom', name: 'noted', recordedAt: 1, data: { note } }] });
          }
          await store.commit({ operations });
        }
        return store;
      };
      const timed = async (body) => {
        const started = performance.now();
        await body();
        return performance.now() - started;
      };
      const tag = `${run}-${Date.now()}`;
      const inPlace = await filled(`in-place-${tag}`);
      let reports = 0;
      let total = 0;
      const rekeyMs = await timed(() => inPlace.rekey(key, { onProgress: (p) => { reports++; total = p.total; } }));
      const rekeyAgainMs = await timed(() => inPlace.rekey(crypto.getRandomValues(new Uint8Array(32))));
      await inPlace.close();
      const source = await filled(`by-export-${tag}`);
      const byExportMs = await timed(async () => {
        const bytes = await source.exportDatabase({ plain: true });
        const target = await RunStore.open(`by-export-target-${tag}`, { ...options, key });
        await target.importDatabase(bytes);
        await target.close();
      });
      await source.close();
      return { rekeyMs, rekeyAgainMs, byExportMs, reports, total };
    }, { workflows: WORKFLOWS, run });
    await page.close();
    rows.push(got);
    console.log(`[bench] run ${run}: rekey of the plain store ${got.rekeyMs.toFixed(0)} ms (${got.reports} progress reports, ${got.total} rows), export+import ${got.byExportMs.toFixed(0)} ms, rekey of it encrypted ${got.rekeyAgainMs.toFixed(0)} ms`);
  }
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const cell = (values, digits = 0) => `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
  console.log(`\n## Encrypting a plain store of ${WORKFLOWS.toLocaleString('en')} workflows (one event of about 300 bytes each), Chromium, OPFS relaxed; ${RUNS} run(s)\n`);
  console.log('| way | ms | ÷ rekey in place |');
  console.log('|---|---:|---:|');
  console.log(`| \`rekey(key, { onProgress })\` in place | ${cell(rows.map((r) => r.rekeyMs))} | 1 |`);
  console.log(`| plain export, new store with the key, import | ${cell(rows.map((r) => r.byExportMs))} | ${cell(rows.map((r) => r.byExportMs / r.rekeyMs), 2)} |`);
  console.log(`| \`rekey\` of the same store encrypted (new key) | ${cell(rows.map((r) => r.rekeyAgainMs))} | ${cell(rows.map((r) => r.rekeyAgainMs / r.rekeyMs), 2)} |`);
} finally {
  await browser.close();
  await server.close();
}
