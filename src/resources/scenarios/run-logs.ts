import { Readable } from 'node:stream';
import yazl from 'yazl';
import type { LogEntry, LogFilter } from '../executions/index.js';
import type { ScenarioRun } from './types.js';

/** Devbox log entries read per page while the zip streams. */
const PAGE = 1000;

export type LogReader = (accountId: string, devboxId: string, filter: LogFilter) => Promise<LogEntry[]>;

const line = (e: LogEntry) =>
  [new Date(e.timestampMs).toISOString(), e.level, e.source, e.cmdId ?? '-', e.cmd ?? '', e.message ?? '', e.exitCode != null ? `exit ${e.exitCode}` : '']
    .filter((p) => p !== '')
    .join(' ') + '\n';

/**
 * A run's logs as a zip, streamed: `run.json` (the run as the API shows it), `scoring/<function>.log` (each
 * scoring function's kept output) and `devbox.log` (the run's devbox log, read page by page as the zip is
 * written, so memory does not grow with it).
 */
export function runLogsZip(run: ScenarioRun, view: unknown, readLogs: LogReader): Readable {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(JSON.stringify(view, null, 2) + '\n'), 'run.json');
  for (const f of run.scoringResult?.functions ?? []) {
    zip.addBuffer(Buffer.from(`state: ${f.state}\nscore: ${f.score}\n\n${f.output}\n`), `scoring/${f.name}.log`);
  }
  zip.addReadStream(Readable.from(devboxLog(run, readLogs)), 'devbox.log');
  zip.end();
  const out = zip.outputStream as Readable;
  // Without a listener a zip error would be thrown away and the response would never end.
  zip.on('error', (err: Error) => out.destroy(err));
  return out;
}

async function* devboxLog(run: ScenarioRun, readLogs: LogReader): AsyncGenerator<string> {
  let afterSeq: number | undefined;
  for (;;) {
    let page: LogEntry[];
    try {
      page = await readLogs(run.accountId, run.devboxId, { afterSeq, limit: PAGE });
    } catch (err) {
      // The box's log can go while the zip streams (its row removed): the zip still ends, and says so.
      yield `[devboxd: the devbox log is unavailable: ${(err as Error).message}]\n`;
      return;
    }
    if (page.length) yield page.map(line).join('');
    if (page.length < PAGE) return;
    afterSeq = page[page.length - 1]!.seq;
  }
}
