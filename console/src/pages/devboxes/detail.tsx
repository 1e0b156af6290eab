// One devbox: its view, the lifecycle actions its status allows, a command to run, its live log and its CPU
// and memory while the page is open. The view is read again every few seconds until the box has ended, so a
// status change (booting, suspending, an idle shutdown) shows without a reload.
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import type { ComponentChildren } from 'preact';
import { get } from '../../api';
import { ErrorNote, Fields, Header, Status, Time } from '../../ui/common';
import { KeyValues } from '../../ui/key-values';
import { useInterval, useLoad } from '../../ui/use-load';
import { ENDED, LifecycleActions } from './detail-actions';
import { DevboxLogs } from './detail-logs';
import { RunCommand } from './detail-run';
import { UsageCharts } from './detail-usage';

/** Statuses that change by themselves soon: the view is read every second meanwhile. */
const MOVING = new Set(['provisioning', 'initializing', 'suspending', 'resuming', 'queued', 'scheduled']);

function size(lp: DevboxView['launch_parameters']): string {
  if (lp.resource_size_request === 'CUSTOM_SIZE') return `custom: ${lp.custom_cpu_cores ?? '?'} CPU, ${lp.custom_gb_memory ?? '?'} GiB`;
  return lp.resource_size_request ?? 'default';
}

function details(d: DevboxView): [string, ComponentChildren][] {
  const lp = d.launch_parameters;
  const idle = lp.lifecycle?.after_idle ?? lp.after_idle;
  return [
    ['Id', <code key="id">{d.id}</code>],
    ['Status', <Status key="s" value={d.status} />],
    ['Ended because', d.failure_reason ?? d.shutdown_reason ?? (ENDED.has(d.status) ? 'unknown' : '—')],
    ['Blueprint', d.blueprint_id ? <a href={`/blueprints/${d.blueprint_id}`}>{d.blueprint_id}</a> : '—'],
    ['Snapshot', d.snapshot_id ? <code>{d.snapshot_id}</code> : '—'],
    ['Size', size(lp)],
    ['Disk', lp.custom_disk_size ? `${lp.custom_disk_size} GiB` : 'default'],
    ['Keep alive', lp.keep_alive_time_seconds ? `${lp.keep_alive_time_seconds} s after the last keep-alive` : 'no limit'],
    ['When idle', idle ? `${idle.on_idle} after ${idle.idle_time_seconds} s` : 'stays up'],
    ['User', lp.user_parameters ? `${lp.user_parameters.username} (uid ${lp.user_parameters.uid})` : 'default (user)'],
    [
      'Launch commands',
      lp.launch_commands?.length ? (
        <pre class="payload">
          <code>{lp.launch_commands.join('\n')}</code>
        </pre>
      ) : (
        '—'
      ),
    ],
    ['Created', <Time key="c" ms={d.create_time_ms} />],
    ['Ended', <Time key="e" ms={d.end_time_ms} />],
    ['Metadata', <KeyValues key="m" map={d.metadata} />],
    ['Tunnel', d.tunnel ? <code>{d.tunnel.tunnel_key}</code> : '—'],
  ];
}

export default function DevboxDetail({ id }: { id: string }) {
  const { data: box, error, reload } = useLoad((signal) => get<DevboxView>(`/v1/devboxes/${id}`, undefined, signal), [id]);
  const ended = box ? ENDED.has(box.status) : false;
  useInterval(reload, !box || ended ? null : MOVING.has(box.status) ? 1000 : 5000);

  if (!box)
    return (
      <section>
        <Header title={`Devbox ${id}`} />
        {error ? <ErrorNote error={error} /> : <p aria-busy="true">Loading the devbox…</p>}
        <a href="/devboxes">All devboxes</a>
      </section>
    );
  const running = box.status === 'running';
  const base = `/devboxes/${box.id}`;
  return (
    <section>
      <Header title={box.name || box.id}>
        <LifecycleActions box={box} done={reload} />
      </Header>
      <nav aria-label="This devbox" class="box-links">
        <a href="/devboxes">All devboxes</a>
        {!ended && (
          <>
            <a href={`${base}/terminal`} class="button secondary">
              Terminal
            </a>
            <a href={`${base}/files`} class="button secondary">
              Files
            </a>
          </>
        )}
        {!running && !ended && <small>The terminal and files reach the box while it is running.</small>}
      </nav>
      <ErrorNote error={error} />
      <article>
        <Fields rows={details(box)} />
        <details>
          <summary>State transitions ({box.state_transitions.length})</summary>
          <ol>
            {box.state_transitions.map((t, i) => (
              <li key={i}>
                <Status value={t.status} /> <Time ms={t.transition_time_ms as number} />
                {t.failure_reason ? ` — ${t.failure_reason}` : ''}
              </li>
            ))}
          </ol>
        </details>
      </article>
      {!ended && (
        <>
          <h2>Run a command</h2>
          <RunCommand id={box.id} running={running} />
          <h2>CPU and memory</h2>
          <UsageCharts devboxId={box.id} running={running} />
        </>
      )}
      <h2>Logs and executions</h2>
      <DevboxLogs devboxId={box.id} />
    </section>
  );
}
