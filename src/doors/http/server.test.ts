import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FlowExecutor } from '../../app/runtime/flow-executor.js';
import { createLogger } from '../../common/logger.js';
import type { FlowResult, LoadedFlow } from '../../engine/index.js';
import type { FlowIR } from '../../ir/types.js';
import { NULL_EVENTS } from '../../store/event-log/event-sink.js';
import { buildServer } from './server.js';

/** Runs take 300 ms, so a request can be held in flight while the server starts closing. */
const SLOW_MS = 300;
const flow = {
  ir: {
    tenant: 't',
    flow: 'f',
    steps: [],
    responseHeaders: [],
    logExtraMaskFields: [],
    config: [],
  } as unknown as FlowIR,
  version: '1',
  hash: 'h',
  created_at: '2024-01-01T00:00:00Z',
} satisfies LoadedFlow;
const executor = {
  serve: FlowExecutor.prototype.serve,
  resolve: () => flow,
  ceiling: () => 1024,
  recordRejected: () => undefined,
  runNow: () =>
    new Promise<FlowResult>((r) =>
      setTimeout(
        () => r({ status: 200, headers: {}, output: { ok: 1 }, filtered: false, faultHandled: false }),
        SLOW_MS,
      ),
    ),
} as unknown as FlowExecutor;

const RUN = 'POST /flows/t/f/run HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';
const HEALTH = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n';

/** Everything the server writes on a socket until it closes it. */
function collect(socket: Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8').on('data', (d: string) => (text += d));
  return new Promise((resolve) => socket.once('close', () => resolve(text)));
}

describe('a request arriving while the server closes', () => {
  let port = 0;
  let closeServer: () => Promise<void>;
  before(async () => {
    const app = await buildServer({
      gate: undefined,
      secret: undefined,
      executor,
      events: NULL_EVENTS,
      wsdl: { tenantActive: () => false, loadSoapConfig: () => undefined },
      log: createLogger({ LOG_LEVEL: 'silent' }),
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
    closeServer = () => app.close();
  });
  after(() => closeServer());

  it('gets the same 503 answer on the fast path (/run) and on a Fastify route (/health), and the connection is closed', async () => {
    const sockets = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
    await Promise.all(sockets.map((s) => new Promise((r) => s.once('connect', r))));
    const texts = sockets.map(collect);
    // A slow /run holds each connection in flight, so closing waits for it and the socket stays open.
    for (const s of sockets) s.write(RUN);
    await new Promise((r) => setTimeout(r, SLOW_MS / 3));
    const closing = closeServer();
    await new Promise((r) => setImmediate(r));
    sockets[0]!.write(RUN);
    sockets[1]!.write(HEALTH);
    const [onFastPath, onFastify] = await Promise.all(texts);
    await closing;
    for (const text of [onFastPath!, onFastify!]) {
      const answers = text.split(/(?=HTTP\/1\.1 )/);
      assert.equal(answers.length, 2, text);
      assert.match(answers[0]!, /^HTTP\/1\.1 200 /);
      assert.match(answers[1]!, /^HTTP\/1\.1 503 /);
      assert.match(answers[1]!, /\r\nconnection: close\r\n/i);
      assert.match(answers[1]!, /\r\ncontent-type: application\/json\r\n/i);
      assert.ok(answers[1]!.endsWith('\r\n\r\n{"ok":false,"error":"server is shutting down"}'), answers[1]);
    }
  });
});
