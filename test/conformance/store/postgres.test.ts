// The storage contracts' conformance suite against PostgreSQL (SVC_TEST_PG_URL, test/helpers/pg.ts).
import { certificatesConformance } from './certificates.conformance.js';
import { descriptorsConformance } from './descriptors.conformance.js';
import { eventLogConformance } from './event-log.conformance.js';
import { rollupsConformance } from './rollups.conformance.js';
import { flowStateConformance } from './flow-state.conformance.js';
import { pgBackend } from './pg-backend.js';
import { auditConformance } from './audit.conformance.js';
import { registryConformance } from './registry.conformance.js';
import { tenantAdminConformance } from './tenant-admin.conformance.js';
import { uiConformance } from './ui.conformance.js';

registryConformance(pgBackend);
uiConformance(pgBackend);
certificatesConformance(pgBackend);
descriptorsConformance(pgBackend);
flowStateConformance(pgBackend);
auditConformance(pgBackend);
tenantAdminConformance(pgBackend);
eventLogConformance(pgBackend);
rollupsConformance(pgBackend);
