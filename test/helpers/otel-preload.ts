/**
 * A `--import` preload for `svc serve` in tests, the way an operator plugs in an SDK
 * (docs/observability.md): registers the in-memory provider before the service loads, and appends
 * each ended span as one JSON line to the file named by SVC_TEST_SPANS_FILE.
 */
import { appendFileSync } from 'node:fs';
import { RecordingTracerProvider } from './recording-tracer.js';

const file = process.env.SVC_TEST_SPANS_FILE;
if (file === undefined) throw new Error('otel-preload: SVC_TEST_SPANS_FILE is not set');
const provider = new RecordingTracerProvider();
provider.onEnd = (span) => appendFileSync(file, `${JSON.stringify(span)}\n`);
if (!provider.register()) throw new Error('otel-preload: a tracer provider was registered already');
