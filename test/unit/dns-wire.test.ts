/** The little of the DNS wire format the boxes' DNS reads and writes (src/runtime/linux/dns/wire.ts). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answerAddresses, parseQuery, RCODE_NXDOMAIN, reply } from '../../src/runtime/linux/dns/wire.js';

/** A query for `name` (type A), as a resolver sends it. */
function query(name: string, type = 1): Buffer {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  return Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, type, 0, 1])]);
}

/** The header and question of an answer to `q` with `records` answer records (which follow it). */
function answerHead(q: Buffer, records: number): Buffer {
  const head = Buffer.from(q);
  head.writeUInt16BE(0x8180, 2);
  head.writeUInt16BE(records, 6);
  return head;
}

describe('DNS wire', () => {
  test('a query is read; a refusal repeats its id and question with NXDOMAIN and no records', () => {
    const q = query('Allowed.Test');
    const parsed = parseQuery(q)!;
    assert.equal(parsed.name, 'allowed.test');
    assert.equal(parsed.type, 1);
    const r = reply(q, parsed, RCODE_NXDOMAIN);
    assert.equal(r.readUInt16BE(0), 0x1234);
    assert.equal(r.readUInt16BE(2) & 0x800f, 0x8003);
    assert.equal(r.readUInt16BE(6), 0);
    assert.deepEqual(r.subarray(12), q.subarray(12));
    assert.equal(parseQuery(r), null, 'an answer is not a query');
    assert.equal(parseQuery(Buffer.from([1, 2, 3])), null);
  });

  test('a question over 255 bytes, or with a . inside a label, is not a query', () => {
    const long = `${'a'.repeat(63)}.`.repeat(4).slice(0, -1);
    assert.equal(parseQuery(query(long)), null, `${long.length + 2} bytes`);
    assert.ok(parseQuery(query(long.slice(0, 250))), 'a 252-byte name');
    // One label "x.npmjs", then "org": not the name x.npmjs.org that upstream would resolve.
    const joined = Buffer.concat([
      query('a').subarray(0, 12),
      Buffer.from([7]),
      Buffer.from('x.npmjs'),
      Buffer.from([3]),
      Buffer.from('org'),
      Buffer.from([0, 0, 1, 0, 1]),
    ]);
    assert.equal(parseQuery(joined), null);
  });

  test('answer addresses follow compression pointers, skip other records and take the smallest TTL', () => {
    const head = answerHead(query('www.example.test'), 3);
    const cname = Buffer.from([0xc0, 0x0c, 0, 5, 0, 1, 0, 0, 0, 60, 0, 4, 1, 0x61, 0xc0, 0x10]);
    const a1 = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0, 0, 4, 198, 18, 0, 2]);
    const a2 = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4, 198, 18, 0, 3]);
    assert.deepEqual(answerAddresses(Buffer.concat([head, cname, a1, a2]), 'www.example.test'), { addresses: ['198.18.0.2', '198.18.0.3'], ttl: 30 });
    assert.equal(answerAddresses(Buffer.concat([head, cname, a1]), 'www.example.test'), null, 'a record cut short');
    const loop = Buffer.concat([head.subarray(0, 12), Buffer.from([0xc0, 0x0c])]);
    loop.writeUInt16BE(1, 4);
    assert.equal(answerAddresses(loop, 'www.example.test'), null, 'a pointer loop ends');
  });

  test("only A records of the question's name or its CNAME chain are taken (pinned)", () => {
    const q = query('www.example.test');
    const head = answerHead(q, 4);
    // www.example.test CNAME a.example.test; a.example.test A 198.18.0.2; example.test A 198.18.0.9 (not asked);
    // www.example.test A 198.18.0.3.
    const cname = Buffer.from([0xc0, 0x0c, 0, 5, 0, 1, 0, 0, 0, 60, 0, 4, 1, 0x61, 0xc0, 0x10]);
    const viaChain = Buffer.from([0xc0, 0, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 2]);
    const other = Buffer.from([0xc0, 0x10, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 9]);
    const own = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 3]);
    // Its owner points at the CNAME's target, the CNAME's rdata: past the question and the CNAME's 12 fixed bytes.
    viaChain[1] = q.length + 12;
    // Before: every A record of the answer section was pinned, whatever its owner.
    assert.deepEqual(answerAddresses(Buffer.concat([head, cname, viaChain, other, own]), 'www.example.test')?.addresses, ['198.18.0.2', '198.18.0.3']);
  });
});
