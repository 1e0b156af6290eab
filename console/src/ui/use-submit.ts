// A form's submit: busy while the call runs, the server's message when it fails.
import { useState } from 'preact/hooks';

export interface Submit {
  busy: boolean;
  error: string | null;
  /** Runs `fn` for the form's submit event; the returned value, or undefined when it failed. */
  run: <T>(e: Event | null, fn: () => Promise<T>) => Promise<T | undefined>;
}

export function useSubmit(): Submit {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async <T>(e: Event | null, fn: () => Promise<T>): Promise<T | undefined> => {
    e?.preventDefault();
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
