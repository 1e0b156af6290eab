import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Agent, buildConnector } from 'undici';
import { type Address, HostAddresses, inCidrs, parseAddress, refusedRange } from './address.js';
import type { OutboundAllow } from './allow-list.js';
import { LazyAgent, loadUndici } from './lazy-agent.js';

/** A connection the guard did not open: the host, and why (which kind of address it is or resolves to). */
export class OutboundRefused extends Error {
  readonly code = 'EOUTBOUNDREFUSED';

  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`${host} is refused by the server's outbound rules: it is or resolves to ${reason} (DEVBOXD_OUTBOUND_ALLOW opens it)`);
  }
}

/** The OutboundRefused behind `err` (fetch and undici wrap it in causes), if any. */
export function outboundRefusal(err: unknown): OutboundRefused | null {
  let e = err as { cause?: unknown } | undefined;
  for (let i = 0; i < 6 && e; i++, e = e.cause as typeof e) if (e instanceof OutboundRefused) return e;
  return null;
}

export interface OutboundGuardOptions {
  /** DEVBOXD_OUTBOUND_ALLOW: names and networks opened despite the rules. */
  allow: OutboundAllow;
  /** DEVBOXD_BOX_SUBNET: the boxes' own links, refused like the host's addresses. */
  boxSubnet?: string;
}

/**
 * The one gate of every connection the server opens on a tenant's behalf. It resolves the host name itself,
 * checks every address the name resolves to, and lets the socket connect to exactly those checked addresses
 * (net's `lookup` hook), so a name that resolves, or later re-resolves, to a refused address never reaches it.
 * An IP literal is checked before the connection is attempted: a refusal never depends on the port's state.
 * Each new connection passes here, so every redirect, token realm and blob host is covered too.
 */
export class OutboundGuard {
  private readonly host = new HostAddresses();
  private readonly boxSubnet: [Address, number] | null;

  constructor(private readonly opts: OutboundGuardOptions) {
    this.boxSubnet = opts.boxSubnet ? ipaddr.parseCIDR(opts.boxSubnet) : null;
  }

  /** Why a connection to `addr` (named `host`) is refused, or null when it may be opened. */
  refusal(host: string, addr: Address): string | null {
    if (this.opts.allow.names.has(normalName(host)) || inCidrs(addr, this.opts.allow.cidrs)) return null;
    const range = refusedRange(addr);
    if (range) return range;
    if (this.boxSubnet && inCidrs(addr, [this.boxSubnet])) return "an address of the boxes' subnet";
    if (this.host.has(addr)) return "one of the server's own addresses";
    return null;
  }

  /**
   * Why `url` is refused before any lookup: its host is an IP literal or a `localhost` name the rules refuse.
   * A config naming such a URL is refused at create; any other host name is checked at each connection.
   */
  literalRefusal(url: URL): string | null {
    const host = normalName(url.hostname);
    const addr = parseAddress(host);
    if (addr) return this.refusal(host, addr);
    if ((host === 'localhost' || host.endsWith('.localhost')) && !this.opts.allow.names.has(host)) return 'a loopback address';
    return null;
  }

  /** net's lookup hook: resolves `hostname`, refusing the whole name if any of its addresses is refused. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      for (const a of addresses) {
        const addr = parseAddress(a.address);
        const reason = addr ? this.refusal(hostname, addr) : 'an address it cannot read';
        if (reason) return callback(new OutboundRefused(hostname, reason), '');
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  /** An undici connector (Agent's `connect`, built with undici's `buildConnector`) that opens only what the rules allow. */
  connector(build: typeof buildConnector, opts: buildConnector.BuildOptions = {}): buildConnector.connector {
    const connect = build({ ...opts, lookup: this.lookup } as buildConnector.BuildOptions);
    return (options, callback) => {
      // net skips the lookup hook for an IP literal: it is checked here, before any packet is sent.
      const addr = parseAddress(options.hostname);
      const reason = addr && this.refusal(options.hostname, addr);
      if (reason) return process.nextTick(callback, new OutboundRefused(options.hostname, reason), null);
      connect(options, callback);
    };
  }

  /**
   * An undici Agent whose every connection passes the guard; `connect` carries the connector's own options.
   * Made (and undici loaded) at its first request.
   */
  agent(opts: Agent.Options & { connect?: buildConnector.BuildOptions } = {}): LazyAgent {
    const { connect, ...rest } = opts;
    return new LazyAgent((undici) => new undici.Agent({ ...rest, connect: this.connector(undici.buildConnector, connect) }));
  }

  /** fetch through `dispatcher` (an `agent()` of this guard): redirects it follows open new, guarded connections. */
  static fetch(dispatcher: LazyAgent): typeof globalThis.fetch {
    return (async (input: string | URL, init?: RequestInit) => {
      const [undici, agent] = await Promise.all([loadUndici(), dispatcher.get()]);
      return undici.fetch(input, { ...(init as object), dispatcher: agent } as Parameters<Undici['fetch']>[1]);
    }) as unknown as typeof globalThis.fetch;
  }
}

type Undici = Awaited<ReturnType<typeof loadUndici>>;

function normalName(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}
