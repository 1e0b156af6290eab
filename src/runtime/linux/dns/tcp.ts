/**
 * One box's DNS over TCP (RFC 1035 4.2.2): messages framed by a two-byte length, answered in any order. A box
 * controls both ends of the connection, so everything the server holds for it is bounded: answers queued but
 * not yet taken by the box (reading pauses past OUT_HIGH_WATER and resumes on drain), questions answered but
 * unsent (they count against the box's in-flight cap until written), one frame being read, and the
 * connection's life (idle, and a total that a box sending without pause cannot extend).
 */
import type { Socket as TcpSocket } from 'node:net';

/** Answer bytes queued in user space before the connection stops reading questions. */
export const OUT_HIGH_WATER = 64 * 1024;

export interface TcpLimits {
  /** No byte in either direction for this long closes the connection. */
  idleMs: number;
  /** The connection closes this long after it opened, whatever it does. */
  lifetimeMs: number;
}

export const TCP_LIMITS: TcpLimits = { idleMs: 10_000, lifetimeMs: 30_000 };

/** The box's shared in-flight count: a question counts from its arrival until its answer is written. */
export interface InFlight {
  inFlight: number;
  maxInFlight: number;
}

export function serveDnsTcp(
  c: TcpSocket,
  box: InFlight,
  limits: TcpLimits,
  answer: (msg: Buffer) => Promise<Buffer | null>,
  onError: (err: Error) => void,
): void {
  c.setTimeout(limits.idleMs, () => c.destroy());
  const life = setTimeout(() => c.destroy(), limits.lifetimeMs);
  life.unref();
  // Questions of this connection still counted in the box's in-flight: released when it closes.
  let mine = 0;
  c.on('close', () => {
    clearTimeout(life);
    box.inFlight -= mine;
    mine = 0;
  });
  c.on('drain', () => {
    if (!c.destroyed && c.isPaused()) c.resume();
  });

  // Chunks of the frame being read, joined once the frame is whole (a frame that trickles in is not
  // copied again at every chunk). At most one frame, 65 537 bytes, is held.
  let chunks: Buffer[] = [];
  let have = 0;
  c.on('data', (d: Buffer) => {
    chunks.push(d);
    have += d.length;
    for (;;) {
      if (have < 2) return;
      if (chunks[0]!.length < 2) chunks = [Buffer.concat(chunks)];
      const need = 2 + chunks[0]!.readUInt16BE(0);
      if (have < need) return;
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const msg = all.subarray(2, need);
      chunks = have > need ? [all.subarray(need)] : [];
      have -= need;
      if (box.inFlight >= box.maxInFlight) {
        c.destroy();
        return;
      }
      box.inFlight++;
      mine++;
      let counted = true;
      const settle = () => {
        if (counted && mine > 0) {
          mine--;
          box.inFlight--;
        }
        counted = false;
      };
      void answer(msg)
        .then((out) => {
          if (!out || c.destroyed) return settle();
          const len = Buffer.alloc(2);
          len.writeUInt16BE(out.length);
          c.write(Buffer.concat([len, out]), settle);
          if (c.writableLength > OUT_HIGH_WATER) c.pause();
        })
        .catch((err: Error) => {
          settle();
          onError(err);
        });
    }
  });
}
