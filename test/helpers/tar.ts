/**
 * A tiny ustar writer for tests: archives exactly as given, hostile names and links included (`../x`,
 * `/abs`, a symlink then a file through it), which well-behaved archivers refuse to make.
 */
export interface TarEntry {
  name: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'chardev';
  data?: string | Buffer;
  linkname?: string;
  mode?: number;
  uid?: number;
  gid?: number;
  devmajor?: number;
  devminor?: number;
}

const TYPE = { file: '0', hardlink: '1', symlink: '2', chardev: '3', dir: '5' } as const;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  const type = e.type ?? 'file';
  if (Buffer.byteLength(e.name) > 100) throw new Error(`tar test helper: name over 100 bytes: ${e.name}`);
  h.write(e.name, 0, 100);
  h.write(octal(e.mode ?? (type === 'dir' ? 0o755 : 0o644), 8), 100);
  h.write(octal(e.uid ?? 0, 8), 108);
  h.write(octal(e.gid ?? 0, 8), 116);
  h.write(octal(size, 12), 124);
  h.write(octal(1_700_000_000, 12), 136);
  h.write('        ', 148);
  h.write(TYPE[type], 156);
  if (e.linkname) h.write(e.linkname, 157, 100);
  h.write('ustar\0', 257);
  h.write('00', 263);
  h.write(octal(e.devmajor ?? 0, 8), 329);
  h.write(octal(e.devminor ?? 0, 8), 337);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148);
  return h;
}

export function makeTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const data = e.type === undefined || e.type === 'file' ? Buffer.from(e.data ?? '') : Buffer.alloc(0);
    parts.push(header(e, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}
