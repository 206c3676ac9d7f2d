/** Placeholder for the audit chain part of `npm run bench:scale` (built on another branch, merged over this file). */
import type { ScalePart } from './types.js';

export const benchAuditScale: ScalePart = () => {
  throw new Error('not built yet');
};
