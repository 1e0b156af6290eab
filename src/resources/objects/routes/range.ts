/**
 * One HTTP byte range (RFC 9110 14.1.2) against a resource of `size` bytes: `bytes=a-b`, `bytes=a-` or the
 * suffix `bytes=-n`. Returns the inclusive range, `'unsatisfiable'` (416) when no byte of it exists, or null
 * when the header is absent, malformed or asks for several ranges: those are answered whole, as the RFC allows.
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
