/**
 * Run by test/unit/egress-cut.test.ts in a network namespace of its own: a connection from a box's address
 * (on lo here, so it stays in the namespace) is tracked; a policy update of the box cuts it unless the new
 * policy allows everything. Prints the tracked counts as one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { connect, createServer, type Socket } from 'node:net';
import { Egress } from '../../src/runtime/linux/egress.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
const e = new Egress({ node: 'probe', subnet: '10.88.0.0/16', deny: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
const box = e.link('box1', 1).boxAddress;
execFileSync('ip', ['addr', 'add', `${box}/32`, 'dev', 'lo']);
const tracked = () =>
  execFileSync('conntrack', ['-L', '-s', box], { stdio: ['ignore', 'pipe', 'ignore'] })
    .toString()
    .split('\n')
    .filter(Boolean).length;
const server = createServer((c) => c.on('data', () => undefined));
await new Promise<void>((r) => server.listen(7000, '127.0.0.1', r));
const open = () =>
  new Promise<Socket>((r) => {
    const c = connect({ host: '127.0.0.1', port: 7000, localAddress: box }, () => r(c));
    c.on('error', () => undefined);
  });
await e.apply('box1', { allowAll: true, cidrs: [] }, box); // the first policy of a boot cuts nothing
const held = await open();
const out: Record<string, number> = { atBoot: tracked() };
await e.apply('box1', { allowAll: true, cidrs: [] }, box);
out.afterAllowAll = tracked();
await e.apply('box1', { allowAll: false, cidrs: [] }, box);
out.afterDeny = tracked();
held.destroy();
server.close();
e.close();
console.log(JSON.stringify(out));
