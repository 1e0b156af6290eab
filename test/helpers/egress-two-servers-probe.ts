/**
 * Run by test/unit/egress-floor.test.ts in a network namespace of its own: two servers of one host share the
 * table; the second one starting with another deny list must not change the first one's boxes' floor.
 * Prints the box's floor elements as one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { Egress } from '../../src/runtime/linux/egress.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
const strict = new Egress({ subnet: '10.88.0.0/16', deny: ['198.51.100.7/32'], openInterfaces: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
await strict.prepare();
strict.link('box1', 1);
await strict.apply('box1', { allowAll: true, cidrs: [] });
const loose = new Egress({ subnet: '10.90.0.0/16', deny: [], openInterfaces: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
await loose.prepare();
loose.link('box2', 2);
await loose.apply('box2', { allowAll: true, cidrs: [] });
const list = (set: string) => execFileSync('nft', ['list', 'set', 'inet', 'devboxd', set]).toString().replace(/\s+/g, ' ');
console.log(JSON.stringify({ neverBox: list('never_box'), never4: list('never4') }));
strict.close();
loose.close();
