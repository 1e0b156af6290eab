// Every call the console makes goes through the public API with the signed-in key, exactly as the SDK's
// would: the server's scopes and tenancy decide what a page may show or do.
import { clearKey, currentKey } from './session';

/** An answer other than 2xx: the server's own `message` is what the page shows. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean | undefined | null>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export function authHeaders(): Record<string, string> {
  const key = currentKey();
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** A request's answer, or an ApiError with the server's message. A 401 signs out: the key was revoked. */
export async function request(method: string, path: string, init: { body?: unknown; query?: Query; signal?: AbortSignal } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...authHeaders() };
  let body: BodyInit | undefined;
  if (init.body instanceof FormData || init.body instanceof Blob) body = init.body;
  else if (init.body !== undefined || method === 'POST') {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.body ?? {});
  }
  const res = await fetch(withQuery(path, init.query), { method, headers, body, signal: init.signal });
  if (!res.ok) {
    const text = await res.text();
    let message = `${res.status} ${res.statusText}`;
    try {
      const parsed = JSON.parse(text) as { message?: string };
      if (parsed.message) message = parsed.message;
    } catch {
      if (text) message = text.slice(0, 500);
    }
    if (res.status === 401) clearKey();
    throw new ApiError(res.status, message);
  }
  return res;
}

export async function get<T>(path: string, query?: Query, signal?: AbortSignal): Promise<T> {
  return (await request('GET', path, { query, signal })).json() as Promise<T>;
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  const res = await request('POST', path, { body });
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export async function del<T>(path: string): Promise<T> {
  const res = await request('DELETE', path);
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

/** One page of a cursor-paged list: the items under `key`, whether more follow, and the total. */
export interface Page<T> {
  items: T[];
  hasMore: boolean;
  total: number | null;
}

export async function page<T>(path: string, key: string, query: Query = {}): Promise<Page<T>> {
  const body = await get<Record<string, unknown>>(path, { limit: 50, ...query });
  return {
    items: (body[key] as T[] | undefined) ?? [],
    hasMore: Boolean(body.has_more),
    total: typeof body.total_count === 'number' ? body.total_count : null,
  };
}

/**
 * Reads a server-sent event stream (execution output, logs, axon events). EventSource cannot send the
 * Authorization header, so this reads the response body itself. Calls `onEvent` per `data:` event until
 * the stream ends or `signal` aborts.
 */
export async function stream(path: string, onEvent: (data: string, event: string) => void, signal: AbortSignal, query?: Query): Promise<void> {
  const res = await request('GET', path, { query, signal });
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('data:')) data.push(line.slice(line[5] === ' ' ? 6 : 5));
        else if (line.startsWith('event:')) event = line.slice(6).trim();
      }
      if (data.length) onEvent(data.join('\n'), event);
    }
  }
}

/** A POST with a body sent by XMLHttpRequest: fetch cannot report upload progress. */
export function upload<T>(
  path: string,
  body: FormData | Blob,
  onProgress: (sent: number, total: number) => void,
  method = 'POST',
  extraHeaders: Record<string, string> = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    for (const [k, v] of Object.entries({ ...authHeaders(), ...extraHeaders })) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.total);
    xhr.onerror = () => reject(new ApiError(0, 'the upload failed: the connection was lost'));
    xhr.onload = () => {
      let parsed: { message?: string } = {};
      try {
        parsed = xhr.responseText ? JSON.parse(xhr.responseText) : {};
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) resolve(parsed as T);
      else reject(new ApiError(xhr.status, parsed.message ?? `${xhr.status} ${xhr.statusText}`));
    };
    xhr.send(body);
  });
}

/** Fetches a download and hands it to the browser as a file, reporting progress as bytes arrive. */
export async function download(
  path: string,
  filename: string,
  onProgress?: (got: number, total: number) => void,
  query?: Query,
  method = 'GET',
  body?: unknown,
): Promise<void> {
  const res = await request(method, path, { query, body });
  const total = Number(res.headers.get('content-length') ?? 0);
  const parts: Uint8Array[] = [];
  let got = 0;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parts.push(value);
      got += value.length;
      onProgress?.(got, total);
    }
  }
  const url = URL.createObjectURL(new Blob(parts as BlobPart[]));
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
