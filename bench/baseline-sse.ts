// The baseline for bench/axons.ts: a bare Fastify server whose POST /publish hands the body to an in-process
// EventEmitter and every open GET /subscribe stream writes it as one SSE event; no auth, no store, no queue.
// The difference to devboxd is what the axon path adds (auth, the database commit, the per-subscriber queue).
import { EventEmitter } from 'node:events';
import Fastify from 'fastify';

const hub = new EventEmitter();
hub.setMaxListeners(0);
let sequence = 0;
const app = Fastify();
app.post('/publish', async (req) => {
  const e = { sequence: ++sequence, payload: (req.body as { payload: string }).payload };
  hub.emit('event', e);
  return { sequence: e.sequence };
});
app.get('/subscribe', (req, reply) => {
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
  reply.raw.write(': stream\n\n');
  const send = (e: unknown) => reply.raw.write(`data: ${JSON.stringify(e)}\n\n`);
  hub.on('event', send);
  req.raw.on('close', () => hub.off('event', send));
});
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address() as { port: number };
process.stdout.write(`listening on http://127.0.0.1:${addr.port}\n`);
