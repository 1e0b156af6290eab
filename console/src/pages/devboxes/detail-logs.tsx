// The box's log, live: `logs/tail` sends the backlog, then each entry as it is written, and ends once the
// box has ended. Commands the box ran (launch commands and executions) show as `$ command` lines linking to
// their execution, and the newest executions are listed above the log.
import type { DevboxLogsListView } from '@runloop/api-client/resources/devboxes/logs';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { stream } from '../../api';
import { ErrorNote } from '../../ui/common';
import { LivePre } from './exec-live-pre';

type Entry = DevboxLogsListView.Log;

/** Entries kept on the page: the log of a long-lived box can be far longer than anyone reads here. */
const KEEP = 2000;
const RECENT = 10;

interface Run {
  id: string;
  cmd: string;
  exit: number | null;
  atMs: number;
}

const clock = (ms: number) => new Date(ms).toLocaleTimeString();

function Line({ e, devboxId }: { e: Entry; devboxId: string }) {
  // The level is a word on the line, so an error reads as one without its colour.
  const level = e.level === 'info' ? '' : `[${e.level}] `;
  const head = `${clock(e.timestamp_ms)} ${e.source} ${level}`;
  const link = e.cmd_id?.startsWith('exe_') ? `/devboxes/${devboxId}/executions/${e.cmd_id}` : null;
  let body: ComponentChildren = e.message ?? '';
  if (e.cmd && e.exit_code === null) body = link ? <a href={link}>$ {e.cmd}</a> : `$ ${e.cmd}`;
  else if (e.cmd) body = `exited with ${e.exit_code}: ${e.cmd}`;
  return (
    <span class={e.level === 'error' || e.level === 'warn' ? 'log-problem' : undefined}>
      {head}
      {body}
      {'\n'}
    </span>
  );
}

export function DevboxLogs({ devboxId }: { devboxId: string }) {
  const buffer = useRef<Entry[]>([]);
  const runs = useRef(new Map<string, Run>());
  const [, setTick] = useState(0);
  const [state, setState] = useState<'live' | 'ended' | 'failed'>('live');
  const [error, setError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    buffer.current = [];
    runs.current = new Map();
    setState('live');
    setError(null);
    const ac = new AbortController();
    // Entries arrive in bursts (the backlog at once): the page redraws at most ten times a second.
    let pending = false;
    const flush = () => {
      pending = false;
      setTick((t) => t + 1);
    };
    const onEntry = (data: string, event: string) => {
      if (event === 'error') throw new Error((JSON.parse(data) as { message?: string }).message ?? 'the log stream failed');
      const e = JSON.parse(data) as Entry;
      buffer.current.push(e);
      if (buffer.current.length > KEEP * 1.5) buffer.current = buffer.current.slice(-KEEP);
      if (e.source === 'exec' && e.cmd_id && e.cmd) {
        const run = runs.current.get(e.cmd_id) ?? { id: e.cmd_id, cmd: e.cmd, exit: null, atMs: e.timestamp_ms };
        if (e.exit_code !== null && e.exit_code !== undefined) run.exit = e.exit_code;
        runs.current.delete(e.cmd_id);
        runs.current.set(e.cmd_id, run);
        if (runs.current.size > RECENT) runs.current.delete(runs.current.keys().next().value!);
      }
      if (!pending) {
        pending = true;
        setTimeout(flush, 100);
      }
    };
    stream(`/v1/devboxes/${devboxId}/logs/tail`, onEntry, ac.signal).then(
      () => {
        flush();
        setState('ended');
      },
      (err: unknown) => {
        if (ac.signal.aborted) return;
        flush();
        setState('failed');
        setError(err instanceof Error ? err.message : String(err));
      },
    );
    return () => ac.abort();
  }, [devboxId, attempt]);

  const shown = buffer.current.slice(-KEEP);
  const recent = [...runs.current.values()].reverse();
  return (
    <>
      <h3>Recent executions</h3>
      {recent.length === 0 ? (
        <p>No command has run yet: run one above, and it shows here.</p>
      ) : (
        <ul>
          {recent.map((r) => (
            <li key={r.id}>
              <a href={`/devboxes/${devboxId}/executions/${r.id}`}>
                <code>{r.cmd}</code>
              </a>{' '}
              <small>
                {clock(r.atMs)}, {r.exit === null ? 'running or cut off' : `exit ${r.exit}`}
              </small>
            </li>
          ))}
        </ul>
      )}
      <h3>Log</h3>
      {shown.length === 0 && state !== 'live' ? (
        <p>Nothing was logged: launch commands, the entrypoint and every command run in the box write here.</p>
      ) : (
        <LivePre>
          {buffer.current.length > KEEP && `… earlier entries are not shown (the newest ${KEEP} are)\n`}
          {shown.map((e, i) => (
            <Line key={i} e={e} devboxId={devboxId} />
          ))}
          {state === 'ended' && '— end of the log: the box has ended —\n'}
        </LivePre>
      )}
      <small>{state === 'live' ? 'Live: new entries appear as the box writes them.' : null}</small>
      {state === 'failed' && (
        <>
          <ErrorNote error={error} />
          <button type="button" class="secondary" onClick={() => setAttempt((a) => a + 1)}>
            Reconnect to the log
          </button>
        </>
      )}
    </>
  );
}
