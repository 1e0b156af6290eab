// An execution's stdout and stderr, live, in the order they arrive: the two SSE streams the SDK's
// streamStdoutUpdates / streamStderrUpdates read (`{"output", "offset"}` events, a line each, replay then
// live, ending once the execution completed). A dropped stream is read again from the offset it reached,
// as the SDK does. Stderr lines carry an `err│` prefix, so they read as stderr without their colour.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, stream } from '../../api';
import { ErrorNote } from '../../ui/common';
import { LivePre } from './exec-live-pre';

type Which = 'stdout' | 'stderr';

interface Chunk {
  which: Which;
  text: string;
}

/** Characters kept on the page; older output is dropped from view (the API keeps it). */
const KEEP_CHARS = 1_000_000;
const RETRIES = 5;

async function follow(path: string, onText: (text: string) => void, signal: AbortSignal): Promise<void> {
  let offset = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      await stream(
        path,
        (data, event) => {
          const body = JSON.parse(data) as { output?: string; offset?: number; message?: string };
          if (event === 'error') throw new Error(body.message ?? 'the output stream failed');
          if (typeof body.offset === 'number') offset = body.offset;
          if (body.output) onText(body.output);
        },
        signal,
        { offset },
      );
      return;
    } catch (err) {
      // An answer of the server (404, 403) stands; a dropped connection is read again.
      if (signal.aborted || err instanceof ApiError || attempt >= RETRIES) throw err;
      await new Promise((r) => setTimeout(r, 1000 * (attempt + 1)));
    }
  }
}

export function ExecOutput({ devboxId, executionId, onEnd }: { devboxId: string; executionId: string; onEnd: () => void }) {
  const chunks = useRef<Chunk[]>([]);
  const chars = useRef(0);
  const dropped = useRef(false);
  const [, setTick] = useState(0);
  const [open, setOpen] = useState(2);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    chunks.current = [];
    chars.current = 0;
    const ac = new AbortController();
    let pending = false;
    const flush = () => {
      pending = false;
      setTick((t) => t + 1);
    };
    const add = (which: Which) => (text: string) => {
      chunks.current.push({ which, text });
      chars.current += text.length;
      while (chars.current > KEEP_CHARS && chunks.current.length > 1) {
        chars.current -= chunks.current.shift()!.text.length;
        dropped.current = true;
      }
      if (!pending) {
        pending = true;
        setTimeout(flush, 50);
      }
    };
    let left = 2;
    for (const which of ['stdout', 'stderr'] as const) {
      follow(`/v1/devboxes/${devboxId}/executions/${executionId}/stream_${which}_updates`, add(which), ac.signal)
        .catch((err: unknown) => {
          if (!ac.signal.aborted) setError(`${which}: ${err instanceof Error ? err.message : String(err)}`);
        })
        .finally(() => {
          if (ac.signal.aborted) return;
          flush();
          setOpen(--left);
          if (left === 0) onEnd();
        });
    }
    return () => ac.abort();
  }, [devboxId, executionId]);

  // A stderr prefix goes at the start of each of its lines, so a line written in pieces gets one.
  const atLineStart = { stdout: true, stderr: true };
  let lastWhich: Which | null = null;
  const spans = chunks.current.map((c, i) => {
    let text = c.text;
    if (c.which === 'stderr') {
      const start = atLineStart.stderr || lastWhich !== 'stderr';
      text = (start ? 'err│ ' : '') + text.replace(/\n(?=.)/g, '\nerr│ ');
    }
    atLineStart[c.which] = c.text.endsWith('\n');
    lastWhich = c.which;
    return (
      <span key={i} class={c.which === 'stderr' ? 'stderr' : undefined}>
        {text}
      </span>
    );
  });
  const empty = chunks.current.length === 0;
  return (
    <>
      <LivePre class="exec-log">
        {dropped.current && '… earlier output is not shown here\n'}
        {spans}
        {empty && (open > 0 ? 'Waiting for output…' : '(no output)')}
      </LivePre>
      <small>
        Lines starting <code>err│</code> are standard error; the rest is standard output.
        {open > 0 ? ' Live: output appears as the command writes it.' : ' The output is complete.'}
      </small>
      <ErrorNote error={error} />
    </>
  );
}
