import { ERRORS } from '../../platform/errors.js';
import { newId } from '../../lib/ids.js';
import type { Logger } from '../../lib/logger.js';
import type { Page, PageQuery, Store } from '../../platform/store/types.js';
import { SealError, Sealer } from '../../platform/sealing/sealer.js';
import { SqlSecretStore } from './sql-secret-store.js';
import type { Secret, SecretRecord } from './types.js';

/** A secret's name becomes an environment variable name: letters, digits and `_`, not starting with a digit. */
export const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const SECRET_NAME_MAX = 256;
export const SECRET_NAME_RULE = 'a secret name must be a valid environment variable name: letters, digits and underscores only, not starting with a digit';
/** Largest value in bytes: it travels as one process argument (the kernel takes up to 128 KiB). */
export const SECRET_VALUE_MAX_BYTES = 64 * 1024;

/** The AAD of a secret's sealed value: it opens only on its own row. */
export const aadOf = (accountId: string, secretId: string) => `secret\0${accountId}\0${secretId}`;

const view = (r: SecretRecord): Secret => ({ id: r.id, name: r.name, createTimeMs: r.createTimeMs, updateTimeMs: r.updateTimeMs });

/**
 * Named values, stored sealed and never shown: routes get views without the value; `reveal` (for what hands
 * a value on: the devbox environment, the MCP hub, the agent gateway) is the only way to the plain text.
 * Messages name secrets, never their values.
 */
export class SecretService {
  private readonly secrets: SqlSecretStore;

  constructor(
    store: Store,
    private readonly sealer: Sealer,
    private readonly log: Logger,
  ) {
    this.secrets = new SqlSecretStore(store.db);
  }

  async create(accountId: string, name: string, value: string): Promise<Secret> {
    checkName(name);
    checkValue(value);
    const id = newId('sec');
    const sealedValue = this.sealer.seal(value, aadOf(accountId, id));
    const now = Date.now();
    const r: SecretRecord = { id, accountId, name, sealedValue, keyId: Sealer.keyIdOf(sealedValue), createTimeMs: now, updateTimeMs: now };
    await this.secrets.insert(r);
    await this.resealIfRotated(accountId, id, value, sealedValue);
    this.log.info({ secret: id, name, account: accountId }, 'secret created');
    return view(r);
  }

  async get(accountId: string, name: string): Promise<Secret> {
    return view(await this.byName(accountId, name));
  }

  async list(accountId: string, page: PageQuery): Promise<Page<Secret>> {
    const p = await this.secrets.list(accountId, page);
    return { ...p, items: p.items.map(view) };
  }

  /** A new value: boxes read it at their next process start (see the environment provider). */
  async update(accountId: string, name: string, value: string): Promise<Secret> {
    checkValue(value);
    const r = await this.byName(accountId, name);
    const sealedValue = this.sealer.seal(value, aadOf(accountId, r.id));
    const updated = await this.secrets.setValue(accountId, r.id, sealedValue, Sealer.keyIdOf(sealedValue), Math.max(Date.now(), r.updateTimeMs));
    if (!updated) throw ERRORS.notFound('secret', name);
    await this.resealIfRotated(accountId, r.id, value, sealedValue);
    this.log.info({ secret: r.id, name, account: accountId }, 'secret updated');
    return view(updated);
  }

  /**
   * A rotation may have begun between sealing a value and its write landing (the write waited for the
   * rotation's lock): the row then names a key that is now retired, and a prune may drop it. So after the
   * write, the writer compares the key it used with the current one and, if they differ, seals again and
   * writes over its own text only (a later write by anyone else wins).
   */
  private async resealIfRotated(accountId: string, id: string, value: string, written: string): Promise<void> {
    try {
      for (let tries = 0; tries < 3 && Sealer.keyIdOf(written) !== this.sealer.currentKeyId(); tries++) {
        const next = this.sealer.seal(value, aadOf(accountId, id));
        if (!(await this.secrets.reseal(id, written, next, Sealer.keyIdOf(next)))) return;
        written = next;
      }
    } catch (err) {
      // The write itself succeeded under a key that was held; a prune re-seals it if it is still retired.
      this.log.warn({ secret: id, err: (err as Error).message }, 'could not check the key of a value just written');
    }
  }

