/**
 * The git relay: boxes fetch repositories through the box services (`http://127.0.0.1:<port>/git/...`),
 * and the server fetches from DEVBOXD_GIT_BASE_URL on their behalf. A clone is allowed by a grant the
 * server makes for one box and one repository for as long as the clone runs; the box shows the grant's
 * random key (an `Authorization` header git sends from its environment), never the repository's token,
 * which the relay adds to the upstream request itself. Only git's fetch (smart HTTP upload-pack) passes:
 * nothing can be pushed, and no other path of the forge is reachable.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type LazyAgent, OutboundGuard, outboundRefusal } from '../../platform/outbound/index.js';
import type { Logger } from '../../lib/logger.js';
import { sendJson } from '../../platform/boxlink/index.js';
import { answerSent } from '../../platform/http/request-signal.js';

export const GIT_PREFIX = '/git';

export interface CloneGrant {
  key: string;
  boxId: string;
  owner: string;
  name: string;
  /** The upstream's last error status (401, 403, 404, …) or network failure, to say why a clone failed. */
  upstreamStatus: number | 'unreachable' | null;
}

/** Request headers git sends that the upstream needs (protocol v2 rides on Git-Protocol). */
const PASS_REQUEST = ['accept', 'accept-encoding', 'content-type', 'content-encoding', 'git-protocol', 'user-agent', 'content-length'];
const PASS_RESPONSE = ['content-type', 'content-encoding', 'cache-control', 'expires', 'pragma', 'content-length'];

export class GitRelay {
  private readonly grants = new Map<string, CloneGrant>();
  /** Grant key → the repository's token (plain, in memory only while the clone runs). */
  private readonly tokens = new Map<string, string | null>();
  private readonly agent: LazyAgent;
  /** fetch through the relay's guarded agent (what a build resolves a code mount's ref with). */
  readonly fetch: typeof globalThis.fetch;

  constructor(
    /** DEVBOXD_GIT_BASE_URL, without a trailing slash. */
    private readonly baseUrl: string,
    private readonly log: Logger,
    /** Every connection to the git server passes the outbound guard. */
    outbound: OutboundGuard,
  ) {
    this.agent = outbound.agent({ headersTimeout: 120_000, bodyTimeout: 300_000, connect: { timeout: 15_000 }, keepAliveTimeout: 4_000 });
    this.fetch = OutboundGuard.fetch(this.agent);
  }

  /** Lets `boxId` fetch owner/name until `revoke`; `token` (plain) goes upstream, never to the box. */
  grant(boxId: string, owner: string, name: string, token: string | null): { grant: CloneGrant; env: Record<string, string>; url: (port: number) => string } {
    const grant: CloneGrant = { key: randomBytes(24).toString('base64url'), boxId, owner, name, upstreamStatus: null };
    this.grants.set(grant.key, grant);
    this.tokens.set(grant.key, token);
    return {
      grant,
      // git reads extra configuration from the environment: the header never shows on a command line. A process
      // of the box user left running (an install script) could read it from /proc during the clone: that only
      // fetches this same granted repository for this box, and the token itself never enters the box.
      env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Bearer ${grant.key}`, GIT_TERMINAL_PROMPT: '0' },
      url: (port) => `http://127.0.0.1:${port}${GIT_PREFIX}/${owner}/${name}`,
    };
  }

  revoke(grant: CloneGrant): void {
    this.grants.delete(grant.key);
    this.tokens.delete(grant.key);
  }

  /** The repository's web address (what a clone's `origin` points at once the relay's grant is gone). */
  upstreamUrl(owner: string, name: string): string {
    return `${this.baseUrl}/${owner}/${name}`;
  }

  /** The BoxServiceHandler for GIT_PREFIX. */
  readonly handle = async (req: IncomingMessage, res: ServerResponse, boxId: string): Promise<void> => {
    const m = /^\/git\/([^/?]+)\/([^/?]+)\/(info\/refs|git-upload-pack)(\?.*)?$/.exec(req.url ?? '');
    const auth = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const grant = auth ? this.grants.get(auth) : undefined;
    if (!grant || grant.boxId !== boxId) return sendJson(res, 401, { message: 'no clone of this box is in progress' });
    // Owner and name are plain words (REPO_PART): compared as sent, never decoded.
    if (!m || m[1] !== grant.owner || m[2] !== grant.name) return sendJson(res, 404, { message: 'the relay fetches only the granted repository' });
    const [, , , what, query = ''] = m;
    // git sends no query on POST: none of the box's reaches the upstream.
    const fetchOnly = what === 'info/refs' ? req.method === 'GET' && query === '?service=git-upload-pack' : req.method === 'POST' && query === '';
    if (!fetchOnly) return sendJson(res, 403, { message: 'the relay only fetches (git-upload-pack)' });
    const url = new URL(`${this.upstreamUrl(grant.owner, grant.name)}/${what}${query}`);
    const headers: Record<string, string> = {};
    for (const h of PASS_REQUEST) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
    const token = this.tokens.get(grant.key);
    if (token) headers.authorization = `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
    const abort = new AbortController();
    res.on('close', () => answerSent(res) || abort.abort());
    try {
      await this.agent.stream(
        {
          origin: url.origin,
          path: url.pathname + url.search,
          method: req.method as 'GET',
          headers,
          body: req.method === 'POST' ? req : null,
          signal: abort.signal,
        },
        ({ statusCode, headers: up }) => {
          if (statusCode >= 400) grant.upstreamStatus = statusCode;
          const out: Record<string, string> = {};
          for (const h of PASS_RESPONSE) if (typeof up[h] === 'string') out[h] = up[h];
          // Whatever the upstream asked for (a login), git in the box has nothing to answer with.
          res.writeHead(statusCode === 401 ? 403 : statusCode, out);
          return res;
        },
      );
    } catch (err) {
      if (abort.signal.aborted) return;
      grant.upstreamStatus = 'unreachable';
      this.log.info({ err: (err as Error).message, upstream: url.origin }, 'git relay upstream failed');
      const why = outboundRefusal(err)?.message ?? (err as Error).message;
      if (!res.headersSent) sendJson(res, 502, { message: `${url.origin} could not be reached: ${why}` });
      else res.destroy();
    }
  };

  close(): Promise<void> {
    return this.agent.close();
  }
}
