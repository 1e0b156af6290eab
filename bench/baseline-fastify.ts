// The baseline for bench/http.ts: a bare Fastify hello-world route on the same dual-protocol server devboxd
// uses, so the comparison isolates what devboxd adds (auth, key lookup, store, hooks).
import Fastify from 'fastify';
import { dualProtocolServer } from '../src/platform/http/server.js';

const app = Fastify({ serverFactory: dualProtocolServer as never });
app.get('/hello', async () => ({ hello: 'world' }));
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address() as { port: number };
process.stdout.write(`listening on http://127.0.0.1:${addr.port}\n`);
