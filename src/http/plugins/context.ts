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
    /** false: never replay this route's answer by x-request-id (streaming or non-creating routes). */
    idempotent?: boolean;
  }
}

export {};
