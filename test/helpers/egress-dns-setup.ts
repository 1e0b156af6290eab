/**
 * The host side of egress-dns-probe.sh: box1's link (host end 10.88.0.2, box 10.88.0.3) and box2's host end
 * (10.88.0.4), the real Egress rules, then a wildcard *:53 service and one bound to box1's host end; and a
 * LAN neighbour (namespace `lan`) that sends with box1's address as its source.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { createSocket } from 'node:dgram';
import { Egress } from '../../src/runtime/linux/egress.js';

const log = { warn: console.error, info: () => undefined, error: console.error, debug: () => undefined } as never;
const e = new Egress({ node: 'probe', subnet: '10.88.0.0/16', deny: [], bandwidthBytes: 1e8, maxConnections: 1024 }, log);
const ip = (...args: string[]) => execFileSync('ip', args);
const l1 = e.link('box1', 1);
const l2 = e.link('box2', 2);
ip('link', 'add', l1.hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', 'box');
ip('addr', 'add', `${l1.hostAddress}/31`, 'dev', l1.hostIf);
ip('link', 'set', l1.hostIf, 'up');
ip('netns', 'exec', 'box', 'ip', 'addr', 'add', `${l1.boxAddress}/31`, 'dev', 'eth0');
ip('netns', 'exec', 'box', 'ip', 'link', 'set', 'eth0', 'up');
ip('link', 'add', l2.hostIf, 'type', 'veth', 'peer', 'name', 'peer2');
ip('link', 'set', 'peer2', 'up');
ip('addr', 'add', `${l2.hostAddress}/31`, 'dev', l2.hostIf);
ip('link', 'set', l2.hostIf, 'up');
ip('netns', 'exec', 'box', 'ip', 'route', 'add', 'default', 'via', l1.hostAddress);
ip('link', 'add', 'lan0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', 'lan');
ip('link', 'set', 'lan0', 'up');
ip('netns', 'exec', 'lan', 'ip', 'addr', 'add', `${l1.boxAddress}/32`, 'dev', 'eth0');
ip('netns', 'exec', 'lan', 'ip', 'link', 'set', 'eth0', 'up');
ip('netns', 'exec', 'lan', 'ip', 'route', 'add', `${l1.hostAddress}/32`, 'dev', 'eth0');
await e.apply('box1', { allowAll: false, cidrs: [] });
await e.apply('box2', { allowAll: false, cidrs: [] });

/** Questions each service got, by their text. */
const got: string[] = [];
const serve = (address: string | undefined, answer: string) =>
  new Promise<void>((r) => {
    const s = createSocket({ type: 'udp4', reuseAddr: true });
    s.on('message', (m, from) => {
      got.push(m.toString());
      s.send(answer, from.port, from.address);
    });
    s.bind({ port: 53, address, exclusive: false }, () => r());
    s.unref();
  });
/** What the box gets back from `to`:53 within a second ("" for nothing); `ns` lan sends as the neighbour. */
// Asynchronous: the services answering are in this process.
const ask = async (to: string, ns = 'box') =>
  (
    await promisify(execFile)('ip', [
      'netns',
      'exec',
      ns,
      'python3',
      '-c',
      `
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1)
s.sendto(b"${ns}", ("${to}", 53))
try: print(s.recv(100).decode())
except Exception: print("")`,
    ])
  ).stdout.trim();

await serve(undefined, 'wildcard');
const out: Record<string, string> = {};
out.wildcardOwnEnd = await ask(l1.hostAddress);
out.wildcardOtherEnd = await ask(l2.hostAddress);
await serve(l1.hostAddress, 'forwarder');
await serve(l2.hostAddress, 'other forwarder');
out.boundOwnEnd = await ask(l1.hostAddress);
out.boundOtherEnd = await ask(l2.hostAddress);
await ask(l1.hostAddress, 'lan');
// A flood from one socket: 2000 questions at once.
const before = got.length;
await promisify(execFile)('ip', [
  'netns',
  'exec',
  'box',
  'python3',
  '-c',
  `
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(2000): s.sendto(b"flood", ("${l1.hostAddress}", 53))`,
]);
await new Promise((r) => setTimeout(r, 300));
out.floodReached = String(got.length - before);
out.spoofedGotThrough = String(got.includes('lan'));
e.close();
console.log(JSON.stringify(out));
