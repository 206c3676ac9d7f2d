/** Placeholder for the queue backlog part of `npm run bench:scale` (built on another branch, merged over this file). */
import type { ScalePart } from './types.js';

export const benchQueueScale: ScalePart = () => {
  throw new Error('not built yet');
};
