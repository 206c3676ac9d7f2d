/**
 * A `--import` preload standing for a misconfigured OpenTelemetry SDK (the 3.x SDK given a 2.x-style
 * span processor): its `forceFlush` rejects with an array of errors, as the SDK's batch processor
 * does, and it keeps a referenced timer running, as that SDK was seen to after a failed export.
 */
import { RecordingTracerProvider } from './recording-tracer.js';

class FailingSdk extends RecordingTracerProvider {
  readonly #timer = setInterval(() => undefined, 1000);

  forceFlush(): Promise<void> {
    return Promise.reject([new TypeError("Cannot read properties of undefined (reading 'export')")]);
  }
}

if (!new FailingSdk().register()) throw new Error('otel-failing-preload: a tracer provider was registered already');
