/**
 * The egress table's shared part: its sets, maps and chains, the rules of its shared chains (the same for
 * every box of every node; what is per box is in set elements, what is per node in the node's own chains,
 * egress-node.ts), and the rules of a box's own chain for overlapping port rules.
 */
import type { EgressRules } from '../driver.js';

/** The egress settings (part of the runtime's options); here, where the rules are made from them, so egress.ts imports this file and not the reverse. */
export interface EgressConfig {
  /** DEVBOXD_NODE_NAME: the node whose boxes these bounds are (its chains in the host's table are its own). */
  node: string;
  /** DEVBOXD_BOX_SUBNET: IPv4 network (prefix at most /16) the boxes' /31 links are carved from. */
  subnet: string;
  /** DEVBOXD_EGRESS_DENY: never reachable from a box, whatever its policy. */
  deny: string[];
  /** DEVBOXD_EGRESS_OPEN_INTERFACES: host interfaces whose networks stay out of the floor. */
  openInterfaces?: string[];
  /** DEVBOXD_EGRESS_PRIVATE_ALLOW: parts of the private ranges left out of the floor (a policy's CIDR may open them). */
  privateAllow?: string[];
  /** Bytes per second a box may send, and receive (each way). */
  bandwidthBytes: number;
  /** Connections a box may hold open at once. */
  maxConnections: number;
  /** DEVBOXD_DNS_UPSTREAM: what the boxes' DNS (dns/box-dns.ts) asks; absent, nothing answers their questions. */
  dnsUpstream?: { address: string; port: number };
}

export const TABLE = 'inet devboxd';
export const REFUSE = 'reject with icmpx type admin-prohibited';

/**
 * What each server's boxes never reach beyond the host-wide floor (`never4`): its DEVBOXD_EGRESS_DENY, the
 * private ranges but what its DEVBOXD_EGRESS_PRIVATE_ALLOW opens, and the host's networks but its open
 * interfaces, by box interface. Nodes of one host share the table, so a node's lists must hold for its
 * own boxes whatever lists another node started with.
 */
export const NEVER_BOX_SET = `add set ${TABLE} never_box { type ifname . ipv4_addr; flags interval; }`;

export function cidrRules(chain: string, c: EgressRules['cidrs'][number]): string[] {
  if (c.ports.length === 0) return [`add rule ${chain} ip daddr ${c.cidr} accept`];
  return c.ports.map((p) => {
    const range = p.endPort && p.endPort !== p.port ? `${p.port}-${p.endPort}` : String(p.port);
    const proto = p.protocol ? `meta l4proto ${p.protocol.toLowerCase()}` : 'meta l4proto { tcp, udp }';
    return `add rule ${chain} ip daddr ${c.cidr} ${proto} th dport ${range} accept`;
  });
}

/**
 * The map from each box's interface to its node's chain (egress-node.ts): a box without an element reaches
 * nothing, and the kernel keeps a node's chain while any box's element jumps to it. Its presence marks this
 * layout.
 */
export const NODES_MAP = `${TABLE} nodes { type ifname : verdict; }`;

/** The table's shared sets, maps and chains: made once per host. */
export function baseObjects(): string[] {
  const t = TABLE;
  return [
    `add map ${NODES_MAP}`,
    `add set ${t} never4 { type ipv4_addr; flags interval; auto-merge; }`,
    NEVER_BOX_SET,
    `add set ${t} private4 { type ipv4_addr; flags interval; auto-merge; }`,
    `add set ${t} boxnet4 { type ipv4_addr; flags interval; auto-merge; }`,
    `add set ${t} all_out { type ifname; }`,
    `add set ${t} pinned { type ifname . ipv4_addr; flags timeout; }`,
    `add map ${t} cidrs { type ifname : verdict; }`,
    `add set ${t} cidr_any { type ifname . ipv4_addr; flags interval; }`,
    `add set ${t} cidr_port { type ifname . ipv4_addr . inet_proto . inet_service; flags interval; }`,
    `add set ${t} dns_rate { type ifname; size 65536; flags dynamic, timeout; timeout 1m; }`,
    `add chain ${t} input { type filter hook input priority -5; policy accept; }`,
    `add chain ${t} forward { type filter hook forward priority -5; policy accept; }`,
    `add chain ${t} postrouting { type nat hook postrouting priority srcnat; policy accept; }`,
    `add chain ${t} box_input`,
    `add chain ${t} box_forward_in`,
    `add chain ${t} box_forward_out`,
    `add chain ${t} box_policy`,
  ];
}

