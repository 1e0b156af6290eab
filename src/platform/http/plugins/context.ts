import type { KeyCheck } from './key-check.js';
import type { Principal, ResourceType } from '../../auth/principal.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every route that requires a key. */
    principal: Principal;
    /** Set while the key is checked alongside the route's reads (`overlapAuth`); the answer waits for it. */
    keyCheck: KeyCheck | null;
  }
  interface FastifyContextConfig {
    /** false: no API key needed (health, OpenAPI, presigned URLs). */
    auth?: boolean;
    /** true: any key of the operator's (default) account, whatever its scopes; no resource type (metrics). */
    operator?: boolean;
    /**
     * A read without side effects answered through the reply (no hijack, no stream written before onSend):
     * its reads may run while the key is checked (AccountService.hinted), the answer waits for the check.
     * 'folded': the handler reads the key in its own statement (`req.keyCheck.fold()`, then `settle`).
     */
    overlapAuth?: boolean | 'folded';
    /** Resource type a restricted key needs a scope on; GET needs read, other methods write unless `access` says. */
    resource?: ResourceType;
    /** The level `resource` needs, for POST routes that only read (download_file, wait_for_status...). */
    access?: 'read' | 'write';
    /** Further grants the route needs (snapshotting a devbox writes a snapshot and reads the devbox). */
    alsoNeeds?: { resource: ResourceType; access: 'read' | 'write' }[];
    /**
     * false: outside x-request-id claims and replay (streaming, read-only or naturally repeatable routes);
     * a function decides per request (execute: only without a command_id); 'sealed': replayed, with the
     * stored answer sealed under the server's secret key (an answer that shows a secret once: key creation).
     */
    idempotent?: boolean | 'sealed' | ((req: FastifyRequest) => boolean);
  }
}
