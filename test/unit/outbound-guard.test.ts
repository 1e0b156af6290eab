/**
 * The outbound guard (issue 23): which addresses it refuses, what DEVBOXD_OUTBOUND_ALLOW opens (by name and
 * by CIDR), and that a refused connection is refused before any packet: only a server on 127.0.0.1 is ever
 * connected to, every other address is shown refused by the check alone.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import os from 'node:os';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { ConfigError, loadConfig } from '../../src/config.js';
import { OutboundGuard, OutboundRefused, parseAddress, parseOutboundAllow } from '../../src/platform/outbound/index.js';

const guard = (allow = '', boxSubnet = '10.88.0.0/16') => new OutboundGuard({ allow: parseOutboundAllow(allow), boxSubnet });
const refusal = (g: OutboundGuard, address: string, host = address) => g.refusal(host, parseAddress(address)!);

describe('the classifier', () => {
  const refused: [string, RegExp][] = [
    ['127.0.0.1', /loopback/],
    ['127.255.0.9', /loopback/],
    ['::1', /loopback/],
    ['169.254.169.254', /link-local.*metadata/],
    ['fe80::1', /link-local/],
    ['10.1.2.3', /private/],
    ['172.16.0.1', /private/],
    ['172.31.255.254', /private/],
    ['192.168.1.1', /private/],
    ['fc00::1', /private/],
    ['fd12:3456::1', /private/],
    ['100.64.0.1', /shared/],
    ['100.127.255.254', /shared/],
    ['0.0.0.0', /unspecified/],
    ['0.1.2.3', /unspecified/],
    ['::', /unspecified/],
    ['224.0.0.1', /multicast/],
    ['ff02::1', /multicast/],
    ['255.255.255.255', /broadcast/],
    ['240.0.0.1', /reserved/],
    ['192.0.2.1', /reserved/],
    ['198.18.0.1', /reserved/],
    ['2001:db8::1', /reserved/],
    ['64:ff9b::a00:1', /NAT64/],
    ['2002:a00:1::1', /6to4/],
    ['::7f00:1', /IPv4-compatible/],
  ];
  for (const [address, why] of refused) {
    test(`${address} is refused (${why.source})`, () => assert.match(refusal(guard(), address) ?? 'allowed', why));
  }

  test('IPv4-mapped IPv6 forms are classified as their IPv4 address', () => {
    for (const mapped of ['::ffff:127.0.0.1', '::ffff:7f00:1', '[::ffff:169.254.169.254]', '::ffff:10.0.0.1', '::ffff:100.64.0.1']) {
      const addr = parseAddress(mapped);
      assert.equal(addr?.kind(), 'ipv4', mapped);
      assert.ok(refusal(guard(), addr!.toString()), mapped);
    }
  });

  test('public addresses pass', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(refusal(guard(), address), null, address);
  });

  test("the box subnet and the host's own addresses are refused even when public", () => {
    assert.match(refusal(guard('', '11.88.0.0/16'), '11.88.3.4') ?? '', /boxes' subnet/);
    const own = Object.values(os.networkInterfaces())
      .flat()
      .map((i) => i?.address)
      .filter((a): a is string => !!a);
    for (const address of own) assert.ok(refusal(guard(), address), address);
  });
});

describe('DEVBOXD_OUTBOUND_ALLOW', () => {
  test('opens a CIDR, a bare address, and a host name whatever it resolves to', () => {
    const g = guard('10.5.0.0/16, 127.0.0.1, Gitea.Internal., fd00::/8');
    assert.equal(refusal(g, '10.5.1.2'), null);
    assert.match(refusal(g, '10.6.1.2') ?? '', /private/);
    assert.equal(refusal(g, '127.0.0.1'), null);
    assert.equal(refusal(g, '::ffff:127.0.0.1'), null);
    assert.match(refusal(g, '127.0.0.2') ?? '', /loopback/);
    assert.equal(refusal(g, '192.168.9.9', 'gitea.internal'), null);
    assert.match(refusal(g, '192.168.9.9', 'other.internal') ?? '', /private/);
    assert.equal(refusal(g, 'fd00::5'), null);
    // A mapped IPv6 CIDR opens the IPv4 range it names.
    assert.equal(refusal(guard('::ffff:10.9.0.0/112'), '10.9.1.1'), null);
  });

  test('is parsed once in config; a bad entry stops the start naming it', () => {
    assert.equal(loadConfig({}).outboundAllow.cidrs.length, 0);
    assert.equal(loadConfig({}).outboundAllow.names.size, 0);
    assert.deepEqual([...loadConfig({ DEVBOXD_OUTBOUND_ALLOW: 'a.example,10.0.0.0/8' }).outboundAllow.names], ['a.example']);
    for (const bad of ['10.0.0.0/33', 'http://x', 'a b', '1.2.3.4/x'])
      assert.throws(
        () => loadConfig({ DEVBOXD_OUTBOUND_ALLOW: bad }),
        (e: unknown) => e instanceof ConfigError && e.message.includes('DEVBOXD_OUTBOUND_ALLOW'),
        bad,
      );
  });
});

describe('literal URLs (refused at create)', () => {
  test('IP literals, mapped forms and localhost are refused; other names wait for the connection', () => {
    const g = guard();
    for (const u of [
      'http://127.0.0.1:4000',
      'http://169.254.169.254/latest',
      'http://[::ffff:127.0.0.1]/',
      'http://localhost:1/',
      'http://LOCALHOST./',
      'http://a.localhost/',
      'http://[::1]/',
      'http://2130706433/',
    ])
      assert.ok(g.literalRefusal(new URL(u)), u);
    for (const u of ['https://api.openai.com/v1', 'http://8.8.8.8/']) assert.equal(g.literalRefusal(new URL(u)), null, u);
    assert.equal(guard('localhost').literalRefusal(new URL('http://localhost:1/')), null);
    assert.equal(guard('127.0.0.1').literalRefusal(new URL('http://127.0.0.1:1/')), null);
  });
});

describe('connections', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  before(async () => {
    server = http.createServer((_q, r) => (hits++, r.end('hi')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  after(() => server.close());

  const get = (g: OutboundGuard, url: string) =>
    g
      .agent()
      .get()
      .then((dispatcher) => request(url, { dispatcher }))
      .then(
        (r) => r.body.text(),
        (e: unknown) => e,
      );

  test('loopback by literal, by a name resolving to it and by its mapped form: refused before connecting', async () => {
    for (const url of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://127.1:${port}/`]) {
      const err = await get(guard(), url);
      assert.ok(err instanceof OutboundRefused, url);
      assert.match(err.message, /refused by the server's outbound rules/);
    }
    assert.equal(hits, 0);
  });

  test('opened by DEVBOXD_OUTBOUND_ALLOW, the same upstream answers', async () => {
    assert.equal(await get(guard('127.0.0.1'), `http://127.0.0.1:${port}/`), 'hi');
    assert.equal(await get(guard('127.0.0.1'), `http://localhost:${port}/`), 'hi');
    assert.equal(await get(guard('localhost'), `http://localhost:${port}/`), 'hi');
    assert.ok((await get(guard('localhost'), `http://127.0.0.1:${port}/`)) instanceof OutboundRefused);
    assert.equal(hits, 3);
  });

  test('a closed port and an open one are refused alike', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as { port: number }).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const a = (await get(guard(), `http://127.0.0.1:${port}/`)) as Error;
    const b = (await get(guard(), `http://127.0.0.1:${closedPort}/`)) as Error;
    assert.equal(a.message, b.message);
  });
});
