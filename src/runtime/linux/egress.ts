/**
 * Egress of boxes: the host's nftables table `inet devboxd` and each box's part of it.
 *
 * Every box has a veth to the host (native/boxnet.c): a /31 of DEVBOXD_BOX_SUBNET chosen by the box's host
 * id-range slot, so addresses are unique host-wide like the ranges. The table's shared chains are fixed and
 * the same from every node of the host; each node has chains of its own for its bounds (egress-node.ts).
 * What is per box lives in set elements keyed by its host interface, changed over netlink by native/nftsetd
 * (the `nft` tool reads every element on the host before each change): `nodes` (a jump to its node's chain;
 * without it the box reaches nothing), `all_out` (allow_all), `cidr_any` and `cidr_port` (its CIDR rules,
 * egress-cidrs.ts; in `cidrs` a jump to a chain of its own for port rules that overlap), `pinned`
 * (interface . address, with a timeout: what its DNS answered for allowed names).
 * Before any of them come the floor nothing opens (the host, link-local and metadata addresses, every node's
 * box subnet; then per box DEVBOXD_EGRESS_DENY and the private ranges but the parts DEVBOXD_EGRESS_PRIVATE_ALLOW
 * opens) and its node's bandwidth and connection bounds; the private parts a node opens open only to a CIDR
 * of the box's policy (a hostname resolving there, or allow_all, does not). Nothing from a box reaches the
 * host itself but its DNS forwarder (udp/tcp 53 on its host end), nothing reaches another box, and nothing
 * outside opens a connection into one.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { BOX_FLOOR, closedPrivate, ip4, PRIVATE_RANGES, parse4, union4 } from '../../platform/net/index.js';
import type { EgressRules } from '../driver.js';
import { BoxDns } from './dns/box-dns.js';
import { run } from './fsutil.js';
import { NftShell } from './nft.js';
import { NftSetDaemon } from './nftset.js';
import { planCidrs } from './egress-cidrs.js';
import { hostNetworks } from './egress-floor.js';
import { nodeChains, nodeRules, type NodeChains } from './egress-node.js';
import { baseObjects, baseRules, cidrRules, NODES_MAP, TABLE, type EgressConfig } from './egress-table.js';
import type { RuntimeLogger } from './logger.js';

export { TABLE, type EgressConfig } from './egress-table.js';
/** A pinned hostname address stays in a box's set at least this long, whatever its DNS TTL. */
const MIN_PIN_SECONDS = 60;
/** Upstream (which a tenant may run) sets the TTL: a pin lasts at most this long whatever it says. */
export const MAX_PIN_SECONDS = 3600;
/** Addresses pinned for one box at once: its DNS cannot grow the shared set (and nftsetd's work) without end. */
export const MAX_PINS_PER_BOX = 4096;

export interface BoxLink {
  /** Host-side interface name (from the box id). */
  hostIf: string;
  hostAddress: string;
  boxAddress: string;
}

/** Base address and prefix of an IPv4 CIDR, or null when it is not one in canonical form. */
export function parseCidr(cidr: string): { base: number; prefix: number } | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) > 32) return null;
  const base = parse4(m.slice(1, 5).join('.'));
  const prefix = Number(m[5]);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return (base & mask) >>> 0 === base ? { base, prefix } : null;
}

/** Host-side interface of a box: "dbx" and 12 hex digits of its id's digest (IFNAMSIZ allows 15). */
export const hostIfName = (id: string): string => `dbx${createHash('sha256').update(id).digest('hex').slice(0, 12)}`;

export class Egress {
  private readonly nft: NftShell;
  private readonly sets: NftSetDaemon;
  private readonly base: number;
  private installed: Promise<void> | undefined;
  /** Boxes linked by this process whose policy is not set yet: nothing of theirs is in the sets to flush. */
  private readonly fresh = new Set<string>();
  /** Boxes whose policy took a chain of its own (overlapping port rules). */
  private readonly chained = new Set<string>(); // chain keys (chainKey), found again at start
  /** Per box, its pinned addresses and when each expires (ms): what the per-box cap counts. */
  private readonly pins = new Map<string, Map<string, number>>();
  /** Per box, the floor this process wrote into `never_box` (its CIDRs joined): rewritten only when it changed. */
  private readonly floors = new Map<string, string>();
  /** The private ranges this server's boxes never reach (all but DEVBOXD_EGRESS_PRIVATE_ALLOW). */
  private readonly closedPrivate: string[];
  /** The boxes' DNS, pinning into their sets; it goes with a box's link (`release`). */
  readonly dns: BoxDns | undefined;
  /** This node's chains, which its boxes' `nodes` elements jump to. */
  private readonly node: NodeChains;