  /** Deletes the secret and its devbox bindings: boxes no longer get the variable at their next process start. */
  async delete(accountId: string, name: string): Promise<Secret> {
    const r = await this.secrets.delete(accountId, name);
    if (!r) throw ERRORS.notFound('secret', name);
    this.log.info({ secret: r.id, name, account: accountId }, 'secret deleted');
    return view(r);
  }

  /** id (sec_…) or name → {id, name, value}; 404 when absent. Never exposed by a route. */
  async reveal(accountId: string, ref: string): Promise<{ id: string; name: string; value: string }> {
    const r = await this.find(accountId, ref);
    if (!r) throw ERRORS.notFound('secret', ref);
    return { id: r.id, name: r.name, value: this.open(r) };
  }

  /** id or name → {id, name} without decrypting; for create-time validation. */
  async resolve(accountId: string, ref: string): Promise<{ id: string; name: string } | undefined> {
    const r = await this.find(accountId, ref);
    return r && { id: r.id, name: r.name };
  }

  /** The plain value of a stored secret; a value this server cannot open is a 503 naming the secret. */
  open(r: SecretRecord): string {
    try {
      return this.sealer.open(r.sealedValue, aadOf(r.accountId, r.id));
    } catch (err) {
      if (!(err instanceof SealError)) throw err;
      this.log.error({ secret: r.id, name: r.name, reason: err.message }, 'secret does not open');
      throw ERRORS.unavailable(`secret ${r.name} cannot be decrypted by this server: ${err.message}`);
    }
  }

  /**
   * Logs, at start, secrets sealed under keys this server does not hold: servers sharing a database must
   * share the master key (DEVBOXD_SECRET_KEY), and a server started with another one cannot open them.
   */
  async checkKeys(): Promise<void> {
    const missing = [...(await this.secrets.keyIds()).entries()].filter(([id]) => !this.sealer.holds(id));
    for (const [id, count] of missing) {
      this.log.error(
        { keyId: id, secrets: count },
        'secrets are sealed under a key this server does not hold: give it the key the other servers use (DEVBOXD_SECRET_KEY)',
      );
    }
  }

  private async find(accountId: string, ref: string): Promise<SecretRecord | undefined> {
    if (ref.startsWith('sec_')) {
      const byId = await this.secrets.getById(accountId, ref);
      if (byId) return byId;
    }
    return this.secrets.getByName(accountId, ref);
  }

  private async byName(accountId: string, name: string): Promise<SecretRecord> {
    const r = await this.secrets.getByName(accountId, name);
    if (!r) throw ERRORS.notFound('secret', name);
    return r;
  }
}

export function checkName(name: string): void {
  if (!name) throw ERRORS.invalid(`name is required: ${SECRET_NAME_RULE}`);
  if (name.length > SECRET_NAME_MAX) throw ERRORS.invalid(`name is longer than ${SECRET_NAME_MAX} characters`);
  if (!SECRET_NAME.test(name)) throw ERRORS.invalid(`invalid name ${JSON.stringify(name)}: ${SECRET_NAME_RULE}`);
}

/** Messages about a value never show any of it. */
export function checkValue(value: string): void {
  if (value.length === 0) throw ERRORS.invalid('value is required and must not be empty');
  if (Buffer.byteLength(value, 'utf8') > SECRET_VALUE_MAX_BYTES) throw ERRORS.invalid(`value is larger than ${SECRET_VALUE_MAX_BYTES} bytes`);
  if (value.includes('\0')) throw ERRORS.invalid('value must not contain a NUL character (it becomes an environment variable)');
}
