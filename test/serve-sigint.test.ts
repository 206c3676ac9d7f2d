/** Black-box: svc serve stops cleanly on SIGINT (Ctrl-C) as it does on SIGTERM. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('svc serve on SIGINT', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  before(async () => {
    server = await startServer(sandbox, ['--no-auth']);
  });
  after(async () => {
    await server.kill9(); // only if the SIGINT stop failed
    sandbox.cleanup();
  });

  it('closes the listener and exits with code 0', async () => {
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const exited = once(server.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    server.child.kill('SIGINT');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 5000);
    const [code, signal] = await exited;
    clearTimeout(timer);
    assert.deepEqual([code, signal], [0, null], server.stderr());
    await assert.rejects(fetch(`${server.url}/health`), 'nothing listens any more');
  });
});
