import assert from 'node:assert/strict';

/** Polls `fn` every `everyMs` until it answers something truthy; fails the test after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 20_000, everyMs = 100): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert.ok(Date.now() < end, `timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
