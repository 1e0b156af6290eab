import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type Runloop from '@runloop/api-client';
import type { Command, Io } from '../parse.js';
import { UsageError } from '../parse.js';
import { CLIENT_OPTIONS, clientOf, iso, type Options, show, table } from './connect.js';

/** How often --follow asks for the build's state and new log lines. */
const POLL_MS = 500;
const ENDED = new Set(['build_complete', 'failed']);

/**
 * Prints a build's log lines as they come and redraws one progress line (state and time) on stderr, until the
 * build ends; answers its last state. The build log is a list the API answers whole, so the lines already
 * printed are skipped by count.
 */
async function follow(api: Runloop, io: Io, id: string): Promise<string> {
  const started = Date.now();
  let printed = 0;
  for (;;) {
    const [b, logs] = await Promise.all([api.blueprints.retrieve(id), api.blueprints.logs(id)]);
    const fresh = logs.logs.slice(printed);
    if (fresh.length) io.err('\r\x1b[K');
    for (const l of fresh) io.out(`${l.message}\n`);
    printed = logs.logs.length;
    const ended = ENDED.has(b.status);
    io.err(`\r\x1b[K${b.id} ${b.status} ${((Date.now() - started) / 1000).toFixed(0)} s${ended ? '\n' : ''}`);
    if (ended) return b.status;
    await sleep(POLL_MS);
  }
}

/** `devboxd blueprint ...`: build one from a Dockerfile (its log followed live), list them, read a build's log. */
export function blueprintCommands(io: Io): Command[] {
  return [
    {
      words: ['blueprint', 'build'],
      args: ['NAME'],
      options: {
        ...CLIENT_OPTIONS,
        dockerfile: { type: 'string', placeholder: 'FILE', help: 'the Dockerfile to build (required)' },
        follow: { type: 'boolean', help: 'print the build log as it comes and a progress line, until the build ends' },
      },
      summary: `build a blueprint from a Dockerfile; with --follow, exits 0 once built and 1 if the build failed
(without, prints the queued blueprint and exits at once)`,
      run: async ({ NAME }, o: Options) => {
        if (!o.dockerfile)
          throw new UsageError('devboxd blueprint build: --dockerfile FILE is required', 'usage: devboxd blueprint build NAME --dockerfile FILE');
        const api = await clientOf(o, 'usage: devboxd blueprint build NAME --dockerfile FILE');
        const b = await api.blueprints.create({ name: NAME!, dockerfile: fs.readFileSync(o.dockerfile as string, 'utf8') });
        const status = o.follow ? await follow(api, io, b.id) : b.status;
        show(io, o, await api.blueprints.retrieve(b.id), (v) => table(['ID', 'NAME', 'STATUS'], [[v.id, v.name, v.status]]));
        return status === 'failed' ? 1 : 0;
      },
    },
    {
      words: ['blueprint', 'list'],
      args: [],
      options: CLIENT_OPTIONS,
      summary: "the account's blueprints, newest first",
      run: async (_args, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd blueprint list');
        const all = [];
        for await (const b of api.blueprints.list({ limit: 100 })) all.push(b);
        show(io, o, { blueprints: all }, (v) =>
          table(
            ['ID', 'NAME', 'STATUS', 'CREATED'],
            v.blueprints.map((b) => [b.id, b.name, b.status, iso(b.create_time_ms)]),
          ),
        );
        return 0;
      },
    },
    {
      words: ['blueprint', 'logs'],
      args: ['ID'],
      options: CLIENT_OPTIONS,
      summary: "a blueprint build's log",
      run: async ({ ID }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd blueprint logs ID');
        show(io, o, await api.blueprints.logs(ID!), (v) => v.logs.map((l) => `${l.message}\n`).join(''));
        return 0;
      },
    },
  ];
}
