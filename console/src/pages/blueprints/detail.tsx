// One blueprint: its status, what it was built from, and the build log, followed live while the build runs.
// The API has no retry: "Build again" creates a new blueprint with the same parameters.
import type { BlueprintBuildLog, BlueprintView } from '@runloop/api-client/resources/blueprints';
import { useLocation } from 'preact-iso';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get, post } from '../../api';
import { Action, ErrorNote, Fields, Header, Status, Time } from '../../ui/common';
import { useInterval, useLoad } from '../../ui/use-load';

const ACTIVE = new Set(['queued', 'provisioning', 'building', 'awaiting_upload']);

function logLine(l: BlueprintBuildLog): string {
  const t = new Date(l.timestamp_ms).toLocaleTimeString();
  return `${t}  ${l.level === 'info' ? '' : `${l.level.toUpperCase()} `}${l.message}\n`;
}

/**
 * The build log. `…/logs` answers the whole log so far; while the build runs it is asked again every second
 * and only the lines past those shown are appended. Once the build ends, one last read takes the final lines.
 */
function BuildLog({ id, active }: { id: string; active: boolean }) {
  const [lines, setLines] = useState<BlueprintBuildLog[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const box = useRef<HTMLPreElement>(null);
  const busy = useRef(false);
  const again = useRef(false);
  const fetchLog = async (): Promise<void> => {
    // One read at a time; a read asked for meanwhile (the last one, as the build ends) follows it.
    if (busy.current) {
      again.current = true;
      return;
    }
    busy.current = true;
    try {
      const { logs } = await get<{ logs: BlueprintBuildLog[] }>(`/v1/blueprints/${id}/logs`);
      setLines((shown) => (logs.length > shown.length ? [...shown, ...logs.slice(shown.length)] : shown));
      setError(null);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      busy.current = false;
      setLoaded(true);
    }
    if (again.current) {
      again.current = false;
      return fetchLog();
    }
  };
  // First read, and the last one when the build ends (`active` turns false).
  useEffect(() => {
    void fetchLog();
  }, [id, active]);
  useInterval(() => void fetchLog(), active ? 1000 : null);
  // Keeps the newest line in view while the reader is at the bottom.
  const pinned = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [lines.length]);
  return (
    <section aria-labelledby="build-log">
      <h2 id="build-log">Build log {active && <small aria-busy="true">following</small>}</h2>
      <ErrorNote error={error} />
      {loaded && !lines.length && !error ? (
        <p>{active ? 'No output yet: the build is waiting for its turn.' : 'This build wrote no log.'}</p>
      ) : (
        <pre
          ref={box}
          class="log"
          // biome-ignore lint/a11y/noNoninteractiveTabindex: the log scrolls, so keyboard users must be able to focus it
          tabIndex={0}
          role="log"
          aria-label="Build log"
          onScroll={(e) => {
            const el = e.currentTarget;
            pinned.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
          }}
        >
          {lines.map(logLine).join('')}
        </pre>
      )}
    </section>
  );
}

/** A scrolling block of text; focusable so a keyboard can scroll it. */
function Scroll({ children }: { children: string }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: it scrolls, so keyboard users must be able to focus it
    <pre class="log" tabIndex={0}>
      {children}
    </pre>
  );
}

export default function BlueprintDetail({ id }: { id: string }) {
  const { route } = useLocation();
  const bp = useLoad(() => get<BlueprintView>(`/v1/blueprints/${id}`), [id]);
  const b = bp.data;
  const active = b ? ACTIVE.has(b.status) : false;
  useInterval(bp.reload, active ? 1500 : null);
  if (bp.error && !b) {
    return (
      <section>
        <Header title="Blueprint" />
        <ErrorNote error={bp.error} />
        <p>
          <a href="/blueprints">Back to blueprints</a>
        </p>
      </section>
    );
  }
  if (!b) return <p aria-busy="true">Loading blueprint…</p>;
  const p = b.parameters;
  const rest = Object.fromEntries(
    Object.entries(p).filter(([k, v]) => !['name', 'dockerfile', 'system_setup_commands'].includes(k) && v !== null && v !== undefined),
  );
  return (
    <section>
      <Header title={`Blueprint ${b.name}`}>
        {b.status === 'build_complete' && (
          <a class="button" href={`/devboxes/new?blueprint_id=${b.id}`}>
            Create devbox from this blueprint
          </a>
        )}
        {!active && (
          <Action
            label={b.status === 'failed' ? 'Retry build' : 'Build again'}
            variant="secondary"
            confirm="Build a new blueprint with the same parameters? (Credentials of services and code mounts are never shown, so they are not copied.)"
            run={async () => route(`/blueprints/${(await post<BlueprintView>('/v1/blueprints', p)).id}`)}
          />
        )}
        <Action
          label="Delete"
          variant="secondary"
          confirm={`Delete blueprint ${b.name}? The server refuses while devboxes, snapshots or other blueprints depend on it.`}
          run={() => post(`/v1/blueprints/${b.id}/delete`)}
          done={() => route('/blueprints')}
        />
      </Header>
      <p>
        <a href="/blueprints">All blueprints</a>
      </p>
      <Fields
        rows={[
          ['Status', <Status key="s" value={b.status} />],
          ['Failure', b.failure_reason?.replace(/_/g, ' ')],
          ['Id', <code key="i">{b.id}</code>],
          ['Created', <Time key="c" ms={b.create_time_ms} />],
          ['Build finished', <Time key="f" ms={b.build_finish_time_ms} />],
          ['Base blueprint', b.base_blueprint_id ? <a href={`/blueprints/${b.base_blueprint_id}`}>{b.base_blueprint_id}</a> : null],
          ['Public', b.is_public ? 'yes' : 'no'],
          [
            'Metadata',
            Object.keys(b.metadata ?? {}).length
              ? Object.entries(b.metadata ?? {})
                  .map(([k, v]) => `${k}=${v}`)
                  .join(', ')
              : null,
          ],
        ]}
      />
      <BuildLog id={b.id} active={active} />
      <section aria-labelledby="build-params">
        <h2 id="build-params">Built from</h2>
        <h3>Dockerfile</h3>
        <Scroll>{p.dockerfile || 'none: FROM runloop:runloop/starter-x86_64'}</Scroll>
        {p.system_setup_commands?.length ? (
          <>
            <h3>Setup commands</h3>
            <Scroll>{p.system_setup_commands.join('\n')}</Scroll>
          </>
        ) : null}
        {Object.keys(rest).length > 0 && (
          <details>
            <summary>Other parameters</summary>
            <Scroll>{JSON.stringify(rest, null, 2)}</Scroll>
          </details>
        )}
      </section>
    </section>
  );
}
