// The storage contracts' conformance suite against PostgreSQL (SVC_TEST_PG_URL, test/helpers/pg.ts).
import { pgBackend } from './pg-backend.js';
import { auditConformance } from './audit.conformance.js';
import { registryConformance } from './registry.conformance.js';

registryConformance(pgBackend);
auditConformance(pgBackend);
