/**
 * V8 limits of the writer threads (event log, audit). Their garbage is short-lived batches, but
 * under a long steady load (a 1,000,000-message drain) V8 grew each thread's young generation to
 * its default ceiling, 32 MiB of resident memory per thread that the writes do not need.
 */
import type { ResourceLimits } from 'node:worker_threads';

export const WRITER_THREAD_LIMITS: ResourceLimits = Object.freeze({ maxYoungGenerationSizeMb: 8 });
