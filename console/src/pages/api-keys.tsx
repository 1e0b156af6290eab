// API keys: the account's keys (never a secret: the server keeps only a digest and the last 4 characters),
// creating a standard or restricted key whose secret is shown once, and revoking.
import { useRef, useState } from 'preact/hooks';
import { post } from '../api';
import { currentKey } from '../session';
import { Action, Header, Status, Time } from '../ui/common';
import { CopyButton } from '../ui/copy-button';
import { FormDialog } from '../ui/form-dialog';
import { text } from '../ui/form-values';
import { PagedTable } from '../ui/paged-table';

/** The list's view; the SDK has no list method, so no type (server: src/resources/apikeys/routes/schemas.ts). */
interface KeyView {
  id: string;
  name: string | null;
  kind: 'standard' | 'restricted';
  secret_last4: string | null;
  scopes: { resource_type: string; access_level: string }[];
  create_time_ms: number;
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
}

interface CreatedKey {
  id: string;
  name?: string;
  key_secret: string;
  expires_at_ms: number | null;
}

const RESOURCES = ['DEVBOXES', 'BLUEPRINTS', 'SNAPSHOTS', 'BENCHMARKS', 'SCENARIOS', 'AGENTS', 'OBJECTS', 'ACCOUNT'];
const DAY = 86_400_000;
const EXPIRY = [
  ['', 'Never'],
  ['1', 'In 1 day'],
  ['7', 'In 7 days'],
  ['30', 'In 30 days'],
  ['90', 'In 90 days'],
  ['365', 'In 1 year'],
] as const;

const level = (l: string) => l.replace('ACCESS_LEVEL_', '').toLowerCase();
const resource = (r: string) => r.replace('RESOURCE_TYPE_', '').toLowerCase();

function scopesText(k: KeyView): string {
  if (k.kind === 'standard') return 'full access';
  const granted = k.scopes.filter((s) => s.access_level !== 'ACCESS_LEVEL_NONE');
  return granted.length ? granted.map((s) => `${resource(s.resource_type)}: ${level(s.access_level)}`).join(', ') : 'no access';
}

function state(k: KeyView): string {
  if (k.revoked_at_ms) return 'revoked';
  if (k.expires_at_ms && k.expires_at_ms < Date.now()) return 'expired';
  return 'active';
}

function create(form: FormData): Promise<CreatedKey> {
  const days = text(form, 'expires');
  const body = { name: text(form, 'name'), expires_at_ms: days ? Date.now() + Number(days) * DAY : undefined };
  if (form.get('kind') !== 'restricted') return post<CreatedKey>('/v1/apikeys', body);
  const scopes = RESOURCES.map((r) => ({ resource_type: `RESOURCE_TYPE_${r}`, access_level: String(form.get(`scope_${r}`) ?? 'ACCESS_LEVEL_NONE') }));
  return post<CreatedKey>('/v1/restricted_keys', { ...body, scopes });
}

function NewKey({ created, dismiss }: { created: CreatedKey; dismiss: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  return (
    <article class="new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title">New key {created.name ? `“${created.name}”` : created.id}</h2>
      <p>
        <strong>Copy it now: this is the only time the key is shown.</strong> The server keeps only a digest of it.
      </p>
      <label>
        Key secret
        <input ref={field} readOnly value={created.key_secret} class="mono" onFocus={(e) => e.currentTarget.select()} />
      </label>
      <div class="row-actions">
        <CopyButton value={created.key_secret} label="Copy key" field={() => field.current} />
        <button type="button" class="secondary outline" onClick={dismiss}>
          I have saved it
        </button>
      </div>
    </article>
  );
}

export default function ApiKeys() {
  const [creating, setCreating] = useState(false);
  const [restricted, setRestricted] = useState(false);
  const [created, setCreated] = useState<CreatedKey | null>(null);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const mine = currentKey()?.slice(-4);
  const open = () => {
    setRestricted(false);
    setCreating(true);
  };
  return (
    <section>
      <Header title="API keys">
        <button type="button" onClick={open}>
          Create key
        </button>
      </Header>
      {created && <NewKey created={created} dismiss={() => setCreated(null)} />}
      <PagedTable<KeyView>
        label="API keys"
        path="/v1/apikeys"
        itemsKey="api_keys"
        version={version}
        columns={[
          { title: 'Name', cell: (k) => k.name || '—' },
          { title: 'Ends in', cell: (k) => (k.secret_last4 ? <code>…{k.secret_last4}</code> : '—') },
          { title: 'Access', cell: (k) => scopesText(k) },
          { title: 'State', cell: (k) => <Status value={state(k)} /> },
          { title: 'Created', cell: (k) => <Time ms={k.create_time_ms} /> },
          { title: 'Expires', cell: (k) => (k.expires_at_ms ? <Time ms={k.expires_at_ms} /> : 'never') },
          { title: 'Id', cell: (k) => <code>{k.id}</code> },
          {
            title: 'Actions',
            cell: (k) =>
              // Revoked keys leave the list; one revoked meanwhile (another tab) shows when.
              k.revoked_at_ms ? (
                <Time ms={k.revoked_at_ms} />
              ) : (
                <div class="row-actions">
                  <Action
                    label="Revoke"
                    variant="secondary"
                    confirm={
                      k.secret_last4 && k.secret_last4 === mine
                        ? `Revoke key ${k.name ?? k.id}? This looks like the key you are signed in with (it ends in ${mine}): the console signs you out at its next request, and every script using it stops working.`
                        : `Revoke key ${k.name ?? k.id}? Every script using it stops working at once. If it is the key you are signed in with, the console signs you out at its next request.`
                    }
                    run={() => post(`/v1/apikeys/${k.id}/delete`)}
                    done={reload}
                  />
                </div>
              ),
          },
        ]}
        empty={
          <p>
            Keys let scripts and the SDK use this account.{' '}
            <button type="button" onClick={open}>
              Create a key
            </button>
          </p>
        }
      />
      <FormDialog
        title="Create API key"
        open={creating}
        onClose={() => setCreating(false)}
        submitLabel="Create key"
        onSubmit={create}
        done={(k) => {
          setCreated(k as CreatedKey);
          reload();
        }}
      >
        <label>
          Name
          <input name="name" placeholder="ci-runner" autocomplete="off" />
        </label>
        <label>
          Expires
          <select name="expires">
            {EXPIRY.map(([v, label]) => (
              <option key={v} value={v}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>Access</legend>
          <label>
            <input type="radio" name="kind" value="standard" checked={!restricted} onChange={() => setRestricted(false)} />
            Full access to the account
          </label>
          <label>
            <input type="radio" name="kind" value="restricted" checked={restricted} onChange={() => setRestricted(true)} />
            Restricted to the access chosen below
          </label>
        </fieldset>
        {restricted && (
          <fieldset class="scopes">
            <legend>Restricted key's access</legend>
            {RESOURCES.map((r) => (
              <label key={r}>
                {r.charAt(0) + r.slice(1).toLowerCase()}
                <select name={`scope_${r}`}>
                  <option value="ACCESS_LEVEL_NONE">none</option>
                  <option value="ACCESS_LEVEL_READ">read</option>
                  <option value="ACCESS_LEVEL_WRITE">write</option>
                </select>
              </label>
            ))}
          </fieldset>
        )}
      </FormDialog>
    </section>
  );
}
