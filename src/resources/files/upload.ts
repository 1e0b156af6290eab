import type { Readable } from 'node:stream';
import { ERRORS } from '../../platform/errors.js';
import type { FileService, PendingWrite } from './file-service.js';
import { checkPath } from './paths.js';

/**
 * One upload_file request, whose path and bytes may come in either order (the SDK sends the path first).
 * With the path known, the bytes stream into a temporary file next to it; without, into a staging file in
 * the home directory, moved once the path arrives. Nothing replaces the destination before `finish`, so a
 * request found wrong after its bytes (a second file, no path) leaves it as it was.
 */
export class Upload {
  private path: string | undefined;
  private pending: PendingWrite | undefined;
  private staged: string | undefined;
  private received = false;

  constructor(
    private readonly files: FileService,
    private readonly accountId: string,
    private readonly id: string,
    private readonly signal?: AbortSignal,
  ) {}

  setPath(path: string): void {
    if (this.path !== undefined) throw ERRORS.invalid('the multipart field path appears more than once');
    checkPath(path, 'path');
    this.path = path;
  }

  async receive(source: Readable): Promise<void> {
    if (this.received) throw ERRORS.invalid('the multipart body has more than one file part; upload_file takes one file');
    this.received = true;
    if (this.path === undefined) this.staged = this.files.stagingName();
    this.pending = await this.files.begin(this.accountId, this.id, this.path ?? this.staged!, source, this.signal);
  }

  /** Puts the file in place; throws (after dropping the bytes) when the request lacked a part. */
  async finish(): Promise<void> {
    if (!this.pending) {
      throw ERRORS.invalid(this.path === undefined ? 'the multipart fields path and file are missing' : 'the multipart field file is missing');
    }
    if (this.path === undefined) throw ERRORS.invalid('the multipart field path is missing');
    const pending = this.pending;
    this.pending = undefined;
    await pending.commit();
    if (this.staged !== undefined) await this.files.place(this.accountId, this.id, this.staged, this.path);
  }

  /** Drops whatever was received; the destination stays as it was. */
  async abort(): Promise<void> {
    const pending = this.pending;
    this.pending = undefined;
    await pending?.abort().catch(() => undefined);
  }
}
