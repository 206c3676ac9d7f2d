// The queue contract's conformance suite against PostgreSQL (SVC_TEST_PG_URL, test/helpers/pg.ts).
import { pgQueueBackend } from './pg-backend.js';
import { queueConformance } from './queue.conformance.js';

queueConformance(pgQueueBackend);
