/**
 * Private networks the host routes to, made of parts the test owns (issue 23, item 4): a network namespace
 * joined to the host by a veth, holding an HTTP server on addresses of each private range and on one public
 * one (198.18.201.2, RFC 2544's benchmarking range: what a policy opens on its own). The host routes those
 * networks through the veth, as a cloud host routes the rest of its VPC. No packet leaves the machine.
 */
import { startWorld } from './egress-world.js';

/** The host end of the link: its only address is its own /32, so its network is in no server's floor. */
export const PRIVATE_IF = 'npprivate0';
const HOST_SIDE = '10.201.77.1';
const NS = 'devboxd-np-private';
/** Each serves HTTP on port 80, answering `private <its address>`. */
export const PRIVATE_HOSTS = {
  /** Where DEVBOXD_EGRESS_PRIVATE_ALLOW=10.201.77.0/24 opens. */
  opened: '10.201.77.2',
  /** The same 10.0.0.0/8, outside that /24. */
  tenNet: '10.201.78.2',
  sixteen: '172.22.201.2',
  lan: '192.168.201.2',
  /** Not private: reached by a policy's CIDR alone. */
  public: '198.18.201.2',
} as const;
const NETWORKS = ['10.201.77.0/24', '10.201.78.0/24', '172.22.201.0/24', '192.168.201.0/24', '198.18.201.0/24'];

const SERVER = `
const http = require('node:http');
let n = 0;
const addrs = process.argv.slice(1);
for (const a of addrs)
  http.createServer((req, res) => res.end('private ' + req.socket.localAddress)).listen(80, a, () => ++n === addrs.length && console.log('ready'));
`;

export function startPrivateWorld(): Promise<{ close(): void }> {
  return startWorld({ ns: NS, hostIf: PRIVATE_IF, hostSide: HOST_SIDE, addresses: Object.values(PRIVATE_HOSTS), routes: NETWORKS, server: SERVER });
}
