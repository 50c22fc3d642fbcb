// runstore/inspector as it looks, in the engine RUNSTORE_ENGINE names: each view of a store
// seeded the same way every time (tests/app/src/inspector-screens.js: fixed ids, times and
// payloads, the page's clock fixed) is screenshotted and compared with the stored one of that
// engine (tests/js/screenshots/<engine>/<view>.png; fonts and rendering differ by engine).
// Each screenshot is kept in target/test-artifacts/inspector/<engine>/, with an image of the
// pixels that differ when a comparison fails. RUNSTORE_UPDATE_SCREENSHOTS=1 stores the new
// screenshots instead (and, in Chromium, docs/inspector.png). Then the inspector at 200% zoom:
// laid out at half the width, every view's text stays inside the element and clear of other
// text, and a run is reached.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import { ENGINE, useTestApp } from './browser.mjs';

// The inspector shows times in the page's time zone; the browsers take it from here.
process.env.TZ = 'UTC';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BASELINES = join(root, 'tests/js/screenshots', ENGINE);
const ARTIFACTS = join(root, 'target/test-artifacts/inspector', ENGINE);
const UPDATE = process.env.RUNSTORE_UPDATE_SCREENSHOTS === '1';
/**
 * A pixel differs when pixelmatch's colour distance (0 to 1) is above this; anti-aliased
 * pixels (a glyph's edge a subpixel away) are not counted.
 */
const THRESHOLD = 0.1;
/**
 * The share of differing pixels a view may have and still match: 0.02 %, some 40 pixels of the
 * smallest view and 240 of the run's. Run after run on the same machine the views match pixel
 * for pixel in each engine; a text colour changed a shade (`--green`) differs by 0.02 to 0.16 %
 * in the views that show it, a column removed changes a view's size.
 */
const MAX_SHARE = 0.0002;
/** The page's size in CSS pixels (one device pixel each): the whole run view fits. */
const VIEWPORT = { width: 1200, height: 1150 };

/** The views shot: file name, the view, and the workflow whose run is shown. */
const VIEWS = [
  ['workflows', 'workflows'],
  ['run', 'workflows', 'order-1042'],
  ['effects', 'effects'],
  ['outbox', 'outbox'],
  ['timers', 'timers'],
  ['checkpoints', 'checkpoints'],
  ['conversations', 'conversations'],
  ['changes', 'changes'],
  ['store', 'store'],
];

const app = useTestApp();
const title = (text) => `${text} (${ENGINE})`;

/** A page of the test app at `viewport`, the inspector mounted on seeded store `name`. */
async function openSeeded(name, viewport) {
  const page = await app.browser.newPage();
  await page.setViewportSize(viewport);
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  await page.evaluate(async (name) => (await window.inspectorScreens()).mount({ name }), name);
  return page;
}

const show = (page, view, workflowId = null) =>
  page.evaluate(async ([view, workflowId]) => (await window.inspectorScreens()).show(view, workflowId), [view, workflowId]);

/** The element as the viewport shows it: a screenshot of the viewport cut to the element's box. */
async function shoot(page) {
  const box = await page.evaluate(() => {
    scrollTo(0, 0);
    const r = document.querySelector('runstore-inspector').getBoundingClientRect();
    return { x: Math.floor(r.left), y: Math.floor(r.top), right: Math.ceil(r.right), bottom: Math.ceil(r.bottom) };
  });
  const options = ENGINE === 'chromium' ? { animations: 'disabled', caret: 'hide' } : {};
  const shot = PNG.sync.read(await page.screenshot(options));
  const width = box.right - box.x;
  const height = box.bottom - box.y;
  assert.ok(box.bottom <= shot.height && box.right <= shot.width, `the element (${width}×${height} at ${box.x},${box.y}) fits the viewport ${shot.width}×${shot.height}`);
  const out = new PNG({ width, height });
  PNG.bitblt(shot, out, box.x, box.y, width, height, 0, 0);
  return out;
}

/** Shoots until two screenshots in a row are the same: what was read has been painted. */
async function settled(page) {
  let last = await shoot(page);
  for (let i = 0; i < 5; i++) {
    const next = await shoot(page);
    if (next.data.equals(last.data)) return next;
    last = next;
  }
  throw new Error('the view kept changing over 6 screenshots');
}

/** A PNG file of `png`, without its alpha channel (every pixel is opaque): a smaller file. */
const encode = (png) => PNG.sync.write(png, { colorType: 2 });

/** Pixels of `shot` that differ from `stored`, and an image of them. */
function difference(shot, stored) {
  const { width, height } = shot;
  const diff = new PNG({ width, height });
  const count = pixelmatch(stored.data, shot.data, diff.data, width, height, { threshold: THRESHOLD });
  return { count, share: count / (width * height), diff };
}

/** The page the views are shot in, opened by the first test. */
let opened = null;
function shotPage() {
  opened ??= (async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const page = await openSeeded('screens', VIEWPORT);
    assert.equal(await page.evaluate(() => devicePixelRatio), 1, 'one device pixel per CSS pixel');
    return page;
  })();
  return opened;
}

