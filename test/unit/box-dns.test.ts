/**
 * The boxes' DNS deciding by the egress rules a box was given last (src/runtime/linux/dns/box-dns.ts), on
 * loopback (port 53 needs root, as the suite does): a "box" at 127.0.0.112 asks its host end at 127.0.0.111,
 * and upstream is a server of this test on 127.0.0.1 that answers every A question with 198.18.0.7.
 */
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import { createLogger } from '../../src/lib/logger.js';
import type { EgressRules } from '../../src/runtime/driver.js';
import { BoxDns } from '../../src/runtime/linux/dns/box-dns.js';

const net = { hostAddress: '127.0.0.111', boxAddress: '127.0.0.112' };
const rules = (r: Partial<EgressRules>): EgressRules => ({ allowAll: false, cidrs: [], hostnames: [], ...r });

/** Questions upstream got, and what was pinned (with whether the box had had an answer when the pin was done). */
let asked = 0;
const pins: { addresses: string[]; ttl: number; answeredBefore: boolean }[] = [];
let answered = 0;
let upstream: Socket;
let dns: BoxDns;

function query(name: string, type = 1): Buffer {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  return Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, type, 0, 1])]);
}

/** Upstream's answer to `q`: its question, then one A record 198.18.0.7 (TTL 300) for the question's name. */
function upstreamAnswer(q: Buffer): Buffer {
  const head = Buffer.from(q);
  head.writeUInt16BE(0x8180, 2);
  head.writeUInt16BE(1, 6);
  return Buffer.concat([head, Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 198, 18, 0, 7])]);
}

/**
 * The box asks for `name`: the answer's rcode and A addresses, or null when nothing answers within `waitMs`
 * (an answer passes a 50 ms pin, and a loaded test run has seen it take over 500 ms: a test that expects
 * silence waits less).
 */
async function ask(name: string, type = 1, waitMs = 5000): Promise<{ rcode: number; addresses: string[] } | null> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, net.boxAddress, r));
  try {
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), waitMs);
      s.on('message', (m) => {
        clearTimeout(timer);
        answered++;
        const an = m.readUInt16BE(6);
        const addresses = an ? [[...m.subarray(m.length - 4)].join('.')] : [];
        resolve({ rcode: m.readUInt16BE(2) & 0xf, addresses });
      });
      s.send(query(name, type), 53, net.hostAddress);
    });
  } finally {
    s.close();
  }
}

before(async () => {
  upstream = createSocket('udp4');
  upstream.on('message', (m, from) => {
    asked++;
    upstream.send(upstreamAnswer(m), from.port, from.address);
  });
  await new Promise<void>((r) => upstream.bind(0, '127.0.0.1', r));
  const seen = answered;
  dns = new BoxDns({
    upstream: { address: '127.0.0.1', port: upstream.address().port },
    pin: async (_id, addresses, ttl) => {
      await new Promise((r) => setTimeout(r, 50));
      pins.push({ addresses, ttl, answeredBefore: answered > seen });
    },
    log: createLogger('silent'),
  });
});
after(() => {
  dns.close();
  upstream.close();
});

describe('questions decided by the rules set last', () => {
  test('an allowed name is asked upstream and pinned before the box has it; another is NXDOMAIN, never asked', async () => {
    dns.follow('dbx_dns', rules({ hostnames: ['*.allowed.test'] }));
    await dns.answer('dbx_dns', net);
    assert.deepEqual(await ask('a.allowed.test'), { rcode: 0, addresses: ['198.18.0.7'] });
    assert.deepEqual(pins, [{ addresses: ['198.18.0.7'], ttl: 300, answeredBefore: false }]);
    assert.deepEqual(await ask('other.test'), { rcode: 3, addresses: [] });
    assert.deepEqual(await ask('a.allowed.test', 28), { rcode: 0, addresses: [] }, 'AAAA: empty, never asked');
    assert.equal(asked, 1, `upstream was asked ${asked} times`);
  });

  test('new rules decide the next question without new sockets; allowAll forwards without a pin', async () => {
    pins.length = 0;
    dns.follow('dbx_dns', rules({ hostnames: [] }));
    await dns.answer('dbx_dns', net); // already answering there: nothing is bound again
    assert.deepEqual(await ask('a.allowed.test'), { rcode: 3, addresses: [] });
    dns.follow('dbx_dns', rules({ allowAll: true }));
    assert.deepEqual(await ask('anything.test'), { rcode: 0, addresses: ['198.18.0.7'] });
    assert.deepEqual(pins, []);
  });

  test('a stopped box is answered no more, and one without rules gets no sockets', async () => {
    dns.stop('dbx_dns');
    assert.equal(await ask('anything.test', 1, 500), null);
    // Its rules went with it: a late `answer` (a change racing the box's end) binds nothing.
    await dns.answer('dbx_dns', net);
    assert.equal(await ask('anything.test', 1, 500), null);
  });
});
