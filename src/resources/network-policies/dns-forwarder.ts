/**
 * The boxes' DNS: one UDP socket per box on the host end of its link (what its /etc/resolv.conf names),
 * answering only that box. A name its policy allows is asked upstream (DEVBOXD_DNS_UPSTREAM) and the A
 * records of the answer are pinned into the box's egress set for their TTL before the box sees them, so
 * the box reaches exactly the addresses it resolved; any other name is NXDOMAIN. AAAA questions get an
 * empty answer (boxes have IPv4 only), so clients go straight to IPv4. Questions come over UDP and TCP
 * (what a resolver asks again after a truncated answer); upstream is asked over UDP.
 */
import { createSocket, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import type { Logger } from '../../lib/logger.js';
import type { BoxNetwork } from '../../runtime/driver.js';
import { answerAddresses, parseQuery, RCODE_FORMERR, RCODE_NOERROR, RCODE_NXDOMAIN, RCODE_SERVFAIL, reply, TYPE_A, TYPE_AAAA } from './dns-wire.js';

/** What the box's policy says of a name: ask upstream as is, ask and pin the addresses, or refuse. */
export type NameDecision = 'forward' | 'pin' | 'deny';

/** Questions of one box waiting for upstream at once; past it new ones are dropped (the resolver retries). */
const MAX_IN_FLIGHT = 64;
const UPSTREAM_TIMEOUT_MS = 4_000;

interface BoxDns {
  socket: Socket;
  tcp: Server;
  conns: Set<TcpSocket>;
  inFlight: number;
}

/** TCP connections one box holds to its DNS at once (resolvers use TCP only for answers UDP truncated). */
const MAX_TCP = 16;
const TCP_IDLE_MS = 10_000;

export interface DnsForwarderOptions {
  upstream: { address: string; port: number };
  /** Lets the box reach the addresses for ttl seconds (the runtime's pinEgress). */
  pin: (boxId: string, addresses: string[], ttlSeconds: number) => Promise<void>;
  log: Logger;
}

export class DnsForwarder {
  private readonly boxes = new Map<string, BoxDns>();

  constructor(private readonly opts: DnsForwarderOptions) {}

  /** Answers the box's questions at its host end; `decide` is asked at every question (policies change). */
  async attach(boxId: string, net: BoxNetwork, decide: (name: string) => NameDecision): Promise<void> {
    this.detach(boxId);
    const socket = createSocket({ type: 'udp4', reuseAddr: true });
    const tcp = createServer((c) => this.serveTcp(boxId, box, net, c, decide));
    tcp.maxConnections = MAX_TCP;
    const box: BoxDns = { socket, tcp, conns: new Set(), inFlight: 0 };
    socket.on('error', (err) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS socket error'));
    tcp.on('error', (err) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS listener error'));
    socket.on('message', (msg, from) => {
      // Only the box's own address: the firewall lets every box reach port 53 of every host end.
      if (from.address !== net.boxAddress || box.inFlight >= MAX_IN_FLIGHT) return;
      box.inFlight++;
      void this.answer(boxId, msg, decide)
        .then((out) => out && socket.send(out, from.port, from.address))
        .catch((err: Error) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS answer failed'))
        .finally(() => box.inFlight--);
    });
    this.boxes.set(boxId, box);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(53, net.hostAddress, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(53, net.hostAddress, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    socket.unref();
    tcp.unref();
  }

  /** DNS over TCP (RFC 1035 4.2.2): messages framed by a two-byte length, answered in any order. */
  private serveTcp(boxId: string, box: BoxDns, net: BoxNetwork, c: TcpSocket, decide: (name: string) => NameDecision): void {
    c.on('error', () => undefined);
    if (c.remoteAddress !== net.boxAddress) {
      c.destroy();
      return;
    }
    box.conns.add(c);
    c.on('close', () => box.conns.delete(c));
    c.setTimeout(TCP_IDLE_MS, () => c.destroy());
    let pending = Buffer.alloc(0);
    c.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const msg = pending.subarray(2, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(2 + msg.length);
        if (box.inFlight >= MAX_IN_FLIGHT) {
          c.destroy();
          return;
        }
        box.inFlight++;
        void this.answer(boxId, msg, decide)
          .then((out) => {
            if (!out || c.destroyed) return;
            const len = Buffer.alloc(2);
            len.writeUInt16BE(out.length);
            c.write(Buffer.concat([len, out]));
          })
          .catch((err: Error) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS answer failed'))
          .finally(() => box.inFlight--);
      }
    });
  }

  detach(boxId: string): void {
    const box = this.boxes.get(boxId);
    if (!box) return;
    this.boxes.delete(boxId);
    box.socket.close();
    box.tcp.close();
    for (const c of box.conns) c.destroy();
  }

  close(): void {
    for (const id of [...this.boxes.keys()]) this.detach(id);
  }

  private async answer(boxId: string, msg: Buffer, decide: (name: string) => NameDecision): Promise<Buffer | null> {
    const q = parseQuery(msg);
    if (!q) return msg.length >= 12 ? formErr(msg) : null;
    const decision = decide(q.name);
    if (decision === 'deny') return reply(msg, q, RCODE_NXDOMAIN);
    if (q.type === TYPE_AAAA) return reply(msg, q, RCODE_NOERROR);
    const answer = await this.ask(msg).catch(() => null);
    if (!answer) return reply(msg, q, RCODE_SERVFAIL);
    if (decision === 'pin' && q.type === TYPE_A) {
      const found = answerAddresses(answer);
      if (!found) return reply(msg, q, RCODE_SERVFAIL);
      // Pinned before the box learns the addresses: its first connection finds them allowed.
      await this.opts.pin(boxId, found.addresses, found.ttl);
    }
    return answer;
  }

  /** One question upstream, from a fresh random port; the answer must carry the question's id. */
  private ask(msg: Buffer): Promise<Buffer> {
    const { address, port } = this.opts.upstream;
    return new Promise((resolve, reject) => {
      const s = createSocket('udp4');
      const done = (err: Error | null, out?: Buffer) => {
        clearTimeout(timer);
        s.close();
        if (err) reject(err);
        else resolve(out!);
      };
      const timer = setTimeout(() => done(new Error('upstream DNS timed out')), UPSTREAM_TIMEOUT_MS);
      s.on('error', (err) => done(err));
      s.on('message', (out, from) => {
        if (from.address === address && from.port === port && out.length >= 12 && out.readUInt16BE(0) === msg.readUInt16BE(0)) done(null, out);
      });
      s.send(msg, port, address);
    });
  }
}

function formErr(msg: Buffer): Buffer {
  const out = Buffer.from(msg.subarray(0, 12));
  out.writeUInt16BE(0x8000 | RCODE_FORMERR, 2);
  out.fill(0, 4, 12);
  return out;
}
