/**
 * scrypt on a thread of its own, not on libuv's pool. `crypto.scrypt` runs on the pool's four
 * threads, which the durable queue write (its fdatasync) needs too: measured, 60 logins posted at
 * once held `/enqueue` at a p50 of 4.6 s and a maximum of 13.5 s. Here hashes take turns on one
 * thread (one core at most, 128 MiB each), and the pool stays the queue's.
 */
import { Worker } from 'node:worker_threads';

/** What the worker is asked: a key of `keyBytes` for `password` and `salt`. */
export interface ScryptRequest {
  readonly id: number;
  readonly password: string;
  readonly salt: Uint8Array;
  readonly keyBytes: number;
  readonly opts: { readonly N: number; readonly r: number; readonly p: number; readonly maxmem: number };
}

export type ScryptReply =
  { readonly id: number; readonly key: Uint8Array } | { readonly id: number; readonly error: string };

type Waiter = { resolve: (key: Buffer) => void; reject: (err: Error) => void };

let worker: Worker | undefined;
const waiters = new Map<number, Waiter>();
let nextId = 1;

function thread(): Worker {
  if (worker !== undefined) return worker;
  const w = new Worker(new URL('./scrypt-thread-worker.js', import.meta.url));
  w.unref();
  w.on('message', (reply: ScryptReply) => {
    const waiter = waiters.get(reply.id);
    waiters.delete(reply.id);
    if (waiters.size === 0) w.unref();
    if ('error' in reply) waiter?.reject(new Error(`scrypt failed: ${reply.error}`));
    else waiter?.resolve(Buffer.from(reply.key.buffer, reply.key.byteOffset, reply.key.byteLength));
  });
  const fail = (err: Error): void => {
    // A thread that died fails what it held; the next hash starts another.
    if (worker === w) worker = undefined;
    for (const waiter of waiters.values()) waiter.reject(err);
    waiters.clear();
  };
  w.on('error', fail);
  w.on('exit', (code) => fail(new Error(`the scrypt thread exited (code ${code})`)));
  worker = w;
  return w;
}

/** scrypt(password, salt) on the scrypt thread. */
export function scryptOnThread(
  password: string,
  salt: Buffer,
  keyBytes: number,
  opts: ScryptRequest['opts'],
): Promise<Buffer> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiters.set(id, { resolve, reject });
    const w = thread();
    w.ref();
    w.postMessage({ id, password, salt: new Uint8Array(salt), keyBytes, opts } satisfies ScryptRequest);
  });
}
