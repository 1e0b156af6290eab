import type net from 'node:net';

/** A TLS record's header: type (22, handshake), version, length. */
const RECORD_HEADER = 5;
/** The largest TLS record (2^14 bytes of plaintext, and what a ClientHello record may be). */
const MAX_RECORD = 16_384;

/**
 * Reads the first TLS record of a connection (a ClientHello, which every client sends whole in its first
 * record) without consuming it: the bytes are put back and the socket paused, as it came. Undefined when the
 * connection closes or stalls first (`timeoutMs`).
 */
export function peekFirstRecord(socket: net.Socket, timeoutMs: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    let seen = Buffer.alloc(0);
    const done = (out: Buffer | undefined) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause();
      if (out) socket.unshift(seen);
      resolve(out);
    };
    const onData = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      if (seen.length < RECORD_HEADER) return;
      const want = RECORD_HEADER + Math.min(seen.readUInt16BE(3), MAX_RECORD);
      if (seen.length >= want) done(seen.subarray(0, want));
    };
    const onClose = () => done(undefined);
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('data', onData);
    socket.once('close', onClose);
    socket.resume();
  });
}

/** The host name a ClientHello record names (its server_name extension), or '' when it names none. */
export function serverNameOf(record: Buffer): string {
  try {
    const r = new Reader(record);
    if (r.u8() !== 22) return '';
    r.skip(4); // version, length
    if (r.u8() !== 1) return ''; // ClientHello
    r.skip(3 + 2 + 32); // length, client version, random
    r.skip(r.u8()); // session id
    r.skip(r.u16()); // cipher suites
    r.skip(r.u8()); // compression methods
    const end = r.at + r.u16();
    while (r.at + 4 <= end) {
      const type = r.u16();
      const len = r.u16();
      if (type !== 0) {
        r.skip(len);
        continue;
      }
      const listEnd = r.at + r.u16();
      while (r.at + 3 <= listEnd) {
        const nameType = r.u8();
        const name = r.bytes(r.u16());
        if (nameType === 0) return name.toString('latin1');
      }
      return '';
    }
  } catch {}
  return '';
}

/** Reads big-endian fields of a buffer, throwing past its end (a truncated hello names nothing). */
class Reader {
  at = 0;
  constructor(private readonly buf: Buffer) {}
  u8(): number {
    return this.buf.readUInt8(this.take(1));
  }
  u16(): number {
    return this.buf.readUInt16BE(this.take(2));
  }
  bytes(n: number): Buffer {
    const at = this.take(n);
    return this.buf.subarray(at, at + n);
  }
  skip(n: number): void {
    this.take(n);
  }
  private take(n: number): number {
    const at = this.at;
    if (at + n > this.buf.length) throw new RangeError('truncated TLS record');
    this.at += n;
    return at;
  }
}
