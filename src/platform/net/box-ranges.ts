/**
 * The address ranges boxes never reach, as far as the server's configuration decides them: the floor no
 * policy opens, and the private ranges, closed but for the parts the operator opened
 * (DEVBOXD_EGRESS_PRIVATE_ALLOW). The runtime writes them into each box's floor, beside the host's own
 * networks (which change with its interfaces, so the runtime reads them at each boot); the policy view names
 * the parts of a policy's CIDRs they keep closed.
 */
import { rangeCidrs4 } from '../outbound/index.js';
import { subtract4, union4 } from './ipv4-cidrs.js';

/**
 * What the floor always holds, beside the host's own addresses and networks and the box subnet: this host,
 * link-local and cloud metadata (169.254/16; 100.64/10, the shared range, holds Alibaba's and tailnets;
 * 168.63.129.16 is Azure's WireServer), IETF protocol assignments, multicast and broadcast.
 */
export const BOX_FLOOR = ['0.0.0.0/8', '127.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10', '168.63.129.16/32', '192.0.0.0/24', '224.0.0.0/3'];

/** The private ranges (10/8, 172.16/12, 192.168/16), from the table the outbound guard judges by. */
export const PRIVATE_RANGES = rangeCidrs4('private');

/** The parts of `cidrs` outside every private range (what DEVBOXD_EGRESS_PRIVATE_ALLOW cannot open). */
export const outsidePrivate = (cidrs: readonly string[]): string[] => subtract4(cidrs, PRIVATE_RANGES);

/** The private ranges boxes do not reach: all of them but the parts `privateAllow` opens. */
export const closedPrivate = (privateAllow: readonly string[]): string[] => subtract4(PRIVATE_RANGES, privateAllow);

export interface BoxRangeConfig {
  /** DEVBOXD_BOX_SUBNET: the boxes' own links. */
  subnet: string;
  /** DEVBOXD_EGRESS_DENY. */
  deny: readonly string[];
  /** DEVBOXD_EGRESS_PRIVATE_ALLOW. */
  privateAllow: readonly string[];
}

/** Everything the configuration closes to boxes whatever their policy, as the fewest CIDRs. */
export const closedRanges = (cfg: BoxRangeConfig): string[] => union4([...BOX_FLOOR, cfg.subnet, ...cfg.deny, ...closedPrivate(cfg.privateAllow)]);
