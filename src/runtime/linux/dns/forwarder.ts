/**
 * The boxes' DNS: one UDP socket per box on the host end of its link (what its /etc/resolv.conf names),
 * answering only that box. A name its policy allows is asked upstream (DEVBOXD_DNS_UPSTREAM) and the A
 * records of the answer are pinned into the box's egress set for their TTL before the box sees them, so
 * the box reaches exactly the addresses it resolved; any other name is NXDOMAIN. AAAA questions get an
 * empty answer (boxes have IPv4 only), so clients go straight to IPv4. Questions come over UDP and TCP
 * (what a resolver asks again after a truncated answer); upstream is asked over UDP.
 */
import { createSocket, type Socket } from 'node:dgram';
import type { EventEmitter } from 'node:events';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import type { BoxNetwork } from '../../driver.js';
import type { RuntimeLogger } from '../logger.js';
import { serveDnsTcp, TCP_LIMITS, type TcpLimits } from './tcp.js';
import { answerAddresses, parseQuery, RCODE_FORMERR, RCODE_NOERROR, RCODE_NXDOMAIN, RCODE_REFUSED, RCODE_SERVFAIL, reply, TYPE_A, TYPE_AAAA } from './wire.js';

/** What the box's rules say of a name: ask upstream as is, ask and pin the addresses, or refuse. */
export type NameDecision = 'forward' | 'pin' | 'deny';

/** Questions of one box waiting for upstream at once; past it new ones are dropped (the resolver retries). */
const MAX_IN_FLIGHT = 64;
const UPSTREAM_TIMEOUT_MS = 4_000;

interface BoxSockets {
  socket: Socket;
  tcp: Server;
  conns: Set<TcpSocket>;
  inFlight: number;
  maxInFlight: number;
  net: BoxNetwork;
  /** Settles when both sockets are bound, or rejects when that failed or was cut short. */
  ready: Promise<void>;
  /** Token bucket of the box's questions: tokens left, and when it was last filled (ms). */
  tokens: number;
  filled: number;
}

/**
 * Questions per second of one box, after a first burst: past it a question is REFUSED at once. What a
 * package install asks stays well under; a box asking random names cannot flood upstream or this thread.
 */
export const DNS_RATE = { perSecond: 100, burst: 200 };

/** TCP connections one box holds to its DNS at once (resolvers use TCP only for answers UDP truncated). */
const MAX_TCP = 16;

export interface DnsForwarderOptions {
  upstream: { address: string; port: number };
  /** Lets the box reach the addresses for ttl seconds (the runtime's pinEgress). */
  pin: (boxId: string, addresses: string[], ttlSeconds: number) => Promise<void>;
  log: RuntimeLogger;
  /** Questions a box may ask per second, after a burst (DNS_RATE unless given). */
  rate?: { perSecond: number; burst: number };
  /** Idle and total life of a TCP connection (tests shorten them). */
  tcpLimits?: TcpLimits;
}

export class DnsForwarder {
  private readonly boxes = new Map<string, BoxSockets>();

  constructor(private readonly opts: DnsForwarderOptions) {}

