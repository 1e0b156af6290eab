/**
 * The agent's byte streams: a process's stdio (Spawn) and a connection to a box's port (OpenPort), each one
 * gRPC call. Flow control holds end to end: a caller that reads slowly fills the call's HTTP/2 window, the
 * agent stops reading the process's pipes, and the process blocks on its writes as it would on a terminal.
 */
import type { Readable, Writable } from 'node:stream';
import type * as grpc from '@grpc/grpc-js';
import type { BoxProcess, RuntimeDriver, Sandbox, SpawnSpec } from '../driver.js';
import { toStatus } from './protocol.js';

type Call = grpc.ServerDuplexStream<Record<string, unknown>, unknown>;
type Message = Record<string, unknown> & { kind?: string };

/**
 * After a process exits, how long its output may stay quiet (not counting time the caller's flow control held
 * it) before its exit is sent anyway: a child it left behind may hold its pipes open. Until then the exit
 * waits behind the output, as the bytes still in the pipe are behind it in process; without this the caller
 * heard of the exit while a window's worth of output was still on its way, and its drain grace cut it.
 */
const QUIET_MS = 300;

interface Flow {
  data(): void;
  paused(): void;
  resumed(): void;
}

const NO_FLOW: Flow = { data() {}, paused() {}, resumed() {} };

/** Writes to the call; a full call pauses `source` until it drains. */
function forward(call: Call, source: Readable, message: (chunk: Buffer) => object, flow = NO_FLOW): void {
  source.on('data', (chunk: Buffer) => {
    flow.data();
    if (!call.write(message(chunk))) {
      source.pause();
      flow.paused();
      call.once('drain', () => {
        flow.resumed();
        source.resume();
      });
    }
  });
}

/** Input to `sink` from the call; a full sink pauses the call (and so the caller) until it drains. */
function feed(call: Call, sink: Writable, chunk: Buffer): void {
  if (!sink.write(chunk)) {
    call.pause();
    sink.once('drain', () => call.resume());
  }
}

function fail(call: Call, err: unknown): void {
  call.emit('error', toStatus(err));
}

export function serveSpawn(call: Call, sandboxOf: (id: string) => Sandbox, log: { warn(obj: object, msg: string): void }): void {
  let proc: BoxProcess | undefined;
  let open = 3; // stdout, stderr and the exit still to send
  const done = () => {
    if (--open === 0) call.end();
  };
  const run = (p: BoxProcess) => {
    proc = p;
    p.stdin.on('error', () => undefined); // EPIPE: the command does not read its input
    let exit: object | undefined;
    let ended = 0;
    let held = 0;
    let quiet: NodeJS.Timeout | undefined;
    const sendExit = () => {
      if (!exit) return;
      clearTimeout(quiet);
      call.write({ exit });
      exit = undefined;
      done();
    };
    const arm = () => {
      clearTimeout(quiet);
      if (exit && held === 0) quiet = setTimeout(sendExit, QUIET_MS);
    };
    const flow: Flow = {
      data: arm,
      paused: () => {
        held++;
        clearTimeout(quiet);
      },
      resumed: () => {
        held--;
        arm();
      },
    };
    forward(call, p.stdout, (c) => ({ stdout: c }), flow);
    forward(call, p.stderr, (c) => ({ stderr: c }), flow);
    const ends = (s: Readable, key: string) => {
      let sent = false;
      const end = () => {
        if (sent) return;
        sent = true;
        call.write({ [key]: {} });
        done();
        if (++ended === 2) sendExit();
      };
      // A pipe closed without an end (the process was closed) ends here too.
      for (const ev of ['end', 'error', 'close']) s.once(ev, end);
    };
    ends(p.stdout, 'stdout_end');
    ends(p.stderr, 'stderr_end');
    void p.exited.then((e) => {
      exit = { code: e.exitCode ?? 0, has_code: e.exitCode !== null, signal: e.signal ?? '' };
      if (ended === 2) sendExit();
      else arm();
    });
  };
  // The caller went away (its server ended): the process is closed as when a server in process ends, but a
  // held terminal stays, its output waiting for a reattach (which drops this connection).
  let held = false;
  const lost = () => {
    if (!held) proc?.close();
  };
  call.on('cancelled', lost);
  call.on('error', lost);
  call.on('data', (msg: Message) => {
    try {
      if (!proc) return void start(msg);
      switch (msg.kind) {
        case 'stdin':
          return feed(call, proc.stdin, msg.stdin as Buffer);
        case 'stdin_end':
          return void proc.stdin.end();
        case 'signal': {
          const s = msg.signal as { signal: NodeJS.Signals; group: string };
          return proc.signal(s.signal, s.group === 'foreground' ? 'foreground' : s.group === 'true');
        }
        case 'resize': {
          const r = msg.resize as { cols: number; rows: number };
          return proc.resize(r.cols, r.rows);
        }
        case 'release':
          held = false;
          return proc.release?.();
        case 'close':
          held = false;
          proc.close();
          return void call.end();
      }
    } catch (err) {
      log.warn({ err }, 'a process call failed');
      fail(call, err);
    }
  });
  const start = (msg: Message) => {
    if (msg.kind === 'start') {
      const r = msg.start as { sandbox: string; spec: string };
      const spec = JSON.parse(r.spec) as SpawnSpec;
      held = !!(spec.tty && spec.hold);
      return run(sandboxOf(r.sandbox).spawn(spec));
    }
    if (msg.kind !== 'reattach') throw new TypeError('a process call starts with start or reattach');
    const r = msg.reattach as { sandbox: string; key: string };
    const box = sandboxOf(r.sandbox);
    // Input sent before the terminal is found waits in the call.
    call.pause();
    box.reattach(r.key).then(
      (terminal) => {
        call.write({ attached: { found: terminal !== null, cols: terminal?.cols ?? 0, rows: terminal?.rows ?? 0 } });
        if (!terminal) return void call.end();
        held = true;
        run(terminal.proc);
        call.resume();
      },
      (err) => fail(call, err),
    );
  };
}

export function serveOpenPort(call: Call, driver: RuntimeDriver): void {
  call.once('data', (msg: Message) => {
    const target = msg.open as { sandbox: string; port: number } | undefined;
    if (!target) return fail(call, new TypeError('a port call starts with open'));
    call.pause();
    driver.openPort(target.sandbox, target.port).then(
      (socket) => {
        socket.on('error', (err) => fail(call, err));
        call.write({ data: Buffer.alloc(0) });
        forward(call, socket, (c) => ({ data: c }));
        socket.once('end', () => call.end());
        call.on('data', (m: Message) => m.kind === 'data' && feed(call, socket, m.data as Buffer));
        call.once('end', () => socket.end());
        call.once('cancelled', () => socket.destroy());
        call.resume();
      },
      (err) => fail(call, err),
    );
  });
}
