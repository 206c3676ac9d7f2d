/** Worker thread of scrypt-thread.ts: derives scrypt keys one at a time, on this thread alone. */
import { scryptSync, type ScryptOptions } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import type { ScryptReply, ScryptRequest } from './scrypt-thread.js';

const port = parentPort;
if (port === null) throw new Error('scrypt-thread-worker.js must run as a worker thread');
port.on('message', (m: ScryptRequest) => {
  let reply: ScryptReply;
  try {
    const opts: ScryptOptions = m.opts;
    const key = scryptSync(m.password, Buffer.from(m.salt), m.keyBytes, opts);
    reply = { id: m.id, key: new Uint8Array(key) };
  } catch (err) {
    reply = { id: m.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});