  /** Answers the box's questions at its host end; `decide` is asked at every question (policies change). */
  async attach(boxId: string, net: BoxNetwork, decide: (name: string) => NameDecision): Promise<void> {
    // Already answering there (a policy change): `decide` is asked per question, so nothing to redo.
    const had = this.boxes.get(boxId);
    if (had && had.net.hostAddress === net.hostAddress && had.net.boxAddress === net.boxAddress) return had.ready;
    this.detach(boxId);
    const socket = createSocket({ type: 'udp4', reuseAddr: true });
    const tcp = createServer((c) => this.serveTcp(boxId, box, net, c, decide));
    tcp.maxConnections = MAX_TCP;
    const box: BoxSockets = {
      socket,
      tcp,
      net,
      conns: new Set(),
      inFlight: 0,
      maxInFlight: MAX_IN_FLIGHT,
      ready: Promise.resolve(),
      tokens: (this.opts.rate ?? DNS_RATE).burst,
      filled: Date.now(),
    };
    socket.on('error', (err) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS socket error'));
    tcp.on('error', (err) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS listener error'));
    socket.on('message', (msg, from) => {
      // Only the box's own address: the firewall lets every box reach port 53 of every host end.
      if (from.address !== net.boxAddress || box.inFlight >= MAX_IN_FLIGHT) return;
      box.inFlight++;
      void this.answer(boxId, box, msg, decide)
        .then((out) => out && socket.send(out, from.port, from.address))
        .catch((err: Error) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS answer failed'))
        .finally(() => box.inFlight--);
    });
    box.ready = this.bind(socket, tcp, net);
    box.ready.catch(() => this.boxes.get(boxId) === box && this.detach(boxId));
    this.boxes.set(boxId, box);
    await box.ready;
  }

  /** Both sockets bound; rejects when a detach closes them first (the caller never waits forever). */
  private async bind(socket: Socket, tcp: Server, net: BoxNetwork): Promise<void> {
    await bound(socket, (done) => socket.bind(53, net.hostAddress, done));
    await bound(tcp, (done) => tcp.listen(53, net.hostAddress, done));
    socket.unref();
    tcp.unref();
  }

  private serveTcp(boxId: string, box: BoxSockets, net: BoxNetwork, c: TcpSocket, decide: (name: string) => NameDecision): void {
    c.on('error', () => undefined);
    if (c.remoteAddress !== net.boxAddress) {
      c.destroy();
      return;
    }
    box.conns.add(c);
    c.on('close', () => box.conns.delete(c));
    serveDnsTcp(
      c,
      box,
      this.opts.tcpLimits ?? TCP_LIMITS,
      (msg) => this.answer(boxId, box, msg, decide),
      (err) => this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS answer failed'),
    );
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

  private async answer(boxId: string, box: BoxSockets, msg: Buffer, decide: (name: string) => NameDecision): Promise<Buffer | null> {
    const q = parseQuery(msg);
    if (!q) return msg.length >= 12 ? formErr(msg) : null;
    if (!this.take(box)) return reply(msg, q, RCODE_REFUSED);
    const decision = decide(q.name);
    if (decision === 'deny') return reply(msg, q, RCODE_NXDOMAIN);
    if (q.type === TYPE_AAAA) return reply(msg, q, RCODE_NOERROR);
    const answer = await this.ask(msg).catch(() => null);
    if (!answer) return reply(msg, q, RCODE_SERVFAIL);
    if (decision === 'pin' && q.type === TYPE_A) {
      const found = answerAddresses(answer, q.name);
      if (!found) return reply(msg, q, RCODE_SERVFAIL);
      // Pinned before the box learns the addresses: its first connection finds them allowed.
      // A pin refused (the box's cap) or failed is SERVFAIL: the box never gets an address it cannot reach.
      const pinned = await this.opts.pin(boxId, found.addresses, found.ttl).then(
        () => true,
        (err: Error) => {
          this.opts.log.warn({ err: err.message, devbox: boxId }, 'box DNS answer not pinned');
          return false;
        },
      );
      if (!pinned) return reply(msg, q, RCODE_SERVFAIL);
    }
    return answer;
  }

  /** One token of the box's bucket, refilled for the time since the last question. */
  private take(box: BoxSockets): boolean {
    const { perSecond, burst } = this.opts.rate ?? DNS_RATE;
    const now = Date.now();
    box.tokens = Math.min(burst, box.tokens + ((now - box.filled) * perSecond) / 1000);
    box.filled = now;
    if (box.tokens < 1) return false;
    box.tokens--;
    return true;
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

/** Settles when `start` calls back: rejects on an error or a close first. */
function bound(target: EventEmitter, start: (done: () => void) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const early = () => reject(new Error('box DNS closed before it was bound'));
    target.once('error', reject);
    target.once('close', early);
    start(() => {
      target.off('error', reject);
      target.off('close', early);
      resolve();
    });
  });
}

function formErr(msg: Buffer): Buffer {
  const out = Buffer.from(msg.subarray(0, 12));
  out.writeUInt16BE(0x8000 | RCODE_FORMERR, 2);
  out.fill(0, 4, 12);
  return out;
}
