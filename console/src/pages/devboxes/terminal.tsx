// A terminal into a box: xterm.js on one of the box's PTY sessions. Only this page imports xterm.js and its
// styles, so they load when a terminal opens, not with the console.
import '@xterm/xterm/css/xterm.css';
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../../api';
import { ErrorNote, Header, Status } from '../../ui/common';
import { useLoad } from '../../ui/use-load';
import { type Phase, TerminalLink } from './terminal-session';

function StatusLine({ phase, retry }: { phase: Phase; retry: () => void }) {
  switch (phase.kind) {
    case 'connecting':
      return <p aria-busy="true">Connecting…</p>;
    case 'connected':
      return (
        <p>
          Connected to session <code>{phase.session}</code>, {phase.cols}×{phase.rows}
          {phase.created ? ' (a new shell)' : ' (the shell this tab had open)'}.
        </p>
      );
    case 'closed':
      return (
        <p class="terminal-closed">
          Disconnected — {phase.reason}.{' '}
          <button type="button" onClick={retry}>
            Reconnect
          </button>
        </p>
      );
    case 'failed':
      return (
        <div class="terminal-closed">
          <ErrorNote error={phase.error} />
          <button type="button" onClick={retry}>
            Try again
          </button>
        </div>
      );
  }
}

export default function DevboxTerminal({ id }: { id: string }) {
  const box = useLoad((signal) => get<DevboxView>(`/v1/devboxes/${encodeURIComponent(id)}`, undefined, signal), [id]);
  const host = useRef<HTMLElement>(null);
  const [term, setTerm] = useState<{ xterm: Terminal; fit: FitAddon } | null>(null);
  const [phase, setPhase] = useState<Phase>({ kind: 'connecting' });
  const [attempt, setAttempt] = useState(0);
  const [reader, setReader] = useState(false);

  useEffect(() => {
    const xterm = new Terminal({
      cursorBlink: true,
      fontSize: 14,
      scrollback: 5000,
      fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
    });
    const fit = new FitAddon();
    xterm.loadAddon(fit);
    xterm.open(host.current!);
    // Tab belongs to the shell (completion), so it cannot also move focus on: Escape then Tab leaves the
    // terminal (a keyboard way out that the page names, as WCAG 2.1.2 asks). Escape alone still reaches the shell.
    let escaped = false;
    xterm.attachCustomKeyEventHandler((e) => {
      if (e.type !== 'keydown') return true;
      if (escaped && e.key === 'Tab') {
        escaped = false;
        return false;
      }
      escaped = e.key === 'Escape';
      return true;
    });
    setTerm({ xterm, fit });
    return () => xterm.dispose();
  }, []);

  useEffect(() => {
    if (!term) return;
    const link = new TerminalLink(id, term.xterm, term.fit, setPhase);
    void link.start();
    return () => link.stop();
  }, [term, id, attempt]);

  useEffect(() => {
    if (term) term.xterm.options.screenReaderMode = reader;
  }, [term, reader]);

  const name = box.data?.name || id;
  return (
    <section>
      <Header title={`Terminal: ${name}`}>
        <a href={`/devboxes/${id}/files`} class="button secondary outline">
          Files
        </a>
        <a href={`/devboxes/${id}`} class="button secondary outline">
          Devbox details
        </a>
      </Header>
      {box.data && (
        <p>
          Devbox <code>{id}</code> is <Status value={box.data.status} />.{' '}
          {box.data.status === 'running' ? (
            "The shell runs as the box's user in its home directory, with the box's environment."
          ) : (
            <>
              A terminal opens while it runs: resume or start it from its <a href={`/devboxes/${id}`}>details page</a>, then try again.
            </>
          )}
        </p>
      )}
      <ErrorNote error={box.error} />
      <h2>Shell</h2>
      <div class="terminal-bar">
        <div role="status" aria-live="polite">
          <StatusLine
            phase={phase}
            retry={() => {
              box.reload();
              setAttempt((n) => n + 1);
            }}
          />
        </div>
        <label>
          <input type="checkbox" checked={reader} onChange={(e) => setReader(e.currentTarget.checked)} />
          Screen reader mode
        </label>
      </div>
      <section class="terminal-box" ref={host} aria-label={`Terminal of ${name}`} aria-describedby="terminal-keys" />
      <small id="terminal-keys">Tab goes to the shell. Press Escape, then Tab, to move focus out of the terminal.</small>
    </section>
  );
}