/**
 * Every rule of the table's shared chains, replacing what they held: the same for every node (none of its
 * settings is here), so whichever node wrote them last, they hold every box to the host-wide floor.
 */
export function baseRules(): string[] {
  const t = TABLE;
  return [
    ...['input', 'forward', 'postrouting', 'box_input', 'box_forward_in', 'box_forward_out', 'box_policy'].map((c) => `flush chain ${t} ${c}`),
    `add rule ${t} input iifname "dbx*" jump box_input`,
    // A box address arrives only by its link: from anywhere else it is spoofed (the DNS forwarder trusts it).
    `add rule ${t} input iifname != "dbx*" iifname != "lo" ip saddr @boxnet4 drop`,
    // A box's DNS over UDP past twice the forwarder's own rate is dropped here, before the server reads it
    // (first: a resolver's one socket is `established` after its first answer).
    `add rule ${t} box_input meta l4proto udp th dport 53 update @dns_rate { iifname limit rate over 200/second burst 400 packets } drop`,
    `add rule ${t} box_input ct state established,related accept`,
    // DNS only to the box's own host end (the address is local on the interface it came in by), and only to
    // a socket bound to that address, as the forwarder's are: a host service listening on *:53 never answers.
    `add rule ${t} box_input ip daddr @boxnet4 meta l4proto { tcp, udp } th dport 53 fib daddr . iif type local socket wildcard 0 accept`,
    `add rule ${t} box_input ${REFUSE}`,
    `add rule ${t} forward oifname "dbx*" jump box_forward_in`,
    `add rule ${t} forward iifname "dbx*" jump box_forward_out`,
    `add rule ${t} box_forward_in iifname "dbx*" ${REFUSE}`,
    `add rule ${t} box_forward_in ct state != { established, related } drop`,
    // The box's node: its inbound bound, then accept.
    `add rule ${t} box_forward_in oifname vmap @nodes`,
    `add rule ${t} box_forward_in drop`,
    `add rule ${t} box_forward_out meta nfproto ipv6 ${REFUSE}`,
    // Before any node's chain: the host, link-local and metadata addresses, every node's box subnet.
    `add rule ${t} box_forward_out ip daddr @never4 ${REFUSE}`,
    // The box's node: its outbound bounds, then box_policy (a verdict either way).
    `add rule ${t} box_forward_out iifname vmap @nodes`,
    `add rule ${t} box_forward_out ${REFUSE}`,
    `add rule ${t} box_policy ct state established,related accept`,
    `add rule ${t} box_policy iifname . ip daddr @never_box ${REFUSE}`,
    `add rule ${t} box_policy iifname . ip daddr @cidr_any accept`,
    `add rule ${t} box_policy iifname . ip daddr . meta l4proto . th dport @cidr_port accept`,
    `add rule ${t} box_policy iifname vmap @cidrs`,
    // What never_box left open of the private ranges is for a policy's CIDR alone, never allow_all or a name.
    `add rule ${t} box_policy ip daddr @private4 ${REFUSE}`,
    `add rule ${t} box_policy iifname @all_out accept`,
    `add rule ${t} box_policy iifname . ip daddr @pinned accept`,
    `add rule ${t} box_policy ${REFUSE}`,
    `add rule ${t} postrouting ip saddr @boxnet4 oifname != "dbx*" masquerade`,
  ];
}
