/** The server-wide shared-secret signature: hex HMAC-SHA256 of the raw body, compared in constant time. */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SvcError } from '../common/errors.js';

const HEX = /^[0-9a-fA-F]+$/;

export function signBody(secret: string, body: Buffer | string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/** True when `header` is the hex HMAC of `body`; missing, non-hex and wrong-length values are false. */
export function signatureMatches(secret: string, body: Buffer, header: string | undefined): boolean {
  if (header === undefined || header.length !== 64 || !HEX.test(header)) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  return timingSafeEqual(expected, Buffer.from(header, 'hex'));
}

export function signatureMismatch(): SvcError {
  return new SvcError('SVC_ERR_SIGNATURE_MISMATCH', 'signature mismatch');
}
