/**
 * The host name a box answers SSH on: `<label>.ssh.<domain>`, where the label is the devbox id with `-` for
 * `_` (a valid DNS label; ids are otherwise lower-case letters and digits, and ssh lower-cases host names).
 */
const LABEL = /^([a-z]{2,8})[-_]([0-9a-z]{8,64})$/;
const SNI = /^([^.]+)\.ssh\.(.+)$/;

export function labelOf(devboxId: string): string {
  return devboxId.replace('_', '-');
}

/** The devbox id a label (or the id itself) names, or null. */
export function devboxIdOf(label: string): string | null {
  const m = LABEL.exec(label.toLowerCase());
  return m ? `${m[1]}_${m[2]}` : null;
}

/**
 * The base domain of `url`: the configured one, else what the SDK's getTunnelUrl does with the API's host
 * name (`api.example.com` → `example.com`; any other name as it is).
 */
export function baseDomain(configured: string | null, requestHost: string): string {
  if (configured) return configured;
  let host = requestHost.toLowerCase();
  if (host.startsWith('[')) return 'localhost';
  host = host.replace(/:\d+$/, '').replace(/\.$/, '');
  if (!/^[a-z0-9.-]+$/.test(host)) return 'localhost';
  return host.startsWith('api.') ? host.slice(4) : host;
}

export function sshHostName(devboxId: string, domain: string): string {
  return `${labelOf(devboxId)}.ssh.${domain}`;
}

/** The devbox a TLS server name names; with `domain`, only names under `ssh.<domain>` count. */
export function devboxOfServerName(serverName: string, domain: string | null): string | null {
  const m = SNI.exec(serverName.toLowerCase().replace(/\.$/, ''));
  if (!m || (domain && m[2] !== domain)) return null;
  return devboxIdOf(m[1]!);
}
