import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import tls from 'node:tls';
import { PeerKey } from '../../src/platform/http/peers.js';
import { peekFirstRecord, serverNameOf } from '../../src/resources/routing/sni.js';

/** The pieces of routing between API servers that need no server: peer signatures, the TLS server name. */
const TOKEN = 'a-cluster-token-of-at-least-32-characters';

test('a peer signature verifies for its method and path under the same token, within the clock skew, and nothing else', () => {
  const a = new PeerKey(TOKEN, 'node-a');
  const b = new PeerKey(TOKEN, 'node-b');
  const now = 1_800_000_000_000;
  const signed = a.sign('POST', '/v1/devboxes/dbx_1/execute_async?x=1', now);
  assert.equal(signed.includes(TOKEN), false, 'the token itself never travels');
  assert.equal(b.verify(signed, 'POST', '/v1/devboxes/dbx_1/execute_async?x=1', now + 1000), 'node-a');
  assert.equal(b.verify(signed, 'post', '/v1/devboxes/dbx_1/execute_async?x=1', now), 'node-a', 'methods compare upper-cased');
  assert.equal(b.verify(signed, 'POST', '/v1/devboxes/dbx_2/execute_async?x=1', now), null, 'another path');
  assert.equal(b.verify(signed, 'GET', '/v1/devboxes/dbx_1/execute_async?x=1', now), null, 'another method');
  assert.equal(b.verify(signed, 'POST', '/v1/devboxes/dbx_1/execute_async?x=1', now + 301_000), null, 'too old');
  assert.equal(new PeerKey(`${TOKEN}-other`, 'node-c').verify(signed, 'POST', '/v1/devboxes/dbx_1/execute_async?x=1', now), null, 'another cluster');
  assert.equal(b.verify(signed.replace('node-a', 'node-z'), 'POST', '/v1/devboxes/dbx_1/execute_async?x=1', now), null, 'the node name is signed');
  for (const junk of ['', 'v1', 'v1 1 a b', `v2 ${now} node-a ${'A'.repeat(43)}`]) assert.equal(b.verify(junk, 'GET', '/', now), null, junk);
});

test("a TLS connection's first record is read without being consumed, and names the server its client asked for", async () => {
  const got = new Promise<{ name: string; again: Buffer }>((resolve) => {
    const server = net.createServer(async (socket) => {
      socket.pause();
      const record = await peekFirstRecord(socket, 5000);
      assert.ok(record);
      // What was read is there again for whoever takes the connection next.
      socket.once('data', (again: Buffer) => {
        resolve({ name: serverNameOf(record), again: again.subarray(0, record.length) });
        socket.destroy();
        server.close();
      });
      socket.resume();
    });
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      tls.connect({ host: '127.0.0.1', port, servername: 'dbx-0abc.ssh.example.com', rejectUnauthorized: false }).on('error', () => undefined);
    });
  });
  const { name, again } = await got;
  assert.equal(name, 'dbx-0abc.ssh.example.com');
  assert.equal(again[0], 22, 'the handshake record comes again');
  assert.equal(serverNameOf(Buffer.from([22, 3, 1, 0, 4, 1, 0, 0, 0])), '', 'a truncated hello names nothing');
  assert.equal(serverNameOf(Buffer.from('GET / HTTP/1.1\r\n\r\n')), '');
});
