/** The routing resource as other modules reach it: through this file only (checked by `npm run lint`). */
export { NodeDirectory, type Reach } from './directory.js';
export { RoutingFront } from './front.js';
export { PeerClient } from './proxy.js';
export { Router, type Route } from './router.js';
export { routingModule } from './module.js';
