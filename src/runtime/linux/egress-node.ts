/**
 * A node's own part of the egress table: the chains that hold its boxes to its bounds (bandwidth each way,
 * open connections) and the kernel-kept sets those bounds count in. Several devboxd servers (nodes) may share
 * a host and its one table: each box's interface is mapped to its node's chain (`nodes`, written with the
 * box's other elements), so a node's start rewrites only its own chains, never another node's.
 *
 * Names are `n_` and the node's key: its DEVBOXD_NODE_NAME made an nft identifier (at most 24 characters, so
 * `nft list table` shows whose chain it is) and 8 hex digits of its digest (node names that read alike stay
 * apart). The sets also carry the bounds they count under: the kernel gives each element the rule's bound when
 * it makes it and keeps it after the rule changes, so a node restarted with other bounds counts in new sets
 * and its old ones go in the same transaction (a node restarted with the same bounds keeps its counts).
 */
import { createHash } from 'node:crypto';
import { type EgressConfig, REFUSE, TABLE } from './egress-table.js';

export interface NodeChains {
  /** The chain a box's `nodes` element jumps to, both ways (from `box_forward_in` and `box_forward_out`). */
  chain: string;
  /** Its outbound half. */
  out: string;
  /** The node's sets under its current bounds. */
  sets: { conns: string; bwIn: string; bwOut: string };
  /** Whether a set name is one of this node's (under any bounds). */
  owns(set: string): boolean;
}

/** The node name as an nft identifier (letters, digits, `_`), readable and unique per name. */
export function nodeKey(node: string): string {
  const readable = node.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 24);
  return `${readable}_${createHash('sha256').update(node).digest('hex').slice(0, 8)}`;
}

export function nodeChains(cfg: EgressConfig): NodeChains {
  const n = `n_${nodeKey(cfg.node)}`;
  // A key ends in 8 hex digits: no other node's chain or set name can end in `_out`, `_in<digits>` … here.
  const mine = new RegExp(`^${n}_(conns|in|out)\\d+$`);
  return {
    chain: n,
    out: `${n}_out`,
    sets: { conns: `${n}_conns${cfg.maxConnections}`, bwIn: `${n}_in${cfg.bandwidthBytes}`, bwOut: `${n}_out${cfg.bandwidthBytes}` },
    owns: (set) => mine.test(set),
  };
}

/**
 * The node's chains and sets made (when missing) and its rules written anew; `existing` are the table's set
 * names, of which this node's under other bounds are deleted (after the flush, nothing refers to them). One
 * transaction with the shared rules, so no packet meets a half-written node.
 */
export function nodeRules(cfg: EgressConfig, existing: string[]): string[] {
  const t = TABLE;
  const n = nodeChains(cfg);
  const { conns, bwIn, bwOut } = n.sets;
  const current = new Set(Object.values(n.sets));
  const rate = `limit rate over ${cfg.bandwidthBytes} bytes/second burst ${Math.max(65536, Math.floor(cfg.bandwidthBytes / 10))} bytes`;
  return [
    `add chain ${t} ${n.chain}`,
    `add chain ${t} ${n.out}`,
    // Per box: its open connections (by its address), and a token bucket each way (dropped when idle).
    `add set ${t} ${conns} { type ipv4_addr; size 65536; flags dynamic; }`,
    `add set ${t} ${bwIn} { type ifname; size 65536; flags dynamic, timeout; timeout 1m; }`,
    `add set ${t} ${bwOut} { type ifname; size 65536; flags dynamic, timeout; timeout 1m; }`,
    `flush chain ${t} ${n.chain}`,
    `flush chain ${t} ${n.out}`,
    // Inbound packets come from no box (`box_forward_in` refused those): the rest is outbound.
    `add rule ${t} ${n.chain} iifname "dbx*" goto ${n.out}`,
    `add rule ${t} ${n.chain} update @${bwIn} { oifname ${rate} } drop`,
    `add rule ${t} ${n.chain} accept`,
    `add rule ${t} ${n.out} update @${bwOut} { iifname ${rate} } drop`,
    `add rule ${t} ${n.out} ct state new add @${conns} { ip saddr ct count over ${cfg.maxConnections} } ${REFUSE}`,
    // The policy, the same for every node's boxes, decides the rest and always ends in a verdict.
    `add rule ${t} ${n.out} goto box_policy`,
    ...existing.filter((s) => n.owns(s) && !current.has(s)).map((s) => `delete set ${t} ${s}`),
  ];
}
