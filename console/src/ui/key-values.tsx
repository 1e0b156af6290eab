// Metadata and environment maps shown as a compact list of `key=value` lines.
import type { ComponentChildren } from 'preact';

export function KeyValues({ map }: { map: Record<string, string> | null | undefined }): ComponentChildren {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return '—';
  return (
    <ul class="key-values">
      {entries.map(([k, v]) => (
        <li key={k}>
          <code>
            {k}={v}
          </code>
        </li>
      ))}
    </ul>
  );
}
