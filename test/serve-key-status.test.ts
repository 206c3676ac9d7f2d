/** Black-box: the boot output of `svc serve` says whether API keys are required and warns when none exists. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createKey, createTenant } from './helpers/registry-setup.js';
import { makeSandbox, startServer, type Sandbox, type ServerProcess } from './helpers/svc.js';

/**
 * Starts the server and waits for one /health answer: `svc serve` prints its boot line just before
 * it installs its signal handlers, so a SIGTERM sent the instant the line appears can kill it.
 */
async function boot(sb: Sandbox, args: string[] = []): Promise<ServerProcess> {
  const server = await startServer(sb, args);
  assert.equal((await fetch(`${server.url}/health`)).status, 200);
  return server;
}

describe('svc serve: API key status at boot', () => {
  it('with the gate on and no key at all, warns and names svc keys create', async () => {
    const sb = makeSandbox();
    const server = await boot(sb);
    try {
      assert.match(server.output(), /api keys:\s+required/);
      assert.match(server.output(), /WARNING: no API key exists.*svc keys create --tenant <t> --label <l>/);
    } finally {
      assert.equal(await server.stop(), 0);
      sb.cleanup();
    }
  });

  it('with a key in the table (even a revoked one), boots without the warning', async () => {
    const sb = makeSandbox();
    createTenant(sb, 'acme');
    createKey(sb, 'acme');
    const server = await boot(sb);
    try {
      assert.match(server.output(), /api keys:\s+required/);
      assert.doesNotMatch(server.output(), /WARNING/);
    } finally {
      assert.equal(await server.stop(), 0);
      sb.cleanup();
    }
  });

  it('under --no-auth, says DISABLED and does not ask for a key', async () => {
    const sb = makeSandbox();
    const server = await boot(sb, ['--no-auth']);
    try {
      assert.match(server.output(), /api keys:\s+DISABLED/);
      assert.doesNotMatch(server.output(), /svc keys create/);
    } finally {
      assert.equal(await server.stop(), 0);
      sb.cleanup();
    }
  });
});
