import type { Principal, ResourceType } from '../../domain/accounts/account-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every route that requires a key. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** false: no API key needed (health, metrics, OpenAPI). */
    auth?: boolean;
    /** Resource type a restricted key needs a scope on; GET needs read, other methods write. */
    resource?: ResourceType;
    /**
     * false: outside x-request-id claims and replay (streaming, read-only or naturally repeatable routes);
     * a function decides per request (execute: only without a command_id).
     */
    idempotent?: boolean | ((req: FastifyRequest) => boolean);
  }
}

export {};
