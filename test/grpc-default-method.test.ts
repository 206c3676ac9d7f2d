/**
 * A flow with `inbound: grpc` and no `grpc_method` answers the method named like the flow in its
 * tenant's latest descriptors (case, `-` and `_` ignored; the descriptor deployed last wins), through
 * the real `svc serve --grpc-port 0` and a real gRPC client.
 */
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { descriptorSetFromProto, testClient, type GreeterTestClient } from './helpers/grpc.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';

const FIRST_PROTO = `
syntax = "proto3";
package first.v1;
message Req { string who = 1; }
message Rep { string text = 1; }
service Greeter { rpc SayHello (Req) returns (Rep); rpc Other (Req) returns (Rep); }
`;
/** Deployed after FIRST_PROTO, so its SayHello wins; two services define it, and `Alpha` sorts first. */
const SECOND_PROTO = `
syntax = "proto3";
package second.v1;
message Req { string who = 1; }
message Rep { string text = 1; }
service Zulu { rpc SayHello (Req) returns (Rep); }
service Alpha { rpc SayHello (Req) returns (Rep); }
`;

const flowText = (name: string, body: string) => `---
flowdoc_version: "0.1"
flow: ${name}
tenant: acme
inbound: grpc
---

## Step: answer
\`\`\`ntd
${body}
\`\`\`
`;

describe('a gRPC flow without grpc_method', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let first: GreeterTestClient;
  let second: GreeterTestClient;
  let key = '';
  const auth = () => ({ authorization: `Bearer ${key}` });

  before(async () => {
    const ok = (args: string[]) => {
      const r = svc(sandbox, [...args, '--db', sandbox.db]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };
    ok(['tenant', 'create', '--id', 'acme', '--display-name', 'Acme']);
    // Named so that a tie on the deployment second (broken by descriptor name) still puts `a-second` first.
    for (const [name, proto] of [
      ['first', FIRST_PROTO],
      ['a-second', SECOND_PROTO],
    ] as const) {
      const path = join(sandbox.home, `${name}.pb`);
      writeFileSync(path, descriptorSetFromProto([proto]));
      ok(['proto', 'deploy', path, '--tenant', 'acme', '--name', name, '--version', '1', '--latest']);
    }
    for (const [name, body] of [
      ['say-hello', '{"text": "hello {{ ctx.input.who }}"}'],
      ['no-such-method', '{"text": "never"}'],
    ] as const) {
      const path = join(sandbox.home, `${name}.flow.md`);
      writeFileSync(path, flowText(name, body));
      ok(['deploy', path, '-v', '1.0.0']);
    }
    key = /svk_[A-Za-z0-9_-]+/.exec(ok(['keys', 'create', '--tenant', 'acme', '--label', 'grpc']))![0];
    server = await startServer(sandbox, ['--grpc-port', '0']);
    const address = /grpc listening on (127\.0\.0\.1:\d+)/.exec(server.output())?.[1];
    assert.ok(address, server.output());
    first = testClient(address, descriptorSetFromProto([FIRST_PROTO]));
    second = testClient(address, descriptorSetFromProto([SECOND_PROTO]));
  });
  after(async () => {
    first?.close();
    second?.close();
    await server?.stop();
    sandbox.cleanup();
  });

  it('answers the method named like the flow, from the descriptor deployed last, its service first by full name', async () => {
    assert.deepEqual(await second.unary('second.v1.Alpha/SayHello', { who: 'Ada' }, auth()), { text: 'hello Ada' });
  });

  it('answers no other method of that name', async () => {
    for (const [client, method] of [
      [second, 'second.v1.Zulu/SayHello'],
      [first, 'first.v1.Greeter/SayHello'],
    ] as const) {
      await assert.rejects(
        client.unary(method, { who: 'Ada' }, auth()),
        (err: { code: number }) => err.code === status.UNIMPLEMENTED,
      );
    }
  });

  it('goes through the same gate as every door', async () => {
    await assert.rejects(
      second.unary('second.v1.Alpha/SayHello', { who: 'Ada' }),
      (err: { code: number }) => err.code === status.UNAUTHENTICATED,
    );
  });

  it('is unreachable, and the log says why, when no latest descriptor defines a method named like it', () => {
    assert.match(
      server.stderr(),
      /gRPC flow acme\/no-such-method has no grpc_method, and no latest descriptor of tenant acme defines a method named like the flow/,
    );
  });
});
