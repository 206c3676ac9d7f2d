// The storage contracts' conformance suite against the embedded SQLite store.
import { auditConformance } from './audit.conformance.js';
import { registryConformance } from './registry.conformance.js';
import { sqliteBackend } from './sqlite-backend.js';

registryConformance(sqliteBackend);
auditConformance(sqliteBackend);
