/** The one SHA-256 helper: hex digest of bytes or UTF-8 text, in a single native call. */
import { hash } from 'node:crypto';

/** Hex SHA-256 of `data` (a string is hashed as UTF-8). */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}
