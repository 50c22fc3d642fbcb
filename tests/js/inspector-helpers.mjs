// Test support for the pages that mount <runstore-inspector>: a test app page whose errors are
// collected, and reads of the inspector's open shadow root.

/** A new page of the test app; its page errors and console errors go to `problems`. */
export async function openInspectorPage(app, problems) {
  const page = await app.browser.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // The browser logs a failed request (a server's 401 or 403) itself; the page logs nothing.
    if (message.type() === 'error' && !/Failed to load resource/.test(message.text())) problems.push(`console error: ${message.text()}`);
  });
  await page.goto(app.url);
  await page.waitForFunction(() => window.runstore !== undefined);
  return page;
}

/** How many elements match `selector` in the page's inspector. */
export const countIn = (page, selector) =>
  page.evaluate((selector) => document.querySelector('runstore-inspector').shadowRoot.querySelectorAll(selector).length, selector);

/** Waits until the page's inspector has `n` elements matching `selector`. */
export const waitCount = (page, selector, n, timeout = 20_000) =>
  page.waitForFunction(
    ([selector, n]) => document.querySelector('runstore-inspector')?.shadowRoot.querySelectorAll(selector).length === n,
    [selector, n],
    { timeout },
  );

/** Text of the first match of `selector` in the page's inspector. */
export const textIn = (page, selector) =>
  page.evaluate((selector) => document.querySelector('runstore-inspector').shadowRoot.querySelector(selector)?.textContent ?? null, selector);