for (const [name, view, workflowId] of VIEWS) {
  test(title(`the ${name} view of the seeded store matches its stored screenshot`), async (t) => {
    const page = await shotPage();
    await show(page, view, workflowId);
    const shot = await settled(page);
    const bytes = encode(shot);
    writeFileSync(join(ARTIFACTS, `${name}.png`), bytes);
    const baseline = join(BASELINES, `${name}.png`);
    if (UPDATE) {
      mkdirSync(BASELINES, { recursive: true });
      writeFileSync(baseline, bytes);
      if (ENGINE === 'chromium' && name === 'run') writeFileSync(join(root, 'docs/inspector.png'), bytes);
      t.diagnostic(`stored ${baseline}`);
      return;
    }
    assert.ok(existsSync(baseline), `no stored screenshot ${baseline}: RUNSTORE_UPDATE_SCREENSHOTS=1 stores this one`);
    const stored = PNG.sync.read(readFileSync(baseline));
    assert.deepEqual([shot.width, shot.height], [stored.width, stored.height], `${name}: the size of the stored screenshot`);
    const { count, share, diff } = difference(shot, stored);
    const measured = `${name} in ${ENGINE}: ${count} of ${shot.width * shot.height} pixels differ (${(share * 100).toFixed(4)} %)`;
    t.diagnostic(measured);
    if (share > MAX_SHARE) {
      writeFileSync(join(ARTIFACTS, `${name}.diff.png`), encode(diff));
      assert.fail(`${measured}, more than ${MAX_SHARE * 100} %: see ${join(ARTIFACTS, `${name}.png`)} and ${name}.diff.png`);
    }
  });
}

test(title('the effect ledger and the outbox list the status of the chip clicked, and all again'), async () => {
  const page = await shotPage();
  const statuses = (selector, key) =>
    page.evaluate(([selector, key]) => [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll(selector)].map((r) => r.dataset[key]), [selector, key]);
  const filtered = async (view, chip, rows, key, status) => {
    await show(page, view);
    await page.waitForFunction((rows) => document.querySelector('runstore-inspector').shadowRoot.querySelectorAll(rows).length > 0, rows);
    const all = await statuses(rows, key);
    assert.ok(all.includes(status) && all.some((s) => s !== status), `${view}: the seeded rows hold ${status} and others (${all})`);
    await page.click(`runstore-inspector [${chip}="${status}"]`);
    await page.waitForFunction(([rows, key, status]) => {
      const shown = [...document.querySelector('runstore-inspector').shadowRoot.querySelectorAll(rows)];
      return shown.length > 0 && shown.every((r) => r.dataset[key] === status);
    }, [rows, key, status]);
    assert.deepEqual(await statuses(rows, key), all.filter((s) => s === status));
    await page.click(`runstore-inspector [${chip}=""]`);
    await page.waitForFunction(([rows, n]) => document.querySelector('runstore-inspector').shadowRoot.querySelectorAll(rows).length === n, [rows, all.length]);
    assert.deepEqual((await statuses(rows, key)).sort(), [...all].sort());
  };
  await filtered('effects', 'data-effect-filter', '[data-effect-status]', 'effectStatus', 'outcomeUnknown');
  await filtered('outbox', 'data-outbox-filter', '[data-outbox-status]', 'outboxStatus', 'failed');
});

test(title('at 200% zoom (half the width): every view reads, its text inside the element and clear of other text, and a run is reached'), async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  const zoomed = await openSeeded('screens-zoomed', { width: VIEWPORT.width / 2, height: 700 });
  assert.equal(await zoomed.evaluate(() => innerWidth), VIEWPORT.width / 2);
  for (const [name, view, workflowId] of VIEWS) {
    await show(zoomed, view, workflowId);
    // The run is below the list: its part of the page is the one kept.
    if (workflowId) await zoomed.evaluate(() => document.querySelector('runstore-inspector').shadowRoot.querySelector('.run').scrollIntoView());
    writeFileSync(join(ARTIFACTS, `${name}-zoom-200.png`), await zoomed.screenshot({}));
    const problems = await zoomed.evaluate(async () => (await window.inspectorScreens()).unreadable());
    assert.deepEqual(problems, [], `${name} at 200%`);
  }
  // One column: the run comes below the list, and scrolling brings its head into view.
  const run = await zoomed.evaluate(() => {
    const root = document.querySelector('runstore-inspector').shadowRoot;
    const head = root.querySelector('.run-head');
    head.scrollIntoView();
    const r = head.getBoundingClientRect();
    return { top: r.top, bottom: r.bottom, listBottom: root.querySelector('.list').getBoundingClientRect().bottom, height: innerHeight };
  });
  assert.ok(run.top >= run.listBottom - 1, 'the run is below the list');
  assert.ok(run.top >= 0 && run.bottom <= run.height, `the run's head is in view: ${JSON.stringify(run)}`);
  await zoomed.close();
});
