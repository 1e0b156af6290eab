export type TunnelAuthMode = 'open' | 'authenticated';

/** What a create or enable_tunnel asks for; omitted fields take the API's defaults. */
export interface TunnelSettings {
  authMode?: TunnelAuthMode | null;
  /** Traffic counts as activity for after_idle (default true). */
  httpKeepAlive?: boolean | null;
  /** A request to a suspended box resumes it (default false). */
  wakeOnHttp?: boolean | null;
}

export interface Tunnel {
  devboxId: string;
  /** The unguessable label in `{port}-{key}.tunnel.<domain>`: lower-case hex, a valid DNS label. */
  key: string;
  authMode: TunnelAuthMode;
  /** Clear text, only for authenticated tunnels (sealed at rest). */
  authToken: string | null;
  httpKeepAlive: boolean;
  wakeOnHttp: boolean;
  createTimeMs: number;
}
