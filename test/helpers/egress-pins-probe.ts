/**
 * Run by test/unit/egress-pins.test.ts in a network namespace of its own (the egress table is per namespace,
 * so the host's is never touched): the real Egress, nft and nftsetd. Prints what it counted as one JSON line.
 */
import { execFileSync } from 'node:child_process';
import { Egress, MAX_PINS_PER_BOX } from '../../src/runtime/linux/egress.js';

const log = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined } as never;
const e = new Egress({ node: 'probe', subnet: '10.88.0.0/16', deny: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
const listed = () => execFileSync('nft', ['list', 'set', 'inet', 'devboxd', 'pinned']).toString();
const count = () => (listed().match(/"dbx[0-9a-f]+" \. /g) ?? []).length;
const addr = (i: number) => `203.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const out: Record<string, unknown> = {};
await e.prepare();
e.link('box1', 1);
await e.apply('box1', { allowAll: false, cidrs: [] });
// Past the old one-dump limit of nftsetd's flush (4096), within the per-box cap.
for (let i = 0; i < MAX_PINS_PER_BOX; i += 256)
  await e.pin(
    'box1',
    Array.from({ length: 256 }, (_, j) => addr(i + j)),
    300,
  );
out.pinned = count();
out.overCap = await e.pin('box1', [addr(MAX_PINS_PER_BOX + 1)], 300).then(
  () => 'pinned',
  (err: Error) => err.message,
);
out.afterOverCap = count();
// A restarted server (a new Egress, counting from zero) pins 1000 more: 5096 of box1's in the set.
const next = new Egress({ node: 'probe', subnet: '10.88.0.0/16', deny: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
for (let i = 0; i < 1000; i += 250)
  await next.pin(
    'box1',
    Array.from({ length: 250 }, (_, j) => addr(50_000 + i + j)),
    300,
  );
out.afterRestart = count();
e.link('box2', 2);
await e.apply('box2', { allowAll: false, cidrs: [] });
for (let i = 0; i < 1000; i += 250)
  await e.pin(
    'box2',
    Array.from({ length: 250 }, (_, j) => addr(100_000 + i + j)),
    300,
  );
await next.apply('box1', { allowAll: false, cidrs: [] }); // what a policy update does
next.close();
out.afterUpdate = count();
out.repinAfterUpdate = await e.pin('box1', [addr(1)], 300).then(
  () => 'pinned',
  (err: Error) => err.message,
);
await e.pin('box2', ['198.51.100.7'], 2 ** 32 - 1);
out.longTtl = listed()
  .split('\n')
  .find((l) => l.includes('198.51.100.7'))
  ?.trim();
await e.release('box2', null);
await e.release('box1', null);
out.afterRelease = count();
e.close();
console.log(JSON.stringify(out));
