// The console's pages: the sidebar's sections and every route, each page loaded when first opened so the
// first page pulls in only its own code (the terminal's xterm.js and the charts' uPlot load with the pages
// that draw them).
import type { AnyComponent } from 'preact';
import { lazy } from 'preact-iso';

export interface NavItem {
  href: string;
  label: string;
}

export const NAV: { section: string; items: NavItem[] }[] = [
  {
    section: 'Boxes',
    items: [
      { href: '/devboxes', label: 'Devboxes' },
      { href: '/snapshots', label: 'Snapshots' },
      { href: '/blueprints', label: 'Blueprints' },
    ],
  },
  {
    section: 'Configuration',
    items: [
      { href: '/secrets', label: 'Secrets' },
      { href: '/network-policies', label: 'Network policies' },
      { href: '/mcp-configs', label: 'MCP configs' },
      { href: '/gateway-configs', label: 'Gateway configs' },
    ],
  },
  {
    section: 'Data',
    items: [
      { href: '/objects', label: 'Objects' },
      { href: '/axons', label: 'Axons' },
      { href: '/agents', label: 'Agents' },
    ],
  },
  {
    section: 'Evaluation',
    items: [
      { href: '/benchmarks', label: 'Benchmarks' },
      { href: '/scenarios', label: 'Scenarios' },
    ],
  },
  { section: 'Account', items: [{ href: '/api-keys', label: 'API keys' }] },
];

export const ROUTES: { path: string; component: AnyComponent<any> }[] = [
  { path: '/devboxes', component: lazy(() => import('./pages/devboxes/list')) },
  { path: '/devboxes/new', component: lazy(() => import('./pages/devboxes/create')) },
  { path: '/devboxes/:id', component: lazy(() => import('./pages/devboxes/detail')) },
  { path: '/devboxes/:id/terminal', component: lazy(() => import('./pages/devboxes/terminal')) },
  { path: '/devboxes/:id/files', component: lazy(() => import('./pages/devboxes/files')) },
  { path: '/devboxes/:id/executions/:eid', component: lazy(() => import('./pages/devboxes/execution')) },
  { path: '/snapshots', component: lazy(() => import('./pages/snapshots')) },
  { path: '/blueprints', component: lazy(() => import('./pages/blueprints/list')) },
  { path: '/blueprints/:id', component: lazy(() => import('./pages/blueprints/detail')) },
  { path: '/secrets', component: lazy(() => import('./pages/secrets')) },
  { path: '/network-policies', component: lazy(() => import('./pages/network-policies')) },
  { path: '/mcp-configs', component: lazy(() => import('./pages/mcp-configs')) },
  { path: '/gateway-configs', component: lazy(() => import('./pages/gateway-configs')) },
  { path: '/objects', component: lazy(() => import('./pages/objects')) },
  { path: '/axons', component: lazy(() => import('./pages/axons/list')) },
  { path: '/axons/:id', component: lazy(() => import('./pages/axons/detail')) },
  { path: '/agents', component: lazy(() => import('./pages/agents')) },
  { path: '/benchmarks', component: lazy(() => import('./pages/benchmarks/list')) },
  { path: '/benchmarks/:id', component: lazy(() => import('./pages/benchmarks/detail')) },
  { path: '/benchmark-runs/:id', component: lazy(() => import('./pages/benchmarks/run')) },
  { path: '/scenarios', component: lazy(() => import('./pages/scenarios')) },
  { path: '/api-keys', component: lazy(() => import('./pages/api-keys')) },
];
