/**
 * Black-box: the gRPC door of a `svc serve --store` node. Descriptors and an `inbound: grpc` flow
 * are published with the CLI on the store; a real gRPC client calls the method; a new descriptor
 * version published on the store afterwards is picked up by the running node (its registry copy
 * follows the change log), with no restart.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freshPgSchema, type PgSchema } from './helpers/pg.js';
import {
  greeterSet,
  GREETER_SERVICE_PROTO_V2,
  HELLO_FLOW,
  testClient,
  type GreeterTestClient,
} from './helpers/grpc.js';
import { makeSandbox, startServer, svc, type Sandbox, type ServerProcess } from './helpers/svc.js';
import { waitFor } from './helpers/wait.js';

let schema: PgSchema;
let sb: Sandbox;
let server: ServerProcess;
let client: GreeterTestClient;
let key: string;

function must(args: string[]): string {
  const r = svc(sb, [...args, '--store', schema.url]);
  assert.equal(r.code, 0, `svc ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

before(async () => {
  schema = await freshPgSchema();
  sb = makeSandbox();
  must(['tenant', 'create', '--id', 'acme', '--display-name', 'Acme']);
  key = /svk_[0-9a-f]{32}/.exec(must(['keys', 'create', '--tenant', 'acme', '--label', 'grpc']))![0];
  const setPath = join(sb.home, 'greeter.pb');
  writeFileSync(setPath, greeterSet());
  must(['proto', 'deploy', setPath, '--tenant', 'acme', '--name', 'greeter', '--version', '1', '--latest']);
  const flowPath = join(sb.home, 'hello.flow.md');
  writeFileSync(flowPath, HELLO_FLOW);
  must(['deploy', flowPath, '-v', '1']);
  server = await startServer(sb, ['--store', schema.url, '--grpc-port', '0']);
  const address = /grpc listening on (127\.0\.0\.1:\d+)/.exec(server.output())![1]!;
  client = testClient(address, greeterSet());
});

after(async () => {
  client?.close();
  await server?.stop();
  sb?.cleanup();
  await schema?.drop();
});

test('a unary call runs the flow, the method resolved from the descriptors in the store', async () => {
  const reply = await client.unary('demo.v1.Greeter/SayHello', { user_name: 'pg' }, { authorization: `Bearer ${key}` });
  assert.equal(reply.message, 'hello pg');
});

test('a descriptor version published on the store later is used by the running node', async () => {
  const v2 = join(sb.home, 'greeter-v2.pb');
  writeFileSync(v2, greeterSet(GREETER_SERVICE_PROTO_V2));
  must(['proto', 'deploy', v2, '--tenant', 'acme', '--name', 'greeter', '--version', '2', '--latest']);
  // Version 2 moves HelloReply.message to field 7: a v1 client decodes the answer without it.
  await waitFor(
    'the node answers with the new descriptor',
    async () =>
      (await client.unary('demo.v1.Greeter/SayHello', { user_name: 'pg' }, { authorization: `Bearer ${key}` }))
        .message === '',
    5000,
    100,
  );
});
