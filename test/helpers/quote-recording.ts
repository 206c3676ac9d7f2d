/**
 * The recording replay's black-box tests start from (`svc replay`, `deploy --replay-since`, the
 * Replay page): a loopback pricing backend that counts its calls, the `acme/quote` flow calling it,
 * and traced /run deliveries of that flow, each carrying a card number the log masks.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { flow } from './registry-setup.js';
import { waitForLogRows } from './log-reads.js';
import type { Sandbox } from './svc.js';

/** A card number the global mask list covers (`card_number`): it must appear in no replay output. */
export const CARD = '4111111111111111';
/** The deployed answer: the backend's price under the input's id. */
export const QUOTE_ANSWER = '{"id": "{{ ctx.input.id }}", "price": {{ ctx.input.price }}}';

export interface PriceBackend {
  /** `http://127.0.0.1:<port>`: GET /price/<id> answers `{id, price: 12.5}`. */
  readonly url: string;
  /** Calls received so far (a replay must add none). */
  calls(): number;
  close(): Promise<void>;
}

export async function startPriceBackend(): Promise<PriceBackend> {
  let calls = 0;
  const server = createServer((req, res) => {
    calls += 1;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: req.url!.split('/').pop(), price: 12.5 }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: () => calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** `acme/quote`: a price call to `backendUrl`, then `answer` rendered; `extra` goes between them. */
export function quoteFlow(backendUrl: string, answer: string, extra = ''): string {
  return flow(
    'acme',
    'quote',
    'effects: [http_egress]',
    `## Step: price\neffects: [http_egress]\nendpoint: ${backendUrl}/price/{{ ctx.input.id }}\nmethod: GET\n${extra}\n## Step: answer\n\`\`\`ntd\n${answer}\n\`\`\``,
  );
}

/** Writes `body` into the sandbox's home as `name`; returns its path. */
export function writeHome(sb: Sandbox, name: string, body: string): string {
  const file = join(sb.home, name);
  writeFileSync(file, body);
  return file;
}

/** POSTs one traced delivery per id to the running server's /run of acme/quote, then waits until the log has them all. */
export async function recordQuotes(sb: Sandbox, serverUrl: string, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    const r = await fetch(`${serverUrl}/flows/acme/quote/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-correlation-id': id },
      body: JSON.stringify({ id, card_number: CARD }),
    });
    assert.equal(r.status, 200);
  }
  await waitForLogRows(sb, { event: 'step_traced', step: 'answer' }, ids.length);
  await waitForLogRows(sb, { event: 'completed' }, ids.length);
}
