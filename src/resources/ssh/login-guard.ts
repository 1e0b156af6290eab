import type { ParsedKey } from 'ssh2';
import type { Sandbox } from '../../runtime/driver.js';
import { authorizedKeys } from './authorized-keys.js';

/** How long a box's parsed `authorized_keys` answers key lookups before the box is read again. */
const KEYS_TTL_MS = 5000;
/** Failed key attempts a source address (or a box) may make per window before its attempts fail unread. */
const FAILURES_PER_SOURCE = 30;
const FAILURES_PER_BOX = 60;
const FAILURE_WINDOW_MS = 60_000;
/** Entries a table keeps at most: past it the oldest goes (a flood of addresses cannot grow it). */
const MAX_ENTRIES = 10_000;

/**
 * What stands between a stranger and a box before any signature is checked: the box's keys come from a
 * short-lived cache (one in-box read per box per few seconds, however many connections ask; create_ssh_key
 * drops the entry); a source address with many failed attempts gets no more lookups for a minute, and a box
 * with many is answered from its cached keys, however old, for that minute.
 * A login whose signature verifies reads the file again, so a key the user removed stops working at once.
 */
export class LoginGuard {
  private readonly keys = new Map<string, { at: number; keys: Promise<ParsedKey[]> }>();
  private readonly failures = new Map<string, { until: number; count: number }>();

  constructor(private readonly read: (sandbox: Sandbox) => Promise<ParsedKey[]> = authorizedKeys) {}

  /**
   * The box's keys, from the cache when fresh. A box past its failure budget keeps its cached keys however old
   * (its file is not read again for strangers), so its key holders still log in while it is under attack.
   */
  cachedKeys(boxId: string, sandbox: Sandbox): Promise<ParsedKey[]> {
    const hit = this.keys.get(boxId);
    if (hit && (Date.now() - hit.at < KEYS_TTL_MS || this.count(`b:${boxId}`) >= FAILURES_PER_BOX)) return hit.keys;
    return this.fresh(boxId, sandbox);
  }

  /** The box's keys read now (after a verified signature), refreshing the cache. */
  fresh(boxId: string, sandbox: Sandbox): Promise<ParsedKey[]> {
    const keys = this.read(sandbox).catch(() => [] as ParsedKey[]);
    this.keys.delete(boxId);
    this.keys.set(boxId, { at: Date.now(), keys });
    trim(this.keys);
    return keys;
  }

  /** A key was added to the box: the next lookup reads the file. */
  invalidate(boxId: string): void {
    this.keys.delete(boxId);
  }

  /** Whether `source` may still try keys (under its failure budget). */
  allowed(source: string): boolean {
    return this.count(`s:${source}`) < FAILURES_PER_SOURCE;
  }

  failed(source: string, boxId: string | null): void {
    this.bump(`s:${source}`);
    if (boxId) this.bump(`b:${boxId}`);
  }

  private count(key: string): number {
    const e = this.failures.get(key);
    if (!e) return 0;
    if (e.until <= Date.now()) {
      this.failures.delete(key);
      return 0;
    }
    return e.count;
  }

  private bump(key: string): void {
    const count = this.count(key);
    const until = this.failures.get(key)?.until ?? Date.now() + FAILURE_WINDOW_MS;
    this.failures.delete(key);
    this.failures.set(key, { until, count: count + 1 });
    trim(this.failures);
  }
}

function trim(map: Map<string, unknown>): void {
  while (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
}
