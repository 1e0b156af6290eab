// Small pieces every page uses: errors in the server's words, empty states that say what to do first,
// status badges, times, a progress line and an action button that shows its own failure.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function ErrorNote({ error }: { error: string | null | undefined }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {error}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <article class="empty">
      <h2>{title}</h2>
      {children}
    </article>
  );
}

export function Status({ value }: { value: string | null | undefined }) {
  const v = value ?? 'unknown';
  return <span class={`status status-${v.replace(/[^a-z_]/g, '')}`}>{v.replace(/_/g, ' ')}</span>;
}

export function Time({ ms }: { ms: number | null | undefined }) {
  if (!ms) return <span>—</span>;
  const d = new Date(ms);
  return <time dateTime={d.toISOString()}>{d.toLocaleString()}</time>;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function Progress({ label, done, total }: { label: string; done: number; total: number }) {
  const pct = total > 0 ? Math.round((done / total) * 100) : 0;
  return (
    <div class="progress">
      <progress value={done} max={total || 1} aria-label={label} />
      <small>
        {label}: {bytes(done)} of {bytes(total)} ({pct}%)
      </small>
    </div>
  );
}

/**
 * A button that runs an action, disables itself meanwhile and shows the server's message if it fails.
 * `confirm` asks first (shutdown, delete): those cannot be undone.
 */
export function Action(props: {
  label: string;
  run: () => Promise<unknown>;
  done?: () => void;
  confirm?: string;
  variant?: 'secondary' | 'contrast' | 'outline';
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const click = async () => {
    if (props.confirm && !window.confirm(props.confirm)) return;
    setBusy(true);
    setError(null);
    try {
      await props.run();
      props.done?.();
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      <button type="button" class={props.variant ?? ''} aria-busy={busy} disabled={busy} onClick={click}>
        {props.label}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}

/** A page's title row: the heading and the page's main actions. */
export function Header({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <header class="page-header">
      <h1>{title}</h1>
      <div class="page-actions">{children}</div>
    </header>
  );
}

/** `key: value` pairs as a definition list (a view's fields). */
export function Fields({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="fields">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v ?? '—'}</dd>
        </div>
      ))}
    </dl>
  );
}
