/** Every page of the UI, one module each; plugin.ts registers them inside its session-guarded scope. */
import type { PageRoutes } from '../respond.js';
import { auditPage } from './audit.js';
import { certificatesPage } from './certificates.js';
import { executionsPages } from './executions.js';
import { keysPages } from './keys.js';
import { overviewPage } from './overview.js';
import { queuesPages } from './queues.js';
import { registryPages } from './registry.js';
import { settingsPages } from './settings.js';
import { tenantsPages } from './tenants.js';
import { tracesPage } from './traces.js';
import { replayPage } from './replay.js';
import { usersPages } from './users.js';

/** In the order of the navigation bar (layout.ts). */
const PAGES: readonly PageRoutes[] = [
  overviewPage,
  registryPages,
  executionsPages,
  tracesPage,
  replayPage,
  queuesPages,
  tenantsPages,
  keysPages,
  auditPage,
  certificatesPage,
  settingsPages,
  usersPages,
];

export const registerPages: PageRoutes = (app, deps, context) => {
  for (const routes of PAGES) routes(app, deps, context);
};
