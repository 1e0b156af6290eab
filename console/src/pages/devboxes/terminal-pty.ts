// The PTY endpoints of a box, as the browser reaches them: a tunnel made through the API with the signed-in
// key, then connect and control on the tunnel's path form (same origin, so the page's CSP allows them) with
// the tunnel's own token, and the WebSocket data plane, which carries that token as a subprotocol since a
// browser's WebSocket can send no header.
import { ApiError, post } from '../../api';

/** Any port reaches the PTY endpoints on a PTY tunnel; this one is what the path form names. */
const TUNNEL_PORT = 8080;

export interface PtyTunnel {
  key: string;
  token: string;
}

/** PtyConnectView, the fields the page reads. */
export interface PtyConnection {
  session_name: string;
  connect_url: string;
  attached: boolean;
  created: boolean;
  cols: number;
  rows: number;
  status: string;
}

export async function createTunnel(devboxId: string): Promise<PtyTunnel> {
  const t = await post<{ tunnel_key: string; auth_token: string }>(`/v1/devboxes/${encodeURIComponent(devboxId)}/create_pty_tunnel`);
  return { key: t.tunnel_key, token: t.auth_token };
}

/**
 * A request on the tunnel. Not through `request()`: a 401 here means the tunnel's token, not the API key,
 * so it must not sign the user out.
 */
async function onTunnel(t: PtyTunnel, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`/tunnel/${t.key}/${TUNNEL_PORT}${path}`, {
    method,
    headers: {
      'X-Runloop-Tunnel-Authorization': `Bearer ${t.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: { message?: string } = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {}
  if (!res.ok) throw new ApiError(res.status, parsed.message ?? `${res.status} ${res.statusText}`);
  return parsed;
}

/** Starts the session's shell, or finds the running one, at this size. */
export function connect(t: PtyTunnel, session: string, cols: number, rows: number): Promise<PtyConnection> {
  return onTunnel(t, 'GET', `/pty/${encodeURIComponent(session)}?cols=${cols}&rows=${rows}`) as Promise<PtyConnection>;
}

export async function resize(t: PtyTunnel, session: string, cols: number, rows: number): Promise<void> {
  await onTunnel(t, 'POST', `/pty/${encodeURIComponent(session)}/control`, { action: 'resize', cols, rows });
}

/** The data plane: raw terminal bytes both ways, as binary frames. */
export function attach(t: PtyTunnel, connectUrl: string): WebSocket {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  const ws = new WebSocket(`${scheme}://${location.host}${connectUrl}`, ['devboxd.pty', `devboxd.tunnel-auth.${base64url(t.token)}`]);
  ws.binaryType = 'arraybuffer';
  return ws;
}

function base64url(text: string): string {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * This tab's session name for the box: a reload finds the same shell, another tab starts its own (one
 * client may attach to a session at a time).
 */
export function sessionFor(devboxId: string, fresh = false): string {
  const key = `devboxd.pty.${devboxId}`;
  let name = fresh ? null : sessionStorage.getItem(key);
  if (!name) {
    name = `console-${crypto.getRandomValues(new Uint32Array(2)).join('')}`;
    sessionStorage.setItem(key, name);
  }
  return name;
}