  constructor(
    private readonly cfg: EgressConfig,
    private readonly log: RuntimeLogger,
  ) {
    const net = parseCidr(cfg.subnet);
    if (!net || net.prefix > 16) throw new Error(`DEVBOXD_BOX_SUBNET ${cfg.subnet} is not an IPv4 network of /16 or larger`);
    this.base = net.base;
    this.closedPrivate = closedPrivate(cfg.privateAllow ?? []);
    this.node = nodeChains(cfg);
    this.nft = new NftShell(TABLE, log);
    this.sets = new NftSetDaemon('devboxd', log);
    this.dns = cfg.dnsUpstream && new BoxDns({ upstream: cfg.dnsUpstream, pin: (id, a, ttl) => this.pin(id, a, ttl), log });
  }

  /** The box's link for its id-range slot (1..30000: two addresses each fit a /16). */
  link(id: string, slot: number): BoxLink {
    this.fresh.add(id);
    const host = this.base + 2 * slot;
    return { hostIf: hostIfName(id), hostAddress: ip4(host), boxAddress: ip4(host + 1) };
  }

  /**
   * Installs the table when missing (another node of the host may have), writes its shared rules and this
   * node's chains anew, and refreshes its address sets.
   */
  prepare(): Promise<void> {
    this.installed ??= (async () => {
      await this.nft.run([`add table ${TABLE}`]);
      // The shared objects are made once per host; the `nodes` map marks this layout. A table without it is
      // an older devboxd's (its shared chains held the last server's bounds) and is made anew, boxes'
      // elements with it (each node writes its boxes' again as it adopts them; an older server's boxes reach
      // nothing until it runs this version). `create` fails when the map is there: of two nodes starting at
      // once, one makes the table and the other keeps what it made.
      await this.nft.run([`create map ${NODES_MAP}`, `delete table ${TABLE}`, `add table ${TABLE}`, ...baseObjects()]).catch((err: Error) => {
        if (!/File exists/.test(err.message)) throw err;
      });
      // One transaction: the shared rules (the same from every node) and this node's own chains, while the
      // sets, boxes' elements included, stay. Another node's chains are not touched, so its boxes keep their
      // bounds through this node's start.
      const sets = (await run('nft', ['list', 'sets', 'inet'])).stdout;
      const ours = sets.split(/^table /m).find((t) => t.startsWith(`${TABLE} {`)) ?? '';
      await this.nft.run([
        ...baseRules(),
        // Host-wide, and only ever added to: every node's boxes share this part of the floor (and each
        // node's box subnet is out of every box's reach). What differs per node is in never_box.
        `add element ${TABLE} never4 { ${[...BOX_FLOOR, this.cfg.subnet].join(', ')} }`,
        // Whole: what the floor leaves open of them (DEVBOXD_EGRESS_PRIVATE_ALLOW) still needs a policy's CIDR.
        `flush set ${TABLE} private4`,
        `add element ${TABLE} private4 { ${PRIVATE_RANGES.join(', ')} }`,
        `add element ${TABLE} boxnet4 { ${this.cfg.subnet} }`,
        ...nodeRules(
          this.cfg,
          [...ours.matchAll(/^\s*set (\S+) \{/gm)].map((m) => m[1]!),
        ),
      ]);
      await this.adoptChains();
      // Forwarding is what carries a box's packets out; the table above decides which.
      const fwd = '/proc/sys/net/ipv4/ip_forward';
      if (readFileSync(fwd, 'utf8').trim() !== '1') writeFileSync(fwd, '1');
    })().catch((err) => {
      this.installed = undefined;
      throw err;
    });
    return this.installed;
  }

  /**
   * Boxes' own chains outlive a restart: those of a box whose link is still on the host are known again (its
   * next policy or its release deletes them), those whose link is gone are deleted now.
   */
  private async adoptChains(): Promise<void> {
    const { stdout } = await run('nft', ['list', 'chains', TABLE.split(' ')[0]!]);
    const ours = stdout.split(/^table /m).find((t) => t.startsWith(`${TABLE} {`)) ?? '';
    const links = new Set([...(await run('ip', ['-o', 'link', 'show'])).stdout.matchAll(/^\d+: (dbx[0-9a-f]{12})[@:]/gm)].map((m) => m[1]));
    for (const [, key] of ours.matchAll(/chain c_([0-9a-f]{12}) /g)) {
      if (links.has(`dbx${key}`)) {
        this.chained.add(key!);
        continue;
      }
      // Its elements first: the box's verdict map element still jumps to the chain.
      await this.sets.run(dropElements(`dbx${key}`));
      await this.nft.run([`delete chain ${TABLE} c_${key}`]);
    }
  }

  /**
   * This server's floor for one box: its DEVBOXD_EGRESS_DENY, the private ranges but the parts
   * DEVBOXD_EGRESS_PRIVATE_ALLOW opens, and the networks of the host's interfaces (but the open ones), re-read
   * at every boot since interfaces come and go (a VPN, a container bridge). Per box, so another server of the
   * host with other lists changes nothing here. As the fewest CIDRs, apart: the kernel refuses an element
   * that meets one already in the set (nftsetd takes that as present), so 10.0.0.0/8 written after a host's
   * 10.0.0.0/24 would be lost.
   */
  private floorOf(): string[] {
    return union4([...hostNetworks(new Set(this.cfg.openInterfaces ?? [])), ...this.cfg.deny, ...this.closedPrivate]);
  }

  /**
   * Sets (or replaces) a box's policy. A replaced policy's pinned addresses go with it, and so do the box's
   * open connections unless the new policy allows everything: `established` is accepted before any policy
   * rule, so a connection the old policy let through would outlive a stricter one.
   */
  async apply(id: string, rules: Pick<EgressRules, 'allowAll' | 'cidrs'>, boxAddress?: string): Promise<void> {
    await this.prepare();
    const ifn = hostIfName(id);
    const fresh = this.fresh.delete(id);
    // The floor first: the box's other elements (below) let it out only past it. Rewriting it leaves it
    // missing for a moment, so a running box first loses what its policy opened: it reaches less in between,
    // never more (a policy's 10.0.0.0/8 must not meet a floor without it).
    const floor = this.floorOf();
    const rewrite = this.floors.get(id) !== floor.join(',');
    const withdrawn = rewrite && !fresh;
    if (withdrawn) await this.sets.run(openings(ifn));
    if (rewrite) {
      await this.sets.run([`flush never_box ${ifn}`, ...floor.map((c) => `range never_box ${ifn} ${c}`)]);
      this.floors.set(id, floor.join(','));
    }
    const chain = `c_${chainKey(id)}`;
    this.pins.delete(id);
    const plan = planCidrs(rules.cidrs);
    // Port rules that overlap take a chain of the box's own (made with the nft tool: slower on a busy host).
    if (plan.overlap) {
      this.chained.add(chainKey(id));
      await this.nft.run([`add chain ${TABLE} ${chain}`, `flush chain ${TABLE} ${chain}`, ...rules.cidrs.flatMap((c) => cidrRules(`${TABLE} ${chain}`, c))]);
    }
    await this.sets.run([
      ...(fresh || withdrawn ? [] : [`flush pinned ${ifn}`, `flush cidr_any ${ifn}`, `flush cidr_port ${ifn}`]),
      ...(plan.overlap ? [] : [...plan.any.map((c) => `range cidr_any ${ifn} ${c}`), ...plan.ports.map((c) => `range cidr_port ${ifn} ${c}`)]),
      rules.allowAll ? `add all_out ${ifn}` : `del all_out ${ifn}`,
      plan.overlap ? `jump cidrs ${ifn} ${chain}` : `del cidrs ${ifn}`,
      `jump nodes ${ifn} ${this.node.chain}`,
    ]);
    if (!fresh && !rules.allowAll && boxAddress) await this.cut(id, boxAddress);
    // A chain left by an earlier policy (unreferenced now).
    if (!plan.overlap && this.chained.delete(chainKey(id))) await this.nft.run([`delete chain ${TABLE} ${chain}`]).catch(() => undefined);
  }

  /** Deletes the conntrack entries the box started (conntrack exits 1 when there were none). */
  private async cut(id: string, boxAddress: string): Promise<void> {
    await run('conntrack', ['-D', '-s', boxAddress]).catch((err: Error & { stderr?: string }) => {
      if (!/0 flow entries/.test(err.stderr ?? ''))
        this.log.warn({ devbox: id, err: err.stderr?.trim() || err.message }, 'open connections of a box were not cut');
    });
  }

  /** Lets the box reach `addresses` (what its DNS answered for an allowed name) for `ttlSeconds`. */
  async pin(id: string, addresses: string[], ttlSeconds: number): Promise<void> {
    const ifn = hostIfName(id);
    const ms = Math.min(MAX_PIN_SECONDS, Math.max(MIN_PIN_SECONDS, Math.ceil(ttlSeconds))) * 1000;
    const valid = addresses.filter((a) => /^\d{1,3}(\.\d{1,3}){3}$/.test(a));
    const now = Date.now();
    let mine = this.pins.get(id);
    if (!mine) this.pins.set(id, (mine = new Map()));
    const added = valid.filter((a) => !mine.has(a)).length;
    if (mine.size + added > MAX_PINS_PER_BOX) {
      // Only at the cap: the expired ones leave the count (the kernel dropped them already).
      for (const [a, until] of mine) if (until <= now) mine.delete(a);
      if (mine.size + added > MAX_PINS_PER_BOX) {
        this.log.warn({ devbox: id, pinned: mine.size, asked: added }, 'a box reached its cap of pinned addresses');
        throw new Error(`the box has ${mine.size} pinned addresses (at most ${MAX_PINS_PER_BOX})`);
      }
    }
    for (const a of valid) mine.set(a, now + ms);
    await this.sets.run(valid.map((a) => `add pinned ${ifn} ${a} ${ms}`));
  }

  /**
   * Drops a box's link (a box's network namespace may outlive its init for a moment, and its addresses must
   * be free for the next box of its slot), then its elements and chain. Idempotent.
   */
  async release(id: string, link: BoxLink | null): Promise<void> {
    // Its DNS sockets first: the next box of the slot binds the same host end.
    this.dns?.stop(id);
    if (link) await run('ip', ['link', 'del', link.hostIf]).catch(() => undefined);
    this.fresh.delete(id);
    this.pins.delete(id);
    this.floors.delete(id);
    const ifn = hostIfName(id);
    try {
      await this.prepare();
      await this.sets.run(dropElements(ifn));
      if (this.chained.delete(chainKey(id))) await this.nft.run([`delete chain ${TABLE} c_${chainKey(id)}`]).catch(() => undefined);
    } catch (err) {
      this.log.warn({ devbox: id, err: (err as Error).message }, 'egress elements of a box were not removed');
    }
  }

  close(): void {
    this.dns?.close();
    this.nft.close();
    this.sets.close();
  }
}

/** nftsetd commands that remove what a box's policy opened: allow_all, its CIDR rules, its pinned addresses. */
const openings = (ifn: string): string[] => [
  `del all_out ${ifn}`,
  `del cidrs ${ifn}`,
  `flush pinned ${ifn}`,
  `flush cidr_any ${ifn}`,
  `flush cidr_port ${ifn}`,
];

/** nftsetd commands that remove every element of a box's interface (the floor last). */
const dropElements = (ifn: string): string[] => [`del nodes ${ifn}`, ...openings(ifn), `flush never_box ${ifn}`];

/** Names in the table: 12 hex digits of the id's digest, like the interface. */
const chainKey = (id: string): string => hostIfName(id).slice(3);
