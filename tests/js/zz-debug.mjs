import { serveStatic } from './browser.mjs';
import { launchFirefox } from './engines/firefox.mjs';
const server = await serveStatic('/tmp/exp/site');
const browser = await launchFirefox({ quota: 24 * 2 ** 20 });
const page = await browser.newPage();
await page.goto(server.url + 'q.html');
console.log(JSON.stringify(await page.evaluate(() => window.probe())));
await browser.close(); await server.close();
