// Sign-in: the key is checked against the server before it is kept, so a typo shows the server's answer
// rather than an empty console.
import { useState } from 'preact/hooks';
import { ApiError } from '../api';
import { setKey } from '../session';

export function SignIn() {
  const [key, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const res = await fetch('/v1/accounts/me', { headers: { authorization: `Bearer ${key.trim()}` } });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { message?: string };
        throw new ApiError(res.status, body.message ?? `${res.status} ${res.statusText}`);
      }
      setKey(key.trim());
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="container sign-in">
      <article>
        <header>
          <h1>devboxd</h1>
          <p>Sign in with an API key of your account.</p>
        </header>
        <form onSubmit={submit}>
          <label>
            API key
            <input
              type="password"
              name="api-key"
              autocomplete="off"
              required
              value={key}
              onInput={(e) => setValue(e.currentTarget.value)}
              aria-invalid={error ? true : undefined}
            />
          </label>
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          <button type="submit" aria-busy={busy} disabled={busy}>
            Sign in
          </button>
        </form>
        <footer>
          <small>
            The key stays in this tab only (session storage) and goes with every request to this server's API. No key yet? The server printed one at its first
            start; an operator makes more with <code>devboxd keys create ACCOUNT</code>.
          </small>
        </footer>
      </article>
    </main>
  );
}
