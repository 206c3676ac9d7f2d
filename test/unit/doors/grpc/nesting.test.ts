import { status } from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deployDescriptor } from '../../../../src/app/use-cases/proto.js';
import { openDb, type Db } from '../../../../src/store/sqlite/db.js';
import { SqliteDescriptorsStore } from '../../../../src/store/sqlite/sqlite-descriptors-store.js';
import { registryMigrations } from '../../../../src/store/sqlite/migrations/registry.js';
import { startGrpcDoor, type GrpcDoor } from '../../../../src/doors/grpc/server.js';
import { descriptorSetFromProto, testClient, type GreeterTestClient } from '../../../helpers/grpc.js';

/** A recursive message: each level of Node nests the JSON two levels (the object, its `kids` list). */
const TREE_PROTO = `
syntax = "proto3";
package tree.v1;
message Node { string name = 1; repeated Node kids = 2; }
service Trees { rpc Echo (Node) returns (Node); }
`;

function varint(n: number): number[] {
  const out: number[] = [];
  for (; n > 0x7f; n >>>= 7) out.push((n & 0x7f) | 0x80);
  out.push(n);
  return out;
}

/**
 * The wire bytes of `levels` Nodes, each the only kid of the one above, written by hand: protobufjs
 * refuses to encode past its own recursion limit, and a hostile client has no such limit.
 */
function nestedNodes(levels: number): Buffer {
  let bytes = Buffer.from([0x0a, 4, ...Buffer.from('leaf')]);
  for (let i = 1; i < levels; i++) bytes = Buffer.concat([Buffer.from([0x12, ...varint(bytes.length)]), bytes]);
  return bytes;
}

/** JSON levels of a request of `levels` Nodes: an object and its `kids` list per Node (the leaf's list is empty, defaults included). */
const jsonLevels = (levels: number) => 2 * levels;

describe('gRPC door: requests nesting deeper than the JSON limit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-grpc-nesting-'));
  let db: Db;
  let repo: SqliteDescriptorsStore;
  let door: GrpcDoor;
  let client: GreeterTestClient;
  const inputs: unknown[] = [];

  before(async () => {
    db = openDb(join(dir, 'registry.db'), registryMigrations);
    db.prepare(
      "INSERT INTO tenants (id, display_name, status, auth_methods, created_at) VALUES ('acme', 'Acme', 'active', '[\"api_key\"]', '2025-01-01T00:00:00Z')",
    ).run();
    repo = new SqliteDescriptorsStore(db);
    await deployDescriptor(repo, {
      tenant: 'acme',
      name: 'tree',
      version: '1',
      bytes: descriptorSetFromProto([TREE_PROTO]),
      latest: true,
    });
    door = await startGrpcDoor({
      host: '127.0.0.1',
      port: 0,
      deps: {
        routes: () => [{ tenant: 'acme', flow: 'echo', method: 'tree.v1.Trees/Echo' }],
        descriptors: repo,
        invoke: (_tenant, _flow, input) => {
          inputs.push(input);
          return Promise.resolve({ status: 200, output: { name: 'ok' } });
        },
      },
    });
    client = testClient(door.address, descriptorSetFromProto([TREE_PROTO]));
  });

  after(async () => {
    client.close();
    await door.close();
    repo.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cases: { what: string; levels: number; refused?: RegExp }[] = [
    { what: 'a small tree', levels: 3 },
    { what: 'a tree at the limit', levels: 64 },
    { what: 'a tree one Node past the limit', levels: 65, refused: /^request nests deeper than 128 levels$/ },
    {
      what: 'a tree past protobufjs’ own limit of 100 messages',
      levels: 150,
      refused: /^request is not a valid tree\.v1\.Node: maximum nesting depth exceeded$/,
    },
    {
      what: 'a tree 10,000 messages deep',
      levels: 10_000,
      refused: /^request is not a valid tree\.v1\.Node: maximum nesting depth exceeded$/,
    },
  ];

  for (const c of cases) {
    it(`${c.what} (${jsonLevels(c.levels)} JSON levels) ${c.refused ? 'is refused with INVALID_ARGUMENT before the flow runs' : 'reaches the flow'}`, async () => {
      inputs.length = 0;
      const call = client.unaryRaw('tree.v1.Trees/Echo', nestedNodes(c.levels));
      if (c.refused === undefined) {
        await call;
        assert.equal(inputs.length, 1);
        return;
      }
      await assert.rejects(call, (err: { code?: number; details?: string }) => {
        assert.equal(err.code, status.INVALID_ARGUMENT);
        assert.match(err.details ?? '', c.refused!);
        return true;
      });
      assert.deepEqual(inputs, [], 'the flow never ran');
    });
  }
});
