/**
 * UI passwords: scrypt at OWASP's cost (N=2^17, r=8, p=1; 128 MiB, so `maxmem` is raised), a random
 * salt per password, compared in constant time. Stored as `scrypt$N$r$p$<salt>$<hash>` (base64url).
 * Derived on a thread of its own (scrypt-thread.ts), never on libuv's pool.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { scryptOnThread, type ScryptRequest } from './scrypt-thread.js';

const N = 2 ** 17;
const R = 8;
const P = 1;
const KEY_BYTES = 32;
/** 128 * N * r bytes are needed; leave room above it. */
const MAXMEM = 256 * 1024 * 1024;

function derive(password: string, salt: Buffer, opts: ScryptRequest['opts']): Promise<Buffer> {
  return scryptOnThread(password.normalize('NFC'), salt, KEY_BYTES, opts);
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P, maxmem: MAXMEM });
  return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when `password` matches `stored`; false for a malformed stored value (never throws on input). */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (!Number.isInteger(n) || !Number.isInteger(r) || !Number.isInteger(p) || expected.length !== KEY_BYTES)
    return false;
  const key = await derive(password, salt, { N: n, r, p, maxmem: MAXMEM });
  return timingSafeEqual(key, expected);
}

let dummy: Promise<string> | undefined;

/** A hash of a random password (made on first use), checked when a username is unknown, so a login costs the same either way. */
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  return dummy;
}

/** The password rules: at least 12 characters, at most 1024. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < 12) return 'a password needs at least 12 characters';
  if (password.length > 1024) return 'a password may have at most 1024 characters';
  return undefined;
}
