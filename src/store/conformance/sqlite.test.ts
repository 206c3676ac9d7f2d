// The storage contracts' conformance suite against the embedded SQLite store.
import { flowStateConformance } from './flow-state.conformance.js';
import { registryConformance } from './registry.conformance.js';
import { sqliteBackend } from './sqlite-backend.js';

registryConformance(sqliteBackend);
flowStateConformance(sqliteBackend);
