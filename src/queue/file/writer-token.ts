/**
 * This process's mark on the records it appends with a receipt (SegmentRecord.w): a reader that
 * finds its own mark knows this process recorded the receipt when it acknowledged the message, and
 * one that finds another's cannot know whether that process lived to (queue-consumer.ts). Random,
 * not the pid: a pid is reused by a later process, which would take a dead one's records for its own.
 */
import { randomBytes } from 'node:crypto';

export const THIS_WRITER = randomBytes(6).toString('base64url');
