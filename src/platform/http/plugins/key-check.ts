import { type Authenticator, samePrincipal, type Principal } from '../../auth/principal.js';
import { ERRORS } from '../../errors.js';
import type { ApiKey } from '../../store/types.js';

const changed = () => ERRORS.unauthenticated('API key changed during the request; retry');

/**
 * The check of a hinted key on an `overlapAuth` route (PostgreSQL, AccountService.hinted): the route runs
 * under the hint while the key is read again, and its answer leaves only once `result()` is null. The key is
 * read by the route's own statement when the route can join it there (`fold` then `settle`: one statement
 * for the request), else by a statement of its own sent as the route starts (`start`), at the latest when
 * the answer is about to leave (a route that failed before settling). Either way the row read was committed
 * after the request arrived, so a revocation committed before it refuses it.
 */
export class KeyCheck {
  private outcome: Promise<unknown> | null = null;
  private folding = false;

  constructor(
    private readonly accounts: Authenticator,
    private readonly hash: string,
    private readonly hint: Principal,
  ) {}

  /** The key's hash for the route's statement to read the key by; undefined once it is read otherwise. */
  fold(): string | undefined {
    if (this.outcome || this.folding) return undefined;
    this.folding = true;
    return this.hash;
  }

  /** The key row the route's statement read by `fold()`'s hash: throws the refusal the request gets, if any. */
  settle(key: ApiKey | undefined): void {
    let err: unknown = null;
    try {
      if (!samePrincipal(this.accounts.admit(this.hash, key), this.hint)) err = changed();
    } catch (e) {
      err = e;
    }
    this.outcome = Promise.resolve(err);
    if (err) throw err;
  }

  /** Reads the key with a statement of its own, unless it was read or is being read already. */
  start(): void {
    if (this.outcome) return;
    this.outcome = this.accounts.checkHash(this.hash).then(
      (now) => (samePrincipal(now, this.hint) ? null : changed()),
      (err: unknown) => err,
    );
  }

  /** null once the key passed, else the refusal (or the error that prevented the check). */
  result(): Promise<unknown> {
    this.start();
    return this.outcome!;
  }
}
