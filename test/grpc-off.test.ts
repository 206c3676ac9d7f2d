/** `svc serve` without `--grpc-port`: nothing listens for gRPC, and inbound flows leave a warning. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTenant, deployFlow } from './helpers/registry-setup.js';
import { HELLO_FLOW } from './helpers/grpc.js';
import { makeSandbox, startServer, type ServerProcess } from './helpers/svc.js';

describe('svc serve without --grpc-port', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  before(async () => {
    createTenant(sandbox, 'acme');
    deployFlow(sandbox, HELLO_FLOW);
    server = await startServer(sandbox, ['--no-auth'], { RUST_LOG: 'warn' });
  });
  after(async () => {
    await server.stop();
    sandbox.cleanup();
  });

  it('opens no gRPC door and says so in the boot output', () => {
    assert.doesNotMatch(server.output(), /grpc listening/);
    assert.match(server.output(), /grpc: +off \(--grpc-port not given\)/);
  });

  it('warns in the log about a deployed flow with inbound:', async () => {
    await server.stop();
    assert.match(server.stderr(), /flow acme\/hello declares inbound: grpc .*start svc serve with --grpc-port/);
  });
});
