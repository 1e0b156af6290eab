// The frame around every page: the sidebar of sections, the account's id and sign-out.
import type { ComponentChildren } from 'preact';
import { useLocation } from 'preact-iso';
import { get } from '../api';
import { NAV } from '../routes';
import { clearKey } from '../session';
import { useLoad } from './use-load';

export function Layout({ children }: { children: ComponentChildren }) {
  const { path } = useLocation();
  const me = useLoad(() => get<{ id: string; name?: string }>('/v1/accounts/me'), []);
  return (
    <div class="shell">
      <aside>
        <a class="brand" href="/devboxes">
          devboxd
        </a>
        <nav aria-label="Sections">
          {NAV.map((s) => (
            <details open key={s.section}>
              <summary>{s.section}</summary>
              <ul>
                {s.items.map((i) => (
                  <li key={i.href}>
                    <a href={i.href} aria-current={path === i.href || path.startsWith(`${i.href}/`) ? 'page' : undefined}>
                      {i.label}
                    </a>
                  </li>
                ))}
              </ul>
            </details>
          ))}
          <ul>
            <li>
              <a href="/docs" target="_blank" rel="noreferrer">
                API reference
              </a>
            </li>
          </ul>
        </nav>
        <footer>
          <small>{me.data ? `Account ${me.data.name ?? me.data.id}` : ''}</small>
          <button type="button" class="secondary outline" onClick={clearKey}>
            Sign out
          </button>
        </footer>
      </aside>
      <main class="page">{children}</main>
    </div>
  );
}
