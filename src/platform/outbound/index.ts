/**
 * The outbound guard: every connection the server opens for a tenant (gateway and MCP upstreams, registry
 * pulls with their token realms and redirects, git) refuses loopback, link-local, private, shared and
 * special-purpose ranges, the host's own addresses and the box subnet, unless DEVBOXD_OUTBOUND_ALLOW opens them.
 */
export { type Address, parseAddress, rangeCidrs4, refusedRange } from './address.js';
export { type OutboundAllow, parseOutboundAllow } from './allow-list.js';
export { OutboundGuard, type OutboundGuardOptions, OutboundRefused, outboundRefusal } from './guard.js';
export { LazyAgent } from './lazy-agent.js';
