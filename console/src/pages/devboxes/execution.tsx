// One execution: its command, status and exit code, its output live, and a Kill button while it runs. The
// execution view has no command: the box's log has it (the entry that starts the execution).
import type { DevboxAsyncExecutionDetailView } from '@runloop/api-client/resources/devboxes/devboxes';
import type { DevboxLogsListView } from '@runloop/api-client/resources/devboxes/logs';
import { get, post } from '../../api';
import { Action, ErrorNote, Fields, Header, Status, Time } from '../../ui/common';
import { useInterval, useLoad } from '../../ui/use-load';
import { ExecOutput } from './exec-output';

interface Started {
  cmd: string | null;
  startMs: number | null;
  endMs: number | null;
}

async function started(devboxId: string, eid: string, signal: AbortSignal): Promise<Started> {
  const { logs } = await get<DevboxLogsListView>(`/v1/devboxes/${devboxId}/logs`, { execution_id: eid }, signal);
  const first = logs.find((l) => l.cmd);
  const exit = logs.find((l) => l.cmd && l.exit_code !== null && l.exit_code !== undefined);
  return { cmd: first?.cmd ?? null, startMs: first?.timestamp_ms ?? null, endMs: exit?.timestamp_ms ?? null };
}

export default function Execution({ id, eid }: { id: string; eid: string }) {
  const path = `/v1/devboxes/${id}/executions/${eid}`;
  // last_n=0: the output comes from the streams, not the view.
  const exec = useLoad((signal) => get<DevboxAsyncExecutionDetailView>(path, { last_n: 0 }, signal), [path]);
  const done = exec.data?.status === 'completed';
  // Read once the execution is known (an unknown one is one 404, not three), and again once it completed.
  const known = Boolean(exec.data);
  const info = useLoad((signal) => (known ? started(id, eid, signal) : Promise.resolve(null)), [id, eid, known, done]);
  useInterval(exec.reload, exec.data && !done ? 2000 : null);

  const e = exec.data;
  const cmd = info.data?.cmd;
  return (
    <section>
      <Header title={cmd ? `$ ${cmd.length > 60 ? `${cmd.slice(0, 60)}…` : cmd}` : `Execution ${eid}`}>
        {e && !done && <Action label="Kill" variant="contrast" confirm="Kill this command?" run={() => post(`${path}/kill`)} done={exec.reload} />}
      </Header>
      <nav aria-label="Where this execution runs" class="box-links">
        <a href={`/devboxes/${id}`}>Back to the devbox</a>
      </nav>
      <ErrorNote error={exec.error ?? info.error} />
      {e ? (
        <Fields
          rows={[
            [
              'Command',
              cmd ? (
                <pre class="payload">
                  <code>{cmd}</code>
                </pre>
              ) : info.data ? (
                '—'
              ) : (
                '…'
              ),
            ],
            ['Status', <Status key="s" value={e.status} />],
            ['Exit code', e.exit_status ?? (done ? 'none (cut off)' : 'not yet')],
            ['Shell', e.shell_name ?? '—'],
            ['Started', <Time key="st" ms={info.data?.startMs} />],
            ['Ended', <Time key="en" ms={info.data?.endMs} />],
            ['Execution id', <code key="id">{eid}</code>],
          ]}
        />
      ) : (
        !exec.error && <p aria-busy="true">Loading the execution…</p>
      )}
      {e && (
        <>
          <h2>Output</h2>
          <ExecOutput devboxId={id} executionId={eid} onEnd={exec.reload} />
        </>
      )}
    </section>
  );
}
