// One attachment of an xterm.js terminal to a box's PTY session: connect at the terminal's fitted size,
// attach the WebSocket, pipe bytes both ways, and follow the terminal's size with resize controls.
import type { FitAddon } from '@xterm/addon-fit';
import type { Terminal } from '@xterm/xterm';
import { ApiError } from '../../api';
import { attach, connect, createTunnel, type PtyTunnel, resize, sessionFor } from './terminal-pty';

export type Phase =
  | { kind: 'connecting' }
  | { kind: 'connected'; session: string; cols: number; rows: number; created: boolean }
  | { kind: 'closed'; reason: string }
  | { kind: 'failed'; error: string };

/** Size changes settle this long before the box is told (a window drag resizes many times). */
const RESIZE_SETTLE_MS = 150;

/** What a close code means to the user; the server's reason when it gave one. */
function closeReason(ev: CloseEvent, opened: boolean): string {
  if (ev.reason) return ev.reason;
  if (!opened) return 'the terminal could not attach (the box may have stopped, or another tab holds this session)';
  if (ev.code === 1001) return 'the box stopped';
  if (ev.code === 1000) return 'the session ended';
  return 'the connection to the server was lost';
}

export class TerminalLink {
  /** Kept across reconnects: a tunnel lasts as long as its box. */
  private tunnel: PtyTunnel | null = null;
  private ws: WebSocket | null = null;
  private stopped = false;
  private cleanups: (() => void)[] = [];

  constructor(
    private readonly devboxId: string,
    private readonly term: Terminal,
    private readonly fit: FitAddon,
    private readonly onPhase: (p: Phase) => void,
  ) {}

  async start(): Promise<void> {
    this.onPhase({ kind: 'connecting' });
    try {
      await this.open();
    } catch (e) {
      if (!this.stopped) this.onPhase({ kind: 'failed', error: e instanceof Error ? e.message : String(e) });
    }
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.cleanups.splice(0)) c();
    this.ws?.close();
  }

  private async open(): Promise<void> {
    this.fit.fit();
    const { cols, rows } = this.term;
    let session = sessionFor(this.devboxId);
    let conn = await this.connect(session, cols, rows);
    // Another tab (a duplicated one shares this tab's session name) is on it: this tab gets a shell of its own.
    if (conn.attached) {
      session = sessionFor(this.devboxId, true);
      conn = await this.connect(session, cols, rows);
    }
    if (this.stopped) return;
    const tunnel = this.tunnel!;
    const ws = attach(tunnel, conn.connect_url);
    this.ws = ws;
    const encoder = new TextEncoder();
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.onPhase({ kind: 'connected', session, cols: conn.cols, rows: conn.rows, created: conn.created });
      this.term.focus();
    };
    ws.onmessage = (ev) => this.term.write(new Uint8Array(ev.data as ArrayBuffer));
    ws.onclose = (ev) => {
      for (const c of this.cleanups.splice(0)) c();
      if (!this.stopped) this.onPhase({ kind: 'closed', reason: closeReason(ev, opened) });
    };
    const send = (bytes: Uint8Array<ArrayBuffer>) => ws.readyState === WebSocket.OPEN && ws.send(bytes);
    const onData = this.term.onData((text) => send(encoder.encode(text)));
    // Some mouse reports are bytes, not text: each character is one byte.
    const onBinary = this.term.onBinary((text) => send(Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff)));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onResize = this.term.onResize((size) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        resize(tunnel, session, size.cols, size.rows).then(
          () => this.onPhase({ kind: 'connected', session, cols: size.cols, rows: size.rows, created: conn.created }),
          () => {}, // a session that just ended: the socket's close says why
        );
      }, RESIZE_SETTLE_MS);
    });
    const observer = new ResizeObserver(() => this.fit.fit());
    observer.observe(this.term.element!.parentElement!);
    this.cleanups.push(
      () => onData.dispose(),
      () => onBinary.dispose(),
      () => onResize.dispose(),
      () => clearTimeout(timer),
      () => observer.disconnect(),
    );
  }

  /** connect, with a new tunnel when there is none yet or the old one is gone. */
  private async connect(session: string, cols: number, rows: number) {
    if (this.tunnel) {
      try {
        return await connect(this.tunnel, session, cols, rows);
      } catch (e) {
        if (!(e instanceof ApiError && (e.status === 404 || e.status === 401))) throw e;
      }
    }
    this.tunnel = await createTunnel(this.devboxId);
    return connect(this.tunnel, session, cols, rows);
  }
}
