// The API key lives in sessionStorage only: it goes when the tab closes, and no other tab or later visit
// reads it. Nothing else about the user is stored.
import { signal } from '@preact/signals';

const KEY = 'devboxd.apiKey';

function read(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

/** The signed-in key; pages re-render when it changes (sign-in, sign-out, a 401). */
export const apiKey = signal<string | null>(read());

export function currentKey(): string | null {
  return apiKey.value;
}

export function setKey(key: string): void {
  sessionStorage.setItem(KEY, key);
  apiKey.value = key;
}

export function clearKey(): void {
  sessionStorage.removeItem(KEY);
  apiKey.value = null;
}
