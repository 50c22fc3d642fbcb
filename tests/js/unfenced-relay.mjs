// Test support for the sync checker's negative controls (tests/js/sync-controls.test.mjs): an
// HTTP relay in front of the sync server that puts fencing out of force, as a server that
// ignored claim tokens would. It remembers the last claim token each claim answer handed out
// per dispatch key, and rewrites every outbox completion to carry that token, so a completion
// under a replaced token applies. With `leases` (tests/js/sync-leases-check.test.mjs), it also
// rewrites every push made under a lease to carry the lease the server holds now, as a server
// that did not check epochs would admit it. Anything the relay cannot pass on (the connection
// behind it cut) cuts the caller's connection too, as the fault proxy does.
import http from 'node:http';

export class UnfencedRelay {
  #server = null;
  /** dispatch key → the last claim token handed out for it. */
  #tokens = new Map();

  constructor(target, { leases = false } = {}) {
    this.target = target;
    this.leases = leases;
  }

  /** Starts listening on 127.0.0.1; resolves to the relay's URL. */
  async listen() {
    this.#server = http.createServer((request, response) => {
      this.#relay(request, response).catch(() => response.destroy());
    });
    await new Promise((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${this.#server.address().port}`;
  }

  async #relay(request, response) {
    const chunks = [];
    for await (const chunk of request) chunks.push(chunk);
    let body = Buffer.concat(chunks).toString('utf8');
    if (request.url.endsWith('/outbox/complete')) {
      const parsed = JSON.parse(body);
      parsed.claimToken = this.#tokens.get(parsed.dispatchKey) ?? parsed.claimToken;
      body = JSON.stringify(parsed);
    }
    if (this.leases && request.url.endsWith('/push')) body = await this.#underHeldLease(request, body);
    const headers = { ...request.headers, 'content-length': String(Buffer.byteLength(body)) };
    const answer = await fetch(`${this.target}${request.url}`, { method: request.method, headers, body: request.method === 'GET' ? undefined : body });
    const text = await answer.text();
    if (request.url.endsWith('/outbox/claim') && answer.ok) {
      for (const row of JSON.parse(text).rows ?? []) this.#tokens.set(row.dispatchKey, row.claimToken);
    }
    response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    response.end(text);
  }

  /** The push's body with its lease replaced by the one the server holds on its workflow. */
  async #underHeldLease(request, body) {
    const parsed = JSON.parse(body);
    if (!parsed.lease) return body;
    const leaseUrl = `${this.target}${request.url.replace(/\/push$/, '')}/workflows/${encodeURIComponent(parsed.workflowId)}/lease`;
    const answer = await fetch(leaseUrl, { headers: { authorization: request.headers.authorization } });
    const { lease } = await answer.json();
    if (lease) parsed.lease = { holder: lease.holder, epoch: lease.epoch };
    return JSON.stringify(parsed);
  }

  async close() {
    this.#server?.closeAllConnections();
    await new Promise((resolve) => (this.#server ? this.#server.close(resolve) : resolve()));
  }
}
