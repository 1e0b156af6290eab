// Create a devbox: a name, what it starts from, its size and launch parameters, its environment. Only what
// the user fills in is sent, so the server's (or the blueprint's) defaults hold for the rest; a refusal shows
// the server's own message.
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { post } from '../../api';
import { ErrorNote, Header } from '../../ui/common';
import { type CreateForm, createBody } from './create-parse';
import { SourcePicker } from './create-source';

// The SDK's resource_size_request values, with the sizes devboxd gives them (README, "sizes").
const SIZES: [string, string][] = [
  ['X_SMALL', 'X_SMALL: 0.5 CPU, 1 GiB'],
  ['SMALL', 'SMALL: 1 CPU, 2 GiB'],
  ['MEDIUM', 'MEDIUM: 2 CPU, 4 GiB'],
  ['LARGE', 'LARGE: 2 CPU, 8 GiB'],
  ['X_LARGE', 'X_LARGE: 4 CPU, 16 GiB'],
  ['XX_LARGE', 'XX_LARGE: 8 CPU, 32 GiB'],
  ['CUSTOM_SIZE', 'Custom: choose CPU and memory'],
];

const EMPTY: CreateForm = {
  name: '',
  source: 'image',
  from: '',
  size: '',
  cpu: '',
  memory: '',
  disk: '',
  launchCommands: '',
  keepAlive: '',
  idleSeconds: '',
  onIdle: 'suspend',
  username: '',
  uid: '',
  env: '',
  entrypoint: '',
  metadata: '',
};

export default function DevboxCreate() {
  const { route, query } = useLocation();
  // "Create devbox" on a snapshot's or blueprint's row links here with its id: that source comes chosen.
  const [form, setForm] = useState<CreateForm>(() => {
    if (query.snapshot_id) return { ...EMPTY, source: 'snapshot', from: query.snapshot_id };
    if (query.blueprint_id) return { ...EMPTY, source: 'blueprint', from: query.blueprint_id };
    return EMPTY;
  });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const set = (patch: Partial<CreateForm>) => setForm((f) => ({ ...f, ...patch }));
  const text = (key: keyof CreateForm) => ({
    value: form[key],
    onInput: (e: { currentTarget: { value: string } }) => set({ [key]: e.currentTarget.value }),
  });

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const created = await post<DevboxView>('/v1/devboxes', createBody(form));
      route(`/devboxes/${created.id}`);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  };

  return (
    <section>
      <Header title="Create a devbox">
        <a href="/devboxes" class="button secondary outline">
          Back to devboxes
        </a>
      </Header>
      <form onSubmit={submit} aria-label="New devbox">
        <label>
          Name <small>(optional; it is the box's hostname when it is a valid DNS label)</small>
          <input {...text('name')} placeholder="my-devbox" />
        </label>
        <SourcePicker source={form.source} from={form.from} onSource={(source) => set({ source, from: '' })} onFrom={(from) => set({ from })} />

        <fieldset>
          <legend>Launch parameters</legend>
          <div class="grid">
            <label>
              Size
              <select value={form.size} onChange={(e) => set({ size: e.currentTarget.value })}>
                <option value="">Default (the blueprint's, else SMALL)</option>
                {SIZES.map(([v, label]) => (
                  <option key={v} value={v}>
                    {label}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Disk (GiB)
              <input type="number" min={1} step={1} {...text('disk')} placeholder="20" />
            </label>
          </div>
          {form.size === 'CUSTOM_SIZE' && (
            <div class="grid">
              <label>
                CPU cores
                <input type="number" min={0.5} step={0.5} required {...text('cpu')} />
              </label>
              <label>
                Memory (GiB)
                <input type="number" min={1} step={1} required {...text('memory')} />
              </label>
            </div>
          )}
          <label>
            Launch commands <small>(one per line; they run before the box is running)</small>
            <textarea rows={3} {...text('launchCommands')} placeholder="pip install requests" />
          </label>
          <div class="grid">
            <label>
              Keep alive (seconds)
              <input type="number" min={1} step={1} {...text('keepAlive')} placeholder="no limit" />
              <small>The box shuts down this long after the last keep-alive.</small>
            </label>
            <label>
              Idle time (seconds)
              <input type="number" min={1} step={1} {...text('idleSeconds')} placeholder="never idle" />
              <small>With no command or transfer for this long…</small>
            </label>
            <label>
              …then
              <select value={form.onIdle} onChange={(e) => set({ onIdle: e.currentTarget.value })}>
                <option value="suspend">suspend</option>
                <option value="shutdown">shut down</option>
              </select>
            </label>
          </div>
          <div class="grid">
            <label>
              User name
              <input {...text('username')} placeholder="user" autoComplete="off" />
            </label>
            <label>
              User id (UID)
              <input type="number" min={0} step={1} {...text('uid')} placeholder="1000" />
            </label>
          </div>
        </fieldset>

        <label>
          Environment variables <small>(KEY=value, one per line)</small>
          <textarea rows={3} class="mono" {...text('env')} placeholder="DEBUG=1" />
        </label>
        <label>
          Entrypoint <small>(optional; the box shuts down when it exits)</small>
          <input class="mono" {...text('entrypoint')} placeholder="python3 -m http.server 8000" />
        </label>
        <label>
          Metadata <small>(key=value, one per line)</small>
          <textarea rows={2} class="mono" {...text('metadata')} placeholder="team=infra" />
        </label>
        <ErrorNote error={error} />
        <button type="submit" aria-busy={busy} disabled={busy}>
          Create devbox
        </button>
      </form>
    </section>
  );
}
