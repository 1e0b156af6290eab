// The auth mechanism and custom headers of MCP and gateway configs. The API returns header names (and the
// id of a secret behind one), never values: editing replaces the whole list, so an edit form keeps the
// stored headers unless the user asks to replace them.
import { useState } from 'preact/hooks';
import { text } from './form-values';

export interface HeaderInput {
  name: string;
  value?: string;
  secret?: string;
}

interface Row {
  key: number;
}

let nextKey = 1;

/** Repeated rows named `header_name` / `header_kind` / `header_text`; read them with `readHeaders`. */
export function HeaderRows({ initialRows = 0 }: { initialRows?: number }) {
  const [rows, setRows] = useState<Row[]>(() => Array.from({ length: initialRows }, () => ({ key: nextKey++ })));
  return (
    <fieldset>
      <legend>Custom headers</legend>
      <p>{rows.length === 0 ? 'None. ' : ''}Added to every request sent upstream; take a credential from a secret (its name or id), not a value.</p>
      {rows.map((r, i) => (
        <div class="header-row" key={r.key}>
          <label>
            Header {i + 1} name
            <input name="header_name" required placeholder="X-Org-Id" autocomplete="off" />
          </label>
          <label>
            Header {i + 1} from
            <select name="header_kind">
              <option value="secret">secret</option>
              <option value="value">value</option>
            </select>
          </label>
          <label>
            Header {i + 1} secret name or value
            <input name="header_text" required autocomplete="off" />
          </label>
          <button type="button" class="secondary outline" aria-label={`Remove header ${i + 1}`} onClick={() => setRows(rows.filter((x) => x.key !== r.key))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary outline" onClick={() => setRows([...rows, { key: nextKey++ }])}>
        Add header
      </button>
    </fieldset>
  );
}

export function readHeaders(form: FormData): HeaderInput[] {
  const names = form.getAll('header_name').map(String);
  const kinds = form.getAll('header_kind').map(String);
  const texts = form.getAll('header_text').map(String);
  return names.map((name, i) => (kinds[i] === 'value' ? { name: name.trim(), value: texts[i] ?? '' } : { name: name.trim(), secret: (texts[i] ?? '').trim() }));
}

/** For an edit form: the stored headers by name, and a choice to replace them (the values cannot be shown). */
export function ReplaceHeaders({ current }: { current: { name: string; secret?: string | null }[] }) {
  const [replace, setReplace] = useState(false);
  return (
    <>
      <p>
        Custom headers now: {current.length ? current.map((h) => `${h.name}${h.secret ? ` (secret ${h.secret})` : ''}`).join(', ') : 'none'}. Their values are
        never shown.
      </p>
      <label>
        <input type="checkbox" name="replace_headers" checked={replace} onChange={(e) => setReplace(e.currentTarget.checked)} />
        Replace the custom headers
      </label>
      {replace && <HeaderRows />}
    </>
  );
}

export const AUTH_TYPES = [
  ['bearer', 'Bearer: Authorization: Bearer <secret>'],
  ['header', 'Header: <header name>: <secret>'],
  ['basic', 'Basic: Authorization: Basic base64(<secret>)'],
] as const;

/** How the credential given at devbox create is applied upstream: the type, and the header for `header`. */
export function AuthFields({ type, headerKey }: { type?: string; headerKey?: string | null }) {
  const [t, setT] = useState(type ?? 'bearer');
  return (
    <fieldset>
      <legend>Credential</legend>
      <label>
        Applied as
        <select name="auth_type" value={t} onChange={(e) => setT(e.currentTarget.value)}>
          {AUTH_TYPES.map(([v, label]) => (
            <option key={v} value={v}>
              {label}
            </option>
          ))}
        </select>
      </label>
      {t === 'header' && (
        <label>
          Header name
          <input name="auth_key" required defaultValue={headerKey ?? ''} placeholder="x-api-key" autocomplete="off" />
        </label>
      )}
    </fieldset>
  );
}

export function readAuth(form: FormData): { type: string; key?: string } {
  const type = text(form, 'auth_type') ?? 'bearer';
  return type === 'header' ? { type, key: text(form, 'auth_key') } : { type };
}
