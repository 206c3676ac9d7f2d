/**
 * The gRPC door through the real `svc serve --grpc-port 0`: `svc tenant create`, `svc keys create`,
 * `svc proto deploy` and `svc deploy` of `inbound: grpc` flows, then calls with a real gRPC client.
 */
import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { descriptorSetFromProto, greeterSet, testClient, type GreeterTestClient } from './helpers/grpc.js';
import { createKey, createTenant, deployFlow } from './helpers/registry-setup.js';
import { makeSandbox, startServer, svc, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

const HELLO_FLOW = `---
flowdoc_version: "0.1"
flow: hello
tenant: acme
inbound: grpc
grpc_method: demo.v1.Greeter/SayHello
---

## Step: answer
\`\`\`ntd
{"message": "hello {{ ctx.input.user_name }}", "n": "{{ ctx.input.count }}"}
\`\`\`
`;

const MANY_FLOW = `---
flowdoc_version: "0.1"
flow: many
tenant: acme
inbound: grpc
grpc_method: demo.v1.Greeter/SayMany
---

## Step: answer
\`\`\`ntd
[{"message": "one {{ ctx.input.user_name }}"}, {"message": "two {{ ctx.input.user_name }}"}]
\`\`\`
`;

const CHECK_PROTO = `
syntax = "proto3";
package check.v1;
message Req { string id = 1; }
message Rep { string id = 1; string corr = 2; string ref = 3; }
message Tree { string id = 1; repeated Tree kids = 2; }
service Checker { rpc Check (Req) returns (Rep); rpc Late (Req) returns (Rep); rpc Listy (Req) returns (Rep); rpc Deep (Tree) returns (Rep); }
`;

const CHECK_FLOW = `---
flowdoc_version: "0.1"
flow: check
tenant: acme
required_scope: orders
inbound: grpc
grpc_method: check.v1.Checker/Check
---

## Step: check
\`\`\`validate
ctx.input.id != '' | id is required | syntactic
ctx.input.id != 'bad' | id is bad | semantic
\`\`\`

## Step: answer
\`\`\`ntd
{"id": "{{ ctx.input.id }}", "corr": "{{ ctx.correlation_id }}", "ref": "{{ ctx.headers['x-ref'] }}"}
\`\`\`
`;

const LISTY_FLOW = CHECK_FLOW.replace('flow: check', 'flow: listy')
  .replace('required_scope: orders\n', '')
  .replace('Checker/Check', 'Checker/Listy')
  .replace(/## Step: check[\s\S]*$/, '## Step: answer\n\`\`\`ntd\n[{"id": "a"}]\n\`\`\`\n');
const LATE_FLOW = LISTY_FLOW.replace('flow: listy', 'flow: late')
  .replace('Checker/Listy', 'Checker/Late')
  .replace('[{"id": "a"}]', '{"id": "late {{ ctx.input.id }}"}');

const DEEP_FLOW = LISTY_FLOW.replace('flow: listy', 'flow: deep')
  .replace('Checker/Listy', 'Checker/Deep')
  .replace('[{"id": "a"}]', '{"id": "deep {{ ctx.input.id }}"}');

/** A Tree of `n` nested messages: each adds an object and its `kids` array to the JSON form. */
const tree = (n: number): Record<string, unknown> => {
  let node: Record<string, unknown> = { id: 'leaf' };
  for (let i = 1; i < n; i++) node = { id: `n${i}`, kids: [node] };
  return node;
};

describe('svc serve --grpc-port 0', () => {
  const sandbox = makeSandbox();
  let server: ServerProcess;
  let grpcAddress: string;
  let client: GreeterTestClient;
  let apiKey = '';
  let readerKey = '';
  let otherTenantKey = '';
  let checker: GreeterTestClient;

  before(async () => {
    const setPath = join(sandbox.home, 'greeter.pb');
    writeFileSync(setPath, greeterSet());
    createTenant(sandbox, 'acme');
    const deployed = svc(sandbox, [
      'proto',
      'deploy',
      setPath,
      '--tenant',
      'acme',
      '--name',
      'greeter',
      '--version',
      '1.0.0',
      '--latest',
      '--db',
      sandbox.db,
    ]);
    assert.equal(deployed.code, 0, deployed.stderr);
    deployFlow(sandbox, HELLO_FLOW);
    deployFlow(sandbox, MANY_FLOW);
    apiKey = createKey(sandbox, 'acme');
    const checkPath = join(sandbox.home, 'check.pb');
    writeFileSync(checkPath, descriptorSetFromProto([CHECK_PROTO]));
    const checkDeployed = svc(sandbox, [
      'proto',
      'deploy',
      checkPath,
      '--tenant',
      'acme',
      '--name',
      'check',
      '--version',
      '1',
      '--latest',
      '--db',
      sandbox.db,
    ]);
    assert.equal(checkDeployed.code, 0, checkDeployed.stderr);
    deployFlow(sandbox, CHECK_FLOW);
    deployFlow(sandbox, LISTY_FLOW);
    deployFlow(sandbox, DEEP_FLOW);
    readerKey = createKey(sandbox, 'acme', { scopes: 'read' });
    createTenant(sandbox, 'globex');
    otherTenantKey = createKey(sandbox, 'globex');
    server = await startServer(sandbox, ['--grpc-port', '0']);
    const m = /grpc listening on (127\.0\.0\.1:(\d+))/.exec(server.output());
    assert.ok(m, `no grpc boot line in:\n${server.output()}`);
    grpcAddress = m[1]!;
    client = testClient(grpcAddress, greeterSet());
    checker = testClient(grpcAddress, descriptorSetFromProto([CHECK_PROTO]));
  });

  after(async () => {
    client?.close();
    checker?.close();
    await server?.stop();
    sandbox.cleanup();
  });

  it('announces the port the system chose on stdout', () => {
    const port = Number(grpcAddress.split(':')[1]);
    assert.ok(port > 0 && port !== server.port);
  });

  it('an unknown method gets UNIMPLEMENTED from the real server, with or without a key', async () => {
    await assert.rejects(client.unaryRaw('demo.v1.Nope/Missing', Buffer.alloc(0)), { code: status.UNIMPLEMENTED });
    await assert.rejects(
      client.unaryRaw('demo.v1.Nope/Missing', Buffer.alloc(0), { authorization: `Bearer ${apiKey}` }),
      { code: status.UNIMPLEMENTED },
    );
  });

  it('a method of the latest descriptor that no flow answers gets UNIMPLEMENTED', async () => {
    await assert.rejects(client.unaryRaw('demo.v1.Greeter/Chat', Buffer.alloc(0)), { code: status.UNIMPLEMENTED });
  });

  it('a unary call answers the flow output encoded with the descriptor', async () => {
    const reply = await client.unary(
      'demo.v1.Greeter/SayHello',
      { user_name: 'ada', count: 2 },
      { authorization: `Bearer ${apiKey}` },
    );
    assert.equal(reply.message, 'hello ada');
    assert.equal(reply.n, '2');
  });

  it('a server-streaming call sends one message per element of the list output', async () => {
    const got = await client.serverStream(
      'demo.v1.Greeter/SayMany',
      { user_name: 'bo' },
      { authorization: `Bearer ${apiKey}` },
    );
    assert.deepEqual(
      got.map((x) => x.message),
      ['one bo', 'two bo'],
    );
  });

  it('a call without a key gets UNAUTHENTICATED', async () => {
    await assert.rejects(client.unary('demo.v1.Greeter/SayHello', { user_name: 'x' }), {
      code: status.UNAUTHENTICATED,
    });
  });

  it('a wrong key gets UNAUTHENTICATED', async () => {
    await assert.rejects(
      client.unary('demo.v1.Greeter/SayHello', { user_name: 'x' }, { authorization: 'Bearer not-a-key' }),
      { code: status.UNAUTHENTICATED },
    );
  });

  it('a key of another tenant gets UNAUTHENTICATED; a key without the required scope gets PERMISSION_DENIED', async () => {
    await assert.rejects(
      checker.unary('check.v1.Checker/Check', { id: 'x' }, { authorization: `Bearer ${otherTenantKey}` }),
      { code: status.UNAUTHENTICATED },
    );
    await assert.rejects(
      checker.unary('check.v1.Checker/Check', { id: 'x' }, { authorization: `Bearer ${readerKey}` }),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, status.PERMISSION_DENIED);
        assert.match(err.details, /insufficient scope/);
        return true;
      },
    );
  });

  it('the correlation ID and other metadata reach the flow', async () => {
    const reply = await checker.unary(
      'check.v1.Checker/Check',
      { id: 'o-1' },
      { authorization: `Bearer ${apiKey}`, 'x-correlation-id': 'corr-g1', 'x-ref': 'r9' },
    );
    assert.deepEqual(reply, { id: 'o-1', corr: 'corr-g1', ref: 'r9' });
  });

  it('a syntactic and a semantic validate rejection both map to INVALID_ARGUMENT with the message', async () => {
    for (const [id, message] of [
      ['', 'id is required'],
      ['bad', 'id is bad'],
    ]) {
      await assert.rejects(
        checker.unary('check.v1.Checker/Check', { id }, { authorization: `Bearer ${apiKey}` }),
        (err: { code: number; details: string }) => {
          assert.equal(err.code, status.INVALID_ARGUMENT);
          assert.match(err.details, new RegExp(message));
          return true;
        },
      );
    }
  });

  it('a request whose JSON form nests deeper than 128 levels gets INVALID_ARGUMENT, within protobufjs own limit of 100 messages; a shallow one runs', async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    assert.deepEqual(await checker.unary('check.v1.Checker/Deep', tree(10), auth), {
      id: 'deep n9',
      corr: '',
      ref: '',
    });
    // 90 messages: 179 levels of objects and arrays, which protobufjs decodes but the door refuses.
    await assert.rejects(
      checker.unary('check.v1.Checker/Deep', tree(90), auth),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, status.INVALID_ARGUMENT);
        assert.equal(err.details, 'request nests deeper than 128 levels');
        return true;
      },
    );
  });

  it('a unary method whose flow answers a list fails with INTERNAL', async () => {
    await assert.rejects(checker.unary('check.v1.Checker/Listy', { id: 'x' }, { authorization: `Bearer ${apiKey}` }), {
      code: status.INTERNAL,
    });
  });

  it('a flow deployed while the server runs is routed without a restart', async () => {
    await assert.rejects(checker.unary('check.v1.Checker/Late', { id: 'x' }, { authorization: `Bearer ${apiKey}` }), {
      code: status.UNIMPLEMENTED,
    });
    deployFlow(sandbox, LATE_FLOW);
    const reply = await waitFor(
      'the late flow answering',
      () => checker.unary('check.v1.Checker/Late', { id: 'x' }, { authorization: `Bearer ${apiKey}` }),
      4000,
      100,
    );
    assert.deepEqual(reply, { id: 'late x', corr: '', ref: '' });
  });

  it('stops cleanly on SIGTERM with the gRPC door open', async () => {
    assert.equal(await server.stop(), 0);
  });
});
