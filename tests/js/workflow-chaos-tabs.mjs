// The tabs of the workflow chaos run (tests/js/workflow-chaos.mjs): pages of the chaos page in
// one Chromium, opened, called, found leading and killed. Every call on a page is bounded: a
// store call must settle (at worst with UNAVAILABLE), so one that does not is noted as hung.

/** A call of the driver's that has not settled by then is a finding. */
export const CALL_LIMIT_MS = 60_000;

export class ChaosTabs {
  /** The open tabs whose engine has started: `{ id, page }`. */
  live = [];
  /** Failed calls by cause, engine errors by code, calls that hung. */
  callErrors = {};
  engineErrors = {};
  hung = [];
  #browser;
  #urlOf;
  #deadline;
  #count = 0;

  /** `urlOf(tabId)`: the page's URL; `deadline`: when calls stop being sent again. */
  constructor(browser, urlOf, deadline) {
    this.#browser = browser;
    this.#urlOf = urlOf;
    this.#deadline = deadline;
  }

  /** Opens a tab and waits for its engine; tries again (a new tab) while the store hands over. */
  async open() {
    while (Date.now() < this.#deadline) {
      const tab = { id: `t${this.#count++}`, page: await this.#browser.newPage() };
      tab.page.on('console', (message) => {
        const [tag, code] = message.text().split(' ');
        if (tag === 'chaos-error') this.engineErrors[code] = (this.engineErrors[code] ?? 0) + 1;
      });
      try {
        await tab.page.goto(this.#urlOf(tab.id));
        await this.#bounded(tab, 'the engine start', tab.page.evaluate(() => window.chaos.ready));
        this.live.push(tab);
        return tab;
      } catch (error) {
        this.#note(error);
        await tab.page.close().catch(() => {});
      }
    }
    throw new Error('no tab could be opened in time');
  }

  /** `fn(arg)` in a random live tab, again in another until one answers. */
  async onSome(fn, arg) {
    for (;;) {
      if (Date.now() > this.#deadline) throw new Error('the run ran out of time');
      const tab = this.live[Math.floor(Math.random() * this.live.length)];
      if (!tab) {
        await sleep(50);
        continue;
      }
      try {
        return await this.#bounded(tab, `a call (${fn.toString().slice(0, 40)})`, tab.page.evaluate(fn, arg));
      } catch (error) {
        this.#note(error);
        await sleep(50 + Math.random() * 100);
      }
    }
  }

  /** The tab whose engine runs the workflows, or null (none leads right now). */
  async leader() {
    for (const tab of [...this.live]) {
      const leads = tab.page.evaluate(() => window.chaos.leads());
      if (await withLimit(leads, 2_000).catch(() => false)) return tab;
    }
    return null;
  }

  /** Waits for a tab to lead (at most a minute); resolves to it, or null. */
  async untilLeader() {
    const end = Math.min(this.#deadline, Date.now() + 60_000);
    while (Date.now() < end) {
      const leader = await this.leader();
      if (leader) return leader;
      await sleep(20);
    }
    return null;
  }

  /** Closes `tab`'s page, or crashes its renderer first (the tab's worker dies with it). */
  async kill(tab, how) {
    this.live.splice(this.live.indexOf(tab), 1);
    if (how === 'crash') {
      const cdp = await this.#browser.newCDPSession(tab.page);
      const crashed = new Promise((resolve) => tab.page.once('crash', resolve));
      cdp.send('Page.crash').catch(() => {}); // never answered: the target is gone
      await withLimit(crashed, 5_000).catch(() => {});
    }
    await withLimit(tab.page.close(), 10_000).catch(() => {});
  }

  async closeAll() {
    for (const tab of this.live.splice(0)) await withLimit(tab.page.close(), 10_000).catch(() => {});
  }

  #bounded(tab, what, promise) {
    return withLimit(promise, CALL_LIMIT_MS, () => this.hung.push(`${what} on ${tab.id}`));
  }

  /** Counts a failed call by its cause: the store's error code, or the page gone. */
  #note(error) {
    const message = String(error?.message);
    const code = message.match(/\b(UNAVAILABLE|BUSY|BACKEND|NOT_FOUND|CONFLICT|[A-Z]+_[A-Z_]+)\b/)?.[0];
    const cause = code ?? (/crash|closed|destroyed|navigat/i.test(message) ? 'tab gone' : message.slice(0, 60));
    this.callErrors[cause] = (this.callErrors[cause] ?? 0) + 1;
  }
}

/** `promise`, or a rejection (and `onHang()`) if it has not settled in `ms`. */
export function withLimit(promise, ms, onHang = () => {}) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onHang();
      reject(new Error(`not settled in ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
