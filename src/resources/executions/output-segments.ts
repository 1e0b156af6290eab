import type { SegmentFile, StreamFiles } from './output-storage.js';

/**
 * The on-disk layout of one output stream. Its bytes are cut into segments of equal size: segment 0 (the head,
 * named `<id>.<stream>`) holds the first bytes and is kept; segment n ≥ 1 (`<id>.<stream>.<n>`) holds bytes
 * [n·S, (n+1)·S). Past the cap the writer deletes the oldest tail segment, so what is kept is always the head
 * plus one contiguous run of segments ending at the last byte, and a byte's stream offset stays its position
 * in the full stream. Segments are never rewritten: a reader that opened one keeps reading it even after the
 * writer deletes it. S is the head's size once the stream outgrew it, so no setting is needed to read back.
 * A segment is a spool file while it is written and a blob once sealed (output-storage.ts); readers do not
 * tell them apart.
 */

/** What a read at a byte position finds. */
export type ReadResult =
  /** Bytes from the position (fewer than asked when a dropped range or the end comes first). */
  | { bytes: Buffer }
  /** The position lies in a dropped range; kept bytes resume at `resumeAt`. */
  | { resumeAt: number }
  /** The stream's files were removed (the box ended, or the box's output budget evicted them). */
  | { gone: true };

/** Reads one stream of `size` committed bytes across its segments, holding at most one file open. */
export class SegmentReader {
  private fh: SegmentFile | null = null;
  private seg = -1;
  /** Segment size; 0 while the whole stream fits in the head. */
  private segSize = 0;

  constructor(readonly files: StreamFiles) {}

  /** Bytes in the head once the stream outgrew it (where a dropped range starts). */
  get headBytes(): number {
    return this.segSize;
  }

  /** Up to `max` bytes from `pos` (< `end`, the committed size). */
  async read(pos: number, end: number, max: number): Promise<ReadResult> {
    const buf = Buffer.allocUnsafe(Math.min(max, end - pos));
    let filled = 0;
    while (filled < buf.length) {
      const at = pos + filled;
      const n = await this.locate(at, end);
      if (n === null) return filled > 0 ? { bytes: buf.subarray(0, filled) } : { gone: true };
      if (typeof n === 'object') return filled > 0 ? { bytes: buf.subarray(0, filled) } : n;
      const segStart = n * this.segSize;
      const segEnd = this.segSize ? segStart + this.segSize : end;
      const want = Math.min(buf.length - filled, segEnd - at);
      const bytesRead = await this.fh!.read(buf, filled, want, at - segStart);
      if (bytesRead === 0) break; // not written yet (a caller past the committed size)
      filled += bytesRead;
    }
    return { bytes: buf.subarray(0, filled) };
  }

  /**
   * Start of the kept run that ends at `end` (0 when nothing was dropped), or null when the files are gone.
   * Views read their tail from there.
   */
  async keptFrom(end: number): Promise<number | null> {
    if (end === 0) return 0;
    const n = await this.locate(end - 1, end);
    if (n === null) return null;
    if (typeof n === 'object') return n.resumeAt >= end ? end : n.resumeAt;
    if (n === 0 || !this.segSize) return 0;
    // The run is contiguous: find its first segment after the head.
    const first = await this.firstKept(1, n);
    return first === 1 ? 0 : first * this.segSize;
  }

  async close(): Promise<void> {
    await this.fh?.close().catch(() => undefined);
    this.fh = null;
    this.seg = -1;
  }

  /** Opens the segment holding `pos`: its number, where kept bytes resume if it was dropped, or null (gone). */
  private async locate(pos: number, end: number): Promise<number | { resumeAt: number } | null> {
    if (this.seg === -1 || (this.segSize === 0 && end > (await this.headSize()))) {
      if (!(await this.openSegment(0))) return null;
      const size = await this.fh!.size();
      if (end > size) this.segSize = size;
    }
    const n = this.segSize ? Math.floor(pos / this.segSize) : 0;
    if (n === this.seg) return n;
    if (await this.openSegment(n)) return n;
    if (n === 0) return null;
    const last = Math.floor((end - 1) / this.segSize);
    if (!(await this.files.exists(last))) {
      return (await this.files.exists(0)) ? { resumeAt: end } : null;
    }
    return { resumeAt: (await this.firstKept(n + 1, last)) * this.segSize };
  }

  /** Smallest segment in [lo, hi] that exists, given that hi exists and the kept ones are contiguous. */
  private async firstKept(lo: number, hi: number): Promise<number> {
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (await this.files.exists(mid)) hi = mid;
      else lo = mid + 1;
    }
    return hi;
  }

  private async headSize(): Promise<number> {
    if (this.seg !== 0 || !this.fh) return 0;
    return this.fh.size();
  }

  private async openSegment(n: number): Promise<boolean> {
    const fh = await this.files.open(n);
    if (!fh) return false;
    await this.fh?.close().catch(() => undefined);
    this.fh = fh;
    this.seg = n;
    return true;
  }
}
