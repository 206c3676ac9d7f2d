// The storage contracts' conformance suite against PostgreSQL (SVC_TEST_PG_URL, test/helpers/pg.ts).
import { pgBackend } from './pg-backend.js';
import { registryConformance } from './registry.conformance.js';
import { uiConformance } from './ui.conformance.js';

registryConformance(pgBackend);
uiConformance(pgBackend);
