import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { QueueFigures } from '../app/use-cases/dlq.js';
import { boundedQueueLabels, UNDEPLOYED_FLOW_LABEL } from './metrics-wiring.js';

const q = (tenant: string, flow: string, pending: number, retries = 0, dead = 0): QueueFigures => ({
  tenant,
  flow,
  total: pending,
  processed: 0,
  pending,
  retriesScheduled: retries,
  retries: [],
  deadLettersPending: dead,
  worker: undefined,
});

const CASES: {
  name: string;
  figures: QueueFigures[];
  deployed: string[];
  want: [string, string, number, number, number][];
}[] = [
  {
    name: 'deployed flows keep their own labels',
    figures: [q('acme', 'a', 1), q('acme', 'b', 2)],
    deployed: ['acme/a', 'acme/b'],
    want: [
      ['acme', 'a', 1, 0, 0],
      ['acme', 'b', 2, 0, 0],
    ],
  },
  {
    name: 'flows not deployed are summed per tenant',
    figures: [q('acme', 'x', 1, 1, 0), q('acme', 'y', 2, 0, 3), q('beta', 'z', 5)],
    deployed: [],
    want: [
      ['acme', UNDEPLOYED_FLOW_LABEL, 3, 1, 3],
      ['beta', UNDEPLOYED_FLOW_LABEL, 5, 0, 0],
    ],
  },
  {
    name: 'both kinds side by side',
    figures: [q('acme', 'a', 1), q('acme', 'x', 4)],
    deployed: ['acme/a'],
    want: [
      ['acme', 'a', 1, 0, 0],
      ['acme', UNDEPLOYED_FLOW_LABEL, 4, 0, 0],
    ],
  },
];

describe('boundedQueueLabels', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const out = boundedQueueLabels(c.figures, (t, f) => c.deployed.includes(`${t}/${f}`));
      assert.deepEqual(
        out.map((f) => [f.tenant, f.flow, f.pending, f.retriesScheduled, f.deadLettersPending]),
        c.want,
      );
    });
  }
});
