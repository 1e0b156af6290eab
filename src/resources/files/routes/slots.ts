import type { FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS } from '../../../platform/errors.js';
import type { Gate } from '../../../lib/gate.js';
import { clientGone } from '../../../platform/http/request-signal.js';

/**
 * A preParsing hook that takes one of the gate's slots for the caller's account before the body is read and
 * gives it back once the answer is sent (or the client left). Past the gate's queue, or the account's share
 * of it, a 429 with Retry-After (the SDK waits and retries). With `holdMs`, a request that holds its slot
 * longer (a client that never reads its answer, or trickles its body) is cut off.
 */
export function holdSlot(gate: Gate, what: string, holdMs?: number) {
  return async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const release = await gate.enter(clientGone(reply), req.principal.accountId);
    if (!release) {
      throw ERRORS.busy(
        `too many ${what} in progress (${gate.concurrency} running, ${gate.queue} waiting, at most ${gate.perKey} running per account); retry shortly`,
      );
    }
    const deadline = holdMs === undefined ? undefined : setTimeout(() => reply.raw.destroy(), holdMs);
    deadline?.unref();
    reply.raw.once('close', () => {
      clearTimeout(deadline);
      release();
    });
    return payload;
  };
}
