/**
 * Address ranges of the boxes' egress, shared by the runtime (which writes them into the kernel's sets) and
 * the network policies (whose view names what they close), the IPv4 CIDR arithmetic both use, and the host
 * name patterns the boxes' DNS matches.
 */
export { BOX_FLOOR, type BoxRangeConfig, closedPrivate, closedRanges, outsidePrivate, PRIVATE_RANGES } from './box-ranges.js';
export { intersect4, ip4, parse4, span, subtract4, union4 } from './ipv4-cidrs.js';
export { hostMatcher } from './host-names.js';
