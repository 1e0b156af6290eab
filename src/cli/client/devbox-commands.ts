import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import type { Command, Io } from '../parse.js';
import { UsageError } from '../parse.js';
import { CLIENT_OPTIONS, clientOf, iso, type Options, show, table } from './connect.js';
import { sshCommand } from './ssh-command.js';

const STATUSES = ['provisioning', 'initializing', 'running', 'suspending', 'suspended', 'resuming', 'failure', 'shutdown'];
/** How long a create, resume or exec may take here (a box from a snapshot on a busy host: minutes). */
const LONG = { timeout: 10 * 60_000 };

const line = (d: DevboxView) => [d.id, d.name ?? '-', d.status, iso(d.create_time_ms)];
const HEAD = ['ID', 'NAME', 'STATUS', 'CREATED'];
const one = (d: DevboxView) => table(HEAD, [line(d)]);

/** A client command on one box: `devbox WORD ID`, printing the box as the API answers it after `act`. */
function onBox(word: string, summary: string, act: (api: Awaited<ReturnType<typeof clientOf>>, id: string) => Promise<DevboxView>, io: Io): Command {
  return {
    words: ['devbox', word],
    args: ['ID'],
    options: CLIENT_OPTIONS,
    summary,
    run: async ({ ID }, o) => {
      const api = await clientOf(o, `usage: devboxd devbox ${word} ID`);
      show(io, o, await act(api, ID!), one);
      return 0;
    },
  };
}

/** Streams one of an execution's outputs to `write` as it comes (the SDK reconnects a dropped stream at its offset). */
async function follow(stream: AsyncIterable<{ output: string }>, write: (s: string) => void): Promise<void> {
  for await (const chunk of stream) write(chunk.output);
}

/**
 * `devboxd devbox ...`: the account's devboxes through the public API (the official SDK), as any client sees
 * them: RUNLOOP_BASE_URL and RUNLOOP_API_KEY (or --base-url, --api-key) say where and as whom.
 */
export function devboxCommands(io: Io): Command[] {
  return [
    {
      words: ['devbox', 'list'],
      args: [],
      options: {
        ...CLIENT_OPTIONS,
        status: { type: 'string', placeholder: 'STATUS', help: `only boxes in STATUS (${STATUSES.join(', ')})` },
        limit: { type: 'string', placeholder: 'N', help: 'at most N boxes, newest first (default 100)' },
      },
      summary: "the account's devboxes, newest first: id, name, status, creation time",
      run: async (_args, o: Options) => {
        const status = o.status as string | undefined;
        if (status !== undefined && !STATUSES.includes(status))
          throw new UsageError(`devboxd devbox list: --status must be one of ${STATUSES.join(', ')}`, 'usage: devboxd devbox list [--status STATUS]');
        const limit = o.limit === undefined ? 100 : Number(o.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 5000)
          throw new UsageError('devboxd devbox list: --limit must be an integer from 1 to 5000', 'usage: devboxd devbox list [--limit N]');
        const api = await clientOf(o, 'usage: devboxd devbox list');
        const boxes: DevboxView[] = [];
        // Paged as the API pages (the SDK follows the cursor), stopping at the limit: no whole-account fetch.
        for await (const d of api.devboxes.list({ limit: Math.min(limit, 100), ...(status ? { status: status as DevboxView['status'] } : {}) })) {
          boxes.push(d);
          if (boxes.length >= limit) break;
        }
        show(io, o, { devboxes: boxes }, (v) => table(HEAD, v.devboxes.map(line)));
        return 0;
      },
    },
    {
      words: ['devbox', 'create'],
      args: [],
      options: {
        ...CLIENT_OPTIONS,
        name: { type: 'string', placeholder: 'NAME', help: 'a name for the box' },
        blueprint: { type: 'string', placeholder: 'ID', help: 'boot from this blueprint' },
        snapshot: { type: 'string', placeholder: 'ID', help: 'boot from this disk snapshot' },
        size: { type: 'string', placeholder: 'SIZE', help: 'X_SMALL, SMALL (default), MEDIUM, LARGE, X_LARGE or XX_LARGE' },
        'no-wait': { type: 'boolean', help: 'answer at once (provisioning) instead of once the box runs' },
      },
      summary: 'create a devbox and wait until it runs; prints it (its id first)',
      run: async (_args, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd devbox create');
        const params = {
          ...(o.name ? { name: o.name as string } : {}),
          ...(o.blueprint ? { blueprint_id: o.blueprint as string } : {}),
          ...(o.snapshot ? { snapshot_id: o.snapshot as string } : {}),
          ...(o.size ? { launch_parameters: { resource_size_request: o.size as 'SMALL' } } : {}),
        };
        const d = o['no-wait'] ? await api.devboxes.create(params) : await api.devboxes.createAndAwaitRunning(params, LONG);
        show(io, o, d, one);
        return d.status === 'failure' ? 1 : 0;
      },
    },
    onBox('get', 'one devbox: id, name, status, creation time (--json: all the API says)', (api, id) => api.devboxes.retrieve(id), io),
    onBox('shutdown', 'shut a devbox down (its disk goes; snapshot it first to keep it)', (api, id) => api.devboxes.shutdown(id), io),
    onBox('suspend', 'suspend a devbox: its processes stop, its disk is kept for resume', (api, id) => api.devboxes.suspend(id), io),
    onBox(
      'resume',
      'resume a suspended devbox and wait until it runs',
      (api, id) => api.devboxes.resume(id).then(() => api.devboxes.awaitRunning(id, LONG)),
      io,
    ),
    {
      words: ['devbox', 'exec'],
      args: ['ID', 'COMMAND...'],
      options: CLIENT_OPTIONS,
      summary: `run a shell command in a devbox (after --: devboxd devbox exec ID -- ls -la), its output streamed as it
comes; exits with the command's status (--json: the execution, output included, at the end)`,
      run: async ({ ID, COMMAND }, o: Options) => {
        if (!COMMAND) throw new UsageError('devboxd devbox exec: no command given', 'usage: devboxd devbox exec ID -- COMMAND...');
        const api = await clientOf(o, 'usage: devboxd devbox exec ID -- COMMAND...');
        const started = await api.devboxes.executeAsync(ID!, { command: COMMAND });
        if (!o.json) {
          await Promise.all([
            follow(await api.devboxes.executions.streamStdoutUpdates(ID!, started.execution_id), (s) => io.out(s)),
            follow(await api.devboxes.executions.streamStderrUpdates(ID!, started.execution_id), (s) => io.err(s)),
          ]);
        }
        const done = await api.devboxes.executions.awaitCompleted(ID!, started.execution_id, LONG);
        if (o.json) show(io, o, done, () => '');
        return done.exit_status ?? 1;
      },
    },
    sshCommand(),
    {
      words: ['devbox', 'logs'],
      args: ['ID'],
      options: CLIENT_OPTIONS,
      summary: "a devbox's log: its commands' starts, exits and first lines of output",
      run: async ({ ID }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd devbox logs ID');
        const logs = await api.devboxes.logs.list(ID!);
        show(io, o, logs, (v) =>
          v.logs
            .map(
              (l) =>
                `${iso(l.timestamp_ms)}\t${l.level}\t${l.source ?? ''}\t${l.cmd ?? l.message ?? ''}${l.exit_code != null ? ` (exit ${l.exit_code})` : ''}\n`,
            )
            .join(''),
        );
        return 0;
      },
    },
  ];
}
