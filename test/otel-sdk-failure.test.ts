/**
 * An OpenTelemetry SDK that fails its last export, and holds the event loop with a timer of its
 * own, costs a warning at shutdown: `svc serve` still stops cleanly (exit 0), within its grace,
 * and says why the spans were not exported (docs/observability.md).
 */
import assert from 'node:assert/strict';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { makeSandbox, startServer } from './helpers/svc.js';

const PRELOAD = pathToFileURL(resolve(dirname(fileURLToPath(import.meta.url)), 'helpers/otel-failing-preload.js')).href;

describe('an OpenTelemetry SDK whose last export fails', () => {
  it('svc serve warns with the cause and still exits 0 on SIGTERM, however the SDK holds the event loop', async () => {
    const sandbox = makeSandbox();
    try {
      const server = await startServer(sandbox, [], { NODE_OPTIONS: `--import=${PRELOAD}` });
      assert.match(server.output(), /traces: +OpenTelemetry SDK registered/);
      const started = Date.now();
      // The helper's stop sends SIGKILL after 5 s: an exit code (not null) means it ended by itself.
      const code = await server.stop();
      assert.equal(code, 0, server.stderr());
      assert.ok(Date.now() - started < 5000);
      assert.match(
        server.stderr(),
        /the OpenTelemetry SDK did not export its last spans: Cannot read properties of undefined \(reading 'export'\)/,
      );
      assert.doesNotMatch(server.stderr(), /did not stop cleanly/);
    } finally {
      sandbox.cleanup();
    }
  });
});
