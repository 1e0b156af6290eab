/** The content types the API knows; `tar` and `tgz` objects mount unpacked (zip too, by name or magic bytes). */
export const CONTENT_TYPES = ['unspecified', 'text', 'binary', 'gzip', 'tar', 'tgz'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/**
 * UPLOADING until `complete`, then READ_ONLY for good. DELETED is what a read shows of an object past its
 * `delete_after_time_ms` that cleanup has not removed yet (and what a delete leaves for an instant); ERROR is
 * the API's and unused here.
 */
export const OBJECT_STATES = ['UPLOADING', 'READ_ONLY', 'DELETED', 'ERROR'] as const;
export type ObjectState = (typeof OBJECT_STATES)[number];

export interface StoredObject {
  id: string;
  accountId: string;
  name: string;
  contentType: ContentType;
  state: ObjectState;
  metadata: Record<string, string>;
  /** Set by `complete` (the bytes the blob holds). */
  sizeBytes: number | null;
  createTimeMs: number;
  /** The object is gone from this instant on (reads refuse it before cleanup removes it). */
  deleteAfterTimeMs: number | null;
  /** Marked by the operator (`devboxd objects publish`): listed by list_public, readable by every account. */
  isPublic: boolean;
  /** The blob of the latest PUT (null before any): `complete` freezes it with the object. */
  blobKey: string | null;
}

export interface ObjectListFilter {
  contentType?: ContentType;
  /** Part of the name, any case. */
  name?: string;
  /** The id, or part of the name. */
  search?: string;
  state?: ObjectState;
}

/** What an object mount in a devbox's `mounts` asks for. */
export interface ObjectMountInput {
  objectId: string;
  objectPath: string;
}

/** Where the blobs of an object's PUTs live: one key under it per PUT (`<prefix><put id>`). */
export const blobPrefixOf = (o: Pick<StoredObject, 'accountId' | 'id'>): string => `objects/${o.accountId}/${o.id}/`;

/** An object past its time reads as deleted even before its cleanup ran. */
export const isExpired = (o: StoredObject, nowMs = Date.now()): boolean => o.deleteAfterTimeMs !== null && o.deleteAfterTimeMs <= nowMs;
