/**
 * The little of the DNS wire format (RFC 1035) the boxes' forwarder needs: a query's question, a refusal
 * built from a query, and the A records (with their TTLs) of an answer.
 */

export const TYPE_A = 1;
export const TYPE_CNAME = 5;
export const TYPE_AAAA = 28;
export const RCODE_NOERROR = 0;
export const RCODE_FORMERR = 1;
export const RCODE_SERVFAIL = 2;
export const RCODE_NXDOMAIN = 3;
export const RCODE_REFUSED = 5;

export interface Question {
  id: number;
  name: string;
  type: number;
  /** Offset just past the question: header and question are what an answer of our own repeats. */
  end: number;
}

/** Longest name on the wire (RFC 1035 3.1): length bytes, labels and the root. */
const MAX_NAME_BYTES = 255;

/** Reads a (possibly compressed) name at `off`; returns it, its labels and the offset after it in the message. */
function readName(buf: Buffer, off: number): { name: string; labels: string[]; next: number } | null {
  const labels: string[] = [];
  let next = -1;
  let bytes = 1;
  for (let hops = 0; hops < 64; hops++) {
    if (off >= buf.length) return null;
    const len = buf[off]!;
    if (len === 0) {
      if (next < 0) next = off + 1;
      return { name: labels.join('.'), labels, next };
    }
    if ((len & 0xc0) === 0xc0) {
      if (off + 1 >= buf.length) return null;
      if (next < 0) next = off + 2;
      off = ((len & 0x3f) << 8) | buf[off + 1]!;
      continue;
    }
    bytes += 1 + len;
    if (len > 63 || off + 1 + len > buf.length || bytes > MAX_NAME_BYTES) return null;
    labels.push(buf.toString('latin1', off + 1, off + 1 + len));
    off += 1 + len;
  }
  return null;
}

/**
 * A standard query with exactly one question, or null. Its name is at most 255 bytes, and no label holds a
 * `.` byte: the name a policy judges is the name upstream resolves.
 */
export function parseQuery(buf: Buffer): Question | null {
  if (buf.length < 12) return null;
  const flags = buf.readUInt16BE(2);
  if (flags & 0x8000 || ((flags >> 11) & 0xf) !== 0 || buf.readUInt16BE(4) !== 1) return null;
  const q = readName(buf, 12);
  if (!q || q.next + 4 > buf.length || q.labels.some((l) => l.includes('.'))) return null;
  return { id: buf.readUInt16BE(0), name: q.name.toLowerCase(), type: buf.readUInt16BE(q.next), end: q.next + 4 };
}

/** An answer of our own to `query`: its question, no records, `rcode`. */
export function reply(query: Buffer, q: Question, rcode: number): Buffer {
  const out = Buffer.from(query.subarray(0, q.end));
  const rd = out.readUInt16BE(2) & 0x0100;
  out.writeUInt16BE(0x8000 | rd | 0x0080 | rcode, 2);
  out.writeUInt16BE(1, 4);
  out.writeUInt32BE(0, 6);
  out.writeUInt16BE(0, 10);
  return out;
}

/**
 * The IPv4 addresses in an answer's answer section for `name` (the question) or a name its CNAME chain
 * leads to, with the smallest TTL among them: an A record of another owner is not the question's answer.
 */
export function answerAddresses(buf: Buffer, name: string): { addresses: string[]; ttl: number } | null {
  if (buf.length < 12) return null;
  const qd = buf.readUInt16BE(4);
  const an = buf.readUInt16BE(6);
  let off = 12;
  for (let i = 0; i < qd; i++) {
    const n = readName(buf, off);
    if (!n) return null;
    off = n.next + 4;
  }
  const owners = new Set([name.toLowerCase()]);
  const addresses: string[] = [];
  let ttl = Infinity;
  for (let i = 0; i < an; i++) {
    const n = readName(buf, off);
    if (!n || n.next + 10 > buf.length) return null;
    const type = buf.readUInt16BE(n.next);
    const klass = buf.readUInt16BE(n.next + 2);
    const rrTtl = buf.readUInt32BE(n.next + 4);
    const len = buf.readUInt16BE(n.next + 8);
    const data = n.next + 10;
    if (data + len > buf.length) return null;
    const owned = owners.has(n.name.toLowerCase());
    if (owned && type === TYPE_CNAME && klass === 1) {
      const target = readName(buf, data);
      if (target) owners.add(target.name.toLowerCase());
    }
    if (owned && type === TYPE_A && klass === 1 && len === 4) {
      addresses.push(`${buf[data]}.${buf[data + 1]}.${buf[data + 2]}.${buf[data + 3]}`);
      ttl = Math.min(ttl, rrTtl);
    }
    off = data + len;
  }
  return { addresses, ttl: ttl === Infinity ? 0 : ttl };
}
