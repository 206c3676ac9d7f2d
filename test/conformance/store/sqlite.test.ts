// The storage contracts' conformance suite against the embedded SQLite store.
import { certificatesConformance } from './certificates.conformance.js';
import { descriptorsConformance } from './descriptors.conformance.js';
import { eventLogConformance } from './event-log.conformance.js';
import { rollupsConformance } from './rollups.conformance.js';
import { flowStateConformance } from './flow-state.conformance.js';
import { auditConformance } from './audit.conformance.js';
import { registryConformance } from './registry.conformance.js';
import { tenantAdminConformance } from './tenant-admin.conformance.js';
import { sqliteBackend } from './sqlite-backend.js';
import { uiConformance } from './ui.conformance.js';

registryConformance(sqliteBackend);
uiConformance(sqliteBackend);
certificatesConformance(sqliteBackend);
descriptorsConformance(sqliteBackend);
flowStateConformance(sqliteBackend);
auditConformance(sqliteBackend);
tenantAdminConformance(sqliteBackend);
eventLogConformance(sqliteBackend);
rollupsConformance(sqliteBackend);
