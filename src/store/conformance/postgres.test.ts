// The storage contracts' conformance suite against PostgreSQL (SVC_TEST_PG_URL, test/helpers/pg.ts).
import { flowStateConformance } from './flow-state.conformance.js';
import { pgBackend } from './pg-backend.js';
import { registryConformance } from './registry.conformance.js';

registryConformance(pgBackend);
flowStateConformance(pgBackend);
