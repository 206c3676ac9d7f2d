/** Placeholder for the event log part of `npm run bench:scale` (built on another branch, merged over this file). */
import type { ScalePart } from './types.js';

export const benchLogScale: ScalePart = () => {
  throw new Error('not built yet');
};
