import { isUtf8 } from 'node:buffer';
import { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { Type } from 'typebox';
import { ERRORS } from '../../../platform/errors.js';
import { checkPath, PathString } from '../paths.js';
import { clientGone } from '../../../platform/http/request-signal.js';
import type { Api } from '../../../platform/http/resource-module.js';
import { Body, ERROR_RESPONSES, replies } from '../../../platform/http/schemas/common.js';
import { DevboxIdParams } from '../../../platform/http/schemas/shared.js';
import { SyncViewSchema } from '../../executions/index.js';
import type { FileRouteOptions } from './options.js';
import { holdSlot } from './slots.js';

/** read_file_contents answers in one body; bigger files belong to download_file. */
const MAX_TEXT_BYTES = 64 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** Longest a request may hold a slot, body and answer included: 64 MiB at ≥ 0.5 MiB/s. */
const SLOT_HOLD_MS = 120_000;

const ReadBody = Body({ file_path: PathString() });
const WriteBody = Body({ file_path: PathString(), contents: Type.String() });
const TextReplies = {
  200: { description: 'the file as UTF-8 text', content: { 'text/plain': { schema: Type.Unsafe<Readable>({ type: 'string' }) } } },
  ...ERROR_RESPONSES,
};

export function contentRoutes(app: Api, { files, devboxes, contentsGate }: FileRouteOptions): void {
  // The whole file is read before the answer starts (a file over the limit must be a 400, not a cut body),
  // so each request holds up to MAX_TEXT_BYTES until its answer is sent: the gate bounds how many do.
  app.post(
    '/v1/devboxes/:id/read_file_contents',
    {
      schema: { params: DevboxIdParams, body: ReadBody, response: TextReplies },
      // Write, as any file read: a box's files hold what a read-only key must not see (its commands'
      // environments, secrets included, in /proc/<pid>/environ; whatever the box's programs wrote).
      config: { idempotent: false, access: 'write' },
      preParsing: holdSlot(contentsGate, 'file contents requests', SLOT_HOLD_MS),
    },
    async (req, reply) => {
      const { id } = req.params;
      const { file_path } = req.body;
      checkPath(file_path, 'file_path');
      const chunks = await readWhole(files, req.principal.accountId, id, file_path, clientGone(reply));
      devboxes.touch(id);
      const size = chunks.reduce((n, c) => n + c.length, 0);
      reply.type('text/plain; charset=utf-8');
      const valid = isValidUtf8(chunks);
      if (valid) reply.header('content-length', size);
      return reply.send(Readable.from(textOf(chunks, valid), { objectMode: false }));
    },
  );

  // Answers like execute_sync did for the same job (DevboxExecutionDetailView). Its body (up to the JSON
  // body limit) is held in memory too, so it takes a slot of the same gate before the body is read.
  app.post(
    '/v1/devboxes/:id/write_file_contents',
    {
      schema: { params: DevboxIdParams, body: WriteBody, response: replies(SyncViewSchema) },
      preParsing: holdSlot(contentsGate, 'file contents requests', SLOT_HOLD_MS),
    },
    async (req, reply) => {
      const { id } = req.params;
      const { file_path, contents } = req.body;
      checkPath(file_path, 'file_path');
      await files.write(req.principal.accountId, id, file_path, contents, clientGone(reply));
      devboxes.touch(id);
      return { devbox_id: id, exit_status: 0, stdout: '', stderr: '' };
    },
  );
}

/** The file's bytes as they came out of the box (no copy into one buffer), refusing files over the limit. */
async function readWhole(files: FileRouteOptions['files'], accountId: string, id: string, path: string, signal: AbortSignal): Promise<Buffer[]> {
  const { stream, done } = await files.read(accountId, id, path, signal);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_TEXT_BYTES) {
      stream.destroy();
      throw ERRORS.invalid(`${path} is larger than ${MAX_TEXT_BYTES} bytes; use download_file for large files`);
    }
    chunks.push(chunk);
  }
  await done;
  return chunks;
}

/** Whether the chunks together are valid UTF-8 (simdutf through isUtf8; a character may straddle chunks). */
function isValidUtf8(chunks: Buffer[]): boolean {
  let carry = EMPTY;
  for (let chunk of chunks) {
    if (carry.length) {
      // Complete the straddling character with the first bytes of this chunk, and check it alone.
      const take = Math.min(chunk.length, seqLength(carry[0]!) - carry.length);
      carry = Buffer.concat([carry, chunk.subarray(0, Math.max(0, take))]);
      chunk = chunk.subarray(Math.max(0, take));
      if (carry.length < seqLength(carry[0]!) && chunk.length === 0) continue;
      if (!isUtf8(carry)) return false;
      carry = EMPTY;
    }
    const whole = wholeLength(chunk);
    if (!isUtf8(chunk.subarray(0, whole))) return false;
    carry = Buffer.from(chunk.subarray(whole));
  }
  return carry.length === 0;
}

/** Bytes of the sequence a lead byte starts (1 for anything that cannot start one: isUtf8 refuses it). */
const seqLength = (b: number) => (b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1);

/** Length of the prefix of `buf` that does not end inside an incomplete character. */
function wholeLength(buf: Buffer): number {
  for (let i = buf.length - 1, back = 0; i >= 0 && back < 4; i--, back++) {
    const b = buf[i]!;
    if ((b & 0xc0) === 0x80) continue;
    return buf.length - i >= seqLength(b) ? buf.length : i;
  }
  return buf.length;
}

/**
 * The body, chunk by chunk, each released once sent. Valid UTF-8 goes out as is; anything else is decoded
 * with replacement characters, as a JSON string of the file would carry it.
 */
async function* textOf(chunks: Buffer[], valid: boolean): AsyncGenerator<Buffer> {
  const decoder = valid ? null : new StringDecoder('utf8');
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i]!;
    chunks[i] = EMPTY;
    yield decoder ? Buffer.from(decoder.write(chunk)) : chunk;
  }
  if (decoder) {
    const rest = decoder.end();
    if (rest) yield Buffer.from(rest);
  }
}
