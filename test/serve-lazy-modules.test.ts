/**
 * `svc serve` loads optional parts on first use (issue 22, start-up time): without --grpc-port no
 * gRPC or protobuf, without --metrics no prom-client, no JSON-schema compiler (no route declares a
 * schema), and undici only when a flow first calls out.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startHeaderBackend, RECORDED_CALL_STEP, type HeaderBackend } from './helpers/header-backend.js';
import { createKey, createTenant, deployFlow, flow } from './helpers/registry-setup.js';
import { makeSandbox, startServer } from './helpers/svc.js';

const PRELOAD = pathToFileURL(
  resolve(dirname(fileURLToPath(import.meta.url)), 'helpers/loaded-packages-preload.js'),
).href;
const OPTIONAL = ['@grpc/grpc-js', 'protobufjs', 'prom-client', 'ajv', 'undici'];

describe('svc serve loads optional parts on first use', () => {
  const sandbox = makeSandbox();
  const loadedFile = join(sandbox.home, 'loaded.json');
  let backend: HeaderBackend;
  let key = '';
  let calledOut: string[] = [];
  let quiet: string[] = [];

  const run = async (url: string, name: string) => {
    const res = await fetch(`${url}/flows/acme/${name}/run`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${key}`,
        'x-correlation-id': `lazy-${name}`,
      },
      body: '{"n":1}',
    });
    assert.equal(res.status, 200, await res.text());
  };

  /** Starts serve, runs `flowName` once, stops it, and returns the packages it had loaded. */
  const loadedAfterRun = async (flowName: string): Promise<string[]> => {
    const server = await startServer(sandbox, [], {
      BACKEND_URL: backend.url,
      NODE_OPTIONS: `--import=${PRELOAD}`,
      SVC_TEST_LOADED_FILE: loadedFile,
    });
    try {
      await run(server.url, flowName);
    } finally {
      assert.equal(await server.stop(), 0);
    }
    return JSON.parse(readFileSync(loadedFile, 'utf8')) as string[];
  };

  before(async () => {
    backend = await startHeaderBackend();
    createTenant(sandbox, 'acme');
    deployFlow(
      sandbox,
      flow('acme', 'plain', '', '## Step: check\n```validate\nhas(ctx.input.n) | n is required | syntactic\n```\n'),
    );
    deployFlow(sandbox, flow('acme', 'relay', 'effects: [http_egress]', RECORDED_CALL_STEP));
    key = createKey(sandbox, 'acme');
    quiet = await loadedAfterRun('plain');
    calledOut = await loadedAfterRun('relay');
  });

  after(async () => {
    await backend?.close();
    sandbox.cleanup();
  });

  it('a start without --grpc-port or --metrics, serving a flow that calls nothing out, loads none of them', () => {
    assert.ok(
      quiet.includes('fastify') && quiet.includes('better-sqlite3'),
      `the preload saw the service's packages: ${quiet.join(', ')}`,
    );
    assert.deepEqual(
      OPTIONAL.filter((p) => quiet.includes(p)),
      [],
    );
  });

  it('the first http_egress call loads undici, and still nothing else optional', () => {
    assert.equal(backend.calls('lazy-relay').length, 1);
    assert.deepEqual(
      OPTIONAL.filter((p) => calledOut.includes(p)),
      ['undici'],
    );
  });
});
