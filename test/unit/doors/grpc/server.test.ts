import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deployDescriptor } from '../../../../src/app/use-cases/proto.js';
import { SvcError } from '../../../../src/common/errors.js';
import { Gate, hashApiKey, type GateKey, type GateRefusal } from '../../../../src/gate/gate.js';
import { openDb, type Db } from '../../../../src/store/sqlite/db.js';
import { SqliteDescriptorsStore } from '../../../../src/store/sqlite/sqlite-descriptors-store.js';
import { registryMigrations } from '../../../../src/store/sqlite/migrations/registry.js';
import {
  startGrpcDoor,
  type GrpcDoor,
  type GrpcInvokeMeta,
  type GrpcRoute,
} from '../../../../src/doors/grpc/server.js';
import { greeterSet, GREETER_SERVICE_PROTO_V2, testClient, type GreeterTestClient } from '../../../helpers/grpc.js';

const KEYS: Record<string, GateKey> = {
  [hashApiKey('acme-key')]: { id: 1, tenant: 'acme', scopes: ['*'], flows: [], revoked: false },
  [hashApiKey('other-key')]: { id: 2, tenant: 'other', scopes: ['*'], flows: [], revoked: false },
};

describe('gRPC door (in-process, fake engine)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-grpc-unit-'));
  let db: Db;
  let repo: SqliteDescriptorsStore;
  let door: GrpcDoor;
  let client: GreeterTestClient;
  const refusals: GateRefusal[] = [];
  const calls: Array<{ flow: string; input: unknown; meta: GrpcInvokeMeta }> = [];
  const routes: GrpcRoute[] = [
    { tenant: 'acme', flow: 'hello', method: 'demo.v1.Greeter/SayHello' },
    { tenant: 'acme', flow: 'many', method: 'demo.v1.Greeter/SayMany' },
    { tenant: 'acme', flow: 'upload', method: 'demo.v1.Greeter/Upload' },
  ];
  const auth = { authorization: 'Bearer acme-key' };

  before(async () => {
    db = openDb(join(dir, 'registry.db'), registryMigrations);
    db.prepare(
      "INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ('acme', 'Acme', 'active', '[\"api_key\"]', '2025-01-01T00:00:00Z')",
    ).run();
    repo = new SqliteDescriptorsStore(db);
    await deployDescriptor(repo, {
      tenant: 'acme',
      name: 'greeter',
      version: '1.0.0',
      bytes: greeterSet(),
      latest: true,
    });
    const gate = new Gate(
      {
        findKeyByHash: (h) => KEYS[h],
        tenantStatus: (t) => (t === 'acme' || t === 'other' ? 'active' : undefined),
        latestFlow: () => undefined,
      },
      { refused: (r) => refusals.push(r) },
    );
    door = await startGrpcDoor({
      host: '127.0.0.1',
      port: 0,
      deps: {
        routes: () => routes,
        gate,
        descriptors: repo,
        invoke: async (_tenant, flow, input, meta) => {
          calls.push({ flow, input, meta });
          const req = input as { user_name: string; count: string; mood: string };
          if (req.user_name === 'boom') throw new SvcError('SVC_ERR_EGRESS_FAILED', 'backend answered 500');
          if (req.user_name === 'teapot')
            return { status: 422, output: { ok: false, error: 'user_name is not acceptable' } };
          if (req.user_name === 'shapeless') return { status: 200, output: { message: { nested: true } } };
          if (flow === 'many')
            return {
              status: 200,
              output: Array.from({ length: Number(req.count) }, (_, i) => ({
                message: `#${i} ${req.user_name}`,
                n: i,
              })),
            };
          return { status: 200, output: { message: `hello ${req.user_name}`, n: req.count, mood: req.mood } };
        },
      },
    });
    client = testClient(door.address, greeterSet());
  });

  after(async () => {
    client.close();
    await door.close();
    repo.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a unary call runs the flow with the request as JSON and answers its output', async () => {
    const reply = await client.unary(
      'demo.v1.Greeter/SayHello',
      { user_name: 'ada', count: '9007199254740993', mood: 'HAPPY' },
      { ...auth, 'x-correlation-id': 'corr-1' },
    );
    assert.deepEqual(reply, { message: 'hello ada', n: '9007199254740993', mood: 'HAPPY' });
    const call = calls.at(-1)!;
    assert.equal(call.flow, 'hello');
    assert.deepEqual(call.input, { user_name: 'ada', count: '9007199254740993', mood: 'HAPPY', tags: [], tip: null });
    assert.equal(call.meta.correlationId, 'corr-1');
    assert.equal(call.meta.headers.authorization, undefined, 'the credential never reaches the flow');
  });

  it('a call without a correlation id gets a fresh UUID', async () => {
    await client.unary('demo.v1.Greeter/SayHello', { user_name: 'ada' }, auth);
    assert.match(
      calls.at(-1)!.meta.correlationId,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it('a server-streaming call sends one message per element of a list output', async () => {
    const got = await client.serverStream('demo.v1.Greeter/SayMany', { user_name: 'bo', count: 3 }, auth);
    assert.deepEqual(
      got.map((m) => [m.message, m.n]),
      [
        ['#0 bo', '0'],
        ['#1 bo', '1'],
        ['#2 bo', '2'],
      ],
    );
  });

  it('a server-streaming call with an empty list output ends with OK and no message', async () => {
    assert.deepEqual(await client.serverStream('demo.v1.Greeter/SayMany', { user_name: 'bo', count: 0 }, auth), []);
  });

  it('a call without a key gets UNAUTHENTICATED and the flow does not run', async () => {
    const before = calls.length;
    await assert.rejects(client.unary('demo.v1.Greeter/SayHello', { user_name: 'x' }), {
      code: status.UNAUTHENTICATED,
      details: 'unauthorized',
    });
    assert.equal(calls.length, before);
    assert.equal(refusals.at(-1)!.reason, 'missing Authorization header');
  });

  it('a wrong key gets UNAUTHENTICATED', async () => {
    await assert.rejects(
      client.unary('demo.v1.Greeter/SayHello', { user_name: 'x' }, { authorization: 'Bearer nope' }),
      { code: status.UNAUTHENTICATED },
    );
    assert.equal(refusals.at(-1)!.reason, 'unknown API key');
  });

  it('a key of another tenant gets UNAUTHENTICATED: the tenant comes from the routed flow', async () => {
    await assert.rejects(
      client.serverStream(
        'demo.v1.Greeter/SayMany',
        { user_name: 'x', count: 1 },
        { authorization: 'Bearer other-key' },
      ),
      { code: status.UNAUTHENTICATED },
    );
    assert.equal(refusals.at(-1)!.tenant, 'acme');
  });

  it('an unknown method gets UNIMPLEMENTED', async () => {
    const other = testClient(door.address, greeterSet());
    try {
      await assert.rejects(other.unaryRaw('demo.v1.Nope/Missing', Buffer.alloc(0), auth), {
        code: status.UNIMPLEMENTED,
      });
      // Chat exists in the descriptor but no flow answers it.
      await assert.rejects(other.unaryRaw('demo.v1.Greeter/Chat', Buffer.alloc(0), auth), {
        code: status.UNIMPLEMENTED,
      });
    } finally {
      other.close();
    }
  });

  it('a client-streaming method is refused with UNIMPLEMENTED saying which kinds can be called', async () => {
    await assert.rejects(
      client.clientStream('demo.v1.Greeter/Upload', [{ user_name: 'a' }], auth),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, status.UNIMPLEMENTED);
        assert.match(err.details, /client-streaming; only unary and server-streaming methods can be called/);
        return true;
      },
    );
  });

  it('bytes that are not the request message get INVALID_ARGUMENT', async () => {
    await assert.rejects(
      client.unaryRaw('demo.v1.Greeter/SayHello', Buffer.from([0x0a, 0xff, 0xff, 0xff]), auth),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, status.INVALID_ARGUMENT);
        assert.match(err.details, /not a valid demo\.v1\.HelloRequest/);
        return true;
      },
    );
  });

  it('an engine failure maps its status through the table and carries its message', async () => {
    await assert.rejects(client.unary('demo.v1.Greeter/SayHello', { user_name: 'boom' }, auth), {
      code: status.UNAVAILABLE,
      details: 'backend answered 500',
    });
    await assert.rejects(client.unary('demo.v1.Greeter/SayHello', { user_name: 'teapot' }, auth), {
      code: status.INVALID_ARGUMENT,
      details: 'user_name is not acceptable',
    });
  });

  it('an output that does not fit the response message gets INTERNAL naming the type', async () => {
    await assert.rejects(
      client.unary('demo.v1.Greeter/SayHello', { user_name: 'shapeless' }, auth),
      (err: { code: number; details: string }) => {
        assert.equal(err.code, status.INTERNAL);
        assert.match(err.details, /demo\.v1\.HelloReply/);
        return true;
      },
    );
  });

  it('moving latest changes the wire format at the next call, and a version without --latest does not', async () => {
    const v2 = greeterSet(GREETER_SERVICE_PROTO_V2);
    await deployDescriptor(repo, { tenant: 'acme', name: 'greeter', version: '2.0.0', bytes: v2, latest: false });
    assert.equal((await client.unary('demo.v1.Greeter/SayHello', { user_name: 'cy' }, auth)).message, 'hello cy');
    await deployDescriptor(repo, { tenant: 'acme', name: 'greeter', version: '3.0.0', bytes: v2, latest: true });
    // The v1 client no longer finds `message` in field 1; a v2 client reads it from field 7.
    assert.equal((await client.unary('demo.v1.Greeter/SayHello', { user_name: 'cy' }, auth)).message, '');
    const v2client = testClient(door.address, v2);
    try {
      assert.equal((await v2client.unary('demo.v1.Greeter/SayHello', { user_name: 'cy' }, auth)).message, 'hello cy');
    } finally {
      v2client.close();
    }
  });

  it('a route added later is served after a refresh', async () => {
    routes.push({ tenant: 'acme', flow: 'chat', method: 'demo.v1.Greeter/SayHello' });
    door.refresh();
    // SayHello stays with the first route in (tenant, flow) order: 'chat' < 'hello'.
    await client.unary('demo.v1.Greeter/SayHello', { user_name: 'dd' }, auth);
    assert.equal(calls.at(-1)!.flow, 'chat');
    routes.pop();
    door.refresh();
    await client.unary('demo.v1.Greeter/SayHello', { user_name: 'dd' }, auth);
    assert.equal(calls.at(-1)!.flow, 'hello');
  });
});
