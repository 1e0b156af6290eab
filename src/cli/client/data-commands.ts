import fs from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command, Io } from '../parse.js';
import { CLIENT_OPTIONS, clientOf, iso, type Options, show, table } from './connect.js';

const LONG = { timeout: 30 * 60_000 };
const MiB = 1024 * 1024;

/**
 * Counts the bytes that pass and redraws one progress line on stderr (a terminal's: `\r`, at most every
 * 100 ms), so that a large upload or download shows it moves; nothing on stdout, which stays for the answer.
 */
function progress(io: Io, what: string, total: number | null): Transform {
  let done = 0;
  let drawn = 0;
  const draw = (end: boolean) => {
    const pct = total ? ` ${Math.floor((done / total) * 100)}%` : '';
    io.err(`\r${what} ${(done / MiB).toFixed(1)}${total ? `/${(total / MiB).toFixed(1)}` : ''} MiB${pct}${end ? '\n' : ''}`);
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      done += chunk.length;
      if (Date.now() - drawn > 100) {
        drawn = Date.now();
        draw(false);
      }
      cb(null, chunk);
    },
    flush(cb) {
      draw(true);
      cb();
    },
  });
}

/** `devboxd snapshot ...` and `devboxd object ...`: a box's disk snapshots, and storage objects with progress. */
export function dataCommands(io: Io): Command[] {
  return [
    {
      words: ['snapshot', 'create'],
      args: ['DEVBOX_ID'],
      options: { ...CLIENT_OPTIONS, name: { type: 'string', placeholder: 'NAME', help: 'a name for the snapshot' } },
      summary: "snapshot a devbox's disk (the box keeps running) and wait until it is complete; prints it",
      run: async ({ DEVBOX_ID }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd snapshot create DEVBOX_ID');
        const snap = await api.devboxes.snapshotDisk(DEVBOX_ID!, o.name ? { name: o.name as string } : {}, LONG);
        show(io, o, snap, (s) => table(['ID', 'NAME', 'DEVBOX', 'CREATED'], [[s.id, s.name ?? '-', s.source_devbox_id, iso(s.create_time_ms)]]));
        return 0;
      },
    },
    {
      words: ['snapshot', 'list'],
      args: [],
      options: { ...CLIENT_OPTIONS, devbox: { type: 'string', placeholder: 'ID', help: "only this devbox's snapshots" } },
      summary: "the account's disk snapshots, newest first",
      run: async (_args, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd snapshot list');
        const snaps = [];
        for await (const s of api.devboxes.listDiskSnapshots({ limit: 100, ...(o.devbox ? { devbox_id: o.devbox as string } : {}) })) snaps.push(s);
        show(io, o, { snapshots: snaps }, (v) =>
          table(
            ['ID', 'NAME', 'DEVBOX', 'CREATED'],
            v.snapshots.map((s) => [s.id, s.name ?? '-', s.source_devbox_id, iso(s.create_time_ms)]),
          ),
        );
        return 0;
      },
    },
    {
      words: ['snapshot', 'delete'],
      args: ['ID'],
      options: CLIENT_OPTIONS,
      summary: 'delete a disk snapshot',
      run: async ({ ID }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd snapshot delete ID');
        show(io, o, await api.devboxes.diskSnapshots.delete(ID!), () => `deleted ${ID}\n`);
        return 0;
      },
    },
    {
      words: ['object', 'upload'],
      args: ['FILE'],
      options: { ...CLIENT_OPTIONS, name: { type: 'string', placeholder: 'NAME', help: "the object's name (default the file's)" } },
      summary: 'upload a file as a storage object, streamed from disk with a progress line on stderr; prints the object',
      run: async ({ FILE }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd object upload FILE');
        const size = fs.statSync(FILE!).size;
        const created = await api.objects.create({ name: (o.name as string | undefined) ?? path.basename(FILE!), content_type: 'unspecified' });
        if (!created.upload_url) throw new Error('the server gave no upload URL');
        // The body streams from the file through the counter: the file is never held in memory whole.
        const body = Readable.toWeb(fs.createReadStream(FILE!).pipe(progress(io, 'uploaded', size))) as ReadableStream;
        const res = await fetch(created.upload_url, { method: 'PUT', body, headers: { 'content-length': String(size) }, duplex: 'half' } as RequestInit);
        if (!res.ok) throw new Error(`upload refused: ${res.status} ${await res.text()}`);
        const done = await api.objects.complete(created.id);
        show(io, o, done, (d) => table(['ID', 'NAME', 'STATE', 'BYTES'], [[d.id, d.name, d.state, String(d.size_bytes ?? size)]]));
        return 0;
      },
    },
    {
      words: ['object', 'download'],
      args: ['ID', 'FILE'],
      options: CLIENT_OPTIONS,
      summary: 'download a storage object into FILE, streamed to disk with a progress line on stderr',
      run: async ({ ID, FILE }, o: Options) => {
        const api = await clientOf(o, 'usage: devboxd object download ID FILE');
        const { download_url } = await api.objects.download(ID!);
        const res = await fetch(download_url);
        if (!res.ok || !res.body) throw new Error(`download refused: ${res.status}`);
        const total = Number(res.headers.get('content-length')) || null;
        await pipeline(Readable.fromWeb(res.body as never), progress(io, 'downloaded', total), fs.createWriteStream(FILE!));
        show(io, o, { id: ID, file: FILE, bytes: fs.statSync(FILE!).size }, (v) => `${v.file}\t${v.bytes} bytes\n`);
        return 0;
      },
    },
  ];
}
