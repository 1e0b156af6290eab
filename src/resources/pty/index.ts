export { ptyStopListener } from './devbox-extensions.js';
export { PtySessions } from './pty-sessions.js';
export { PtyTunnels } from './pty-tunnels.js';
export { PTY_SCHEMA } from './schema.js';
export { ptyRoutes } from './routes/index.js';
export { PtyFront } from './routes/pty-front.js';
export { ptyModule } from './module.js';
