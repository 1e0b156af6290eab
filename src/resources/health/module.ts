import type { Module } from '../../host.js';
import { healthRoutes } from './routes.js';

/** `/healthz`: answers while the database does. */
export const healthModule: Module = {
  name: 'health',
  build: () => ({}),
  routes: (app, _s, host) => healthRoutes(app, host.store),
};
