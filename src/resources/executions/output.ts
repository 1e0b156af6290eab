import { SegmentReader } from './output-segments.js';
import type { StreamFiles } from './output-storage.js';

/** Largest piece of output a view carries (last_n lines are cut to it): keeps JSON answers bounded. */
export const MAX_VIEW_BYTES = 1024 * 1024;
/** Largest chunk an output stream sends. */
export const STREAM_CHUNK = 256 * 1024;

/** Length of the longest prefix of `buf[0, len)` that ends on a UTF-8 character boundary. */
export function utf8Prefix(buf: Buffer, len: number): number {
  // Look back at most 3 bytes for the lead byte of a sequence that may be incomplete.
  for (let i = len - 1, back = 0; i >= 0 && back < 4; i--, back++) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return len - i >= need ? len : i;
  }
  return len; // not UTF-8 (a run of continuation bytes): send as is
}

/** First character boundary at or after `pos` in `buf`. */
export function utf8Start(buf: Buffer, pos: number): number {
  while (pos < buf.length && (buf[pos]! & 0xc0) === 0x80) pos++;
  return pos;
}

/** What stands in the text where output was dropped or removed. */
export const droppedMarker = (bytes: number) => `[devboxd: ${bytes} bytes of output dropped here (DEVBOXD_EXECUTION_OUTPUT_MAX_BYTES)]\n`;
export const REMOVED_MARKER = '[devboxd: the output of this execution was removed (its devbox ended, or the per-box output budget was exceeded)]\n';

/**
 * The last `n` lines of a stream of `size` bytes, read from its end (the stream is never read whole), cut to
 * MAX_VIEW_BYTES. `truncated` is true when anything before them was left out; when the lines reach back into
 * a dropped range, a marker says how much went, and output that was removed says so instead of the text.
 */
export async function tailLines(files: StreamFiles, size: number, n: number): Promise<{ text: string; truncated: boolean; removed?: true }> {
  if (size <= 0) return { text: '', truncated: false };
  if (n <= 0) return { text: '', truncated: true };
  const reader = new SegmentReader(files);
  try {
    const kept = await reader.keptFrom(size);
    if (kept === null) return { text: REMOVED_MARKER, truncated: true, removed: true };
    const from = Math.max(kept, size - MAX_VIEW_BYTES);
    const got = from < size ? await reader.read(from, size, size - from) : { bytes: Buffer.alloc(0) };
    if ('gone' in got) return { text: REMOVED_MARKER, truncated: true, removed: true };
    const data = 'bytes' in got ? got.bytes : Buffer.alloc(0);
    // A trailing newline ends the last line; it does not start another one.
    let newlines = data[data.length - 1] === 10 ? -1 : 0;
    let start = -1;
    for (let i = data.length - 1; i >= 0; i--) {
      if (data[i] === 10 && ++newlines === n) {
        start = i + 1;
        break;
      }
    }
    if (start >= 0) return { text: data.toString('utf8', start), truncated: true };
    if (from === 0) return { text: data.toString('utf8'), truncated: false };
    const text = data.toString('utf8', utf8Start(data, 0));
    // The lines reach back past what is kept: say what went (the head is left out of a tail view).
    if (from === kept) return { text: droppedMarker(kept - reader.headBytes) + text, truncated: true };
    return { text, truncated: true };
  } finally {
    await reader.close();
  }
}

/**
 * The last `max` bytes (at most) of a stream of `size` bytes, starting on a character boundary; `whole` when
 * they start at the stream's first byte. Removed output is a marker; a dropped middle range shortens the tail.
 */
export async function tailBytes(files: StreamFiles, size: number, max: number): Promise<{ text: string; whole: boolean }> {
  if (size <= 0) return { text: '', whole: true };
  const reader = new SegmentReader(files);
  try {
    const kept = await reader.keptFrom(size);
    if (kept === null) return { text: REMOVED_MARKER, whole: false };
    const from = Math.max(kept, size - max);
    const got = await reader.read(from, size, size - from);
    if (!('bytes' in got)) return { text: REMOVED_MARKER, whole: false };
    return { text: got.bytes.toString('utf8', from === 0 ? 0 : utf8Start(got.bytes, 0)), whole: from === 0 };
  } finally {
    await reader.close();
  }
}
