import { Type } from 'typebox';
import { Body, Int, Metadata, Opt, OrNull, pageSchema, PageQuerySchema, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';
import { MAX_DOWNLOAD_URL_SECONDS } from '../object-service.js';
import { CONTENT_TYPES, OBJECT_STATES, type StoredObject } from '../types.js';

/** Ten years: the longest ttl_ms accepted. */
const MAX_MS = 315_360_000_000;

export const CreateObjectBody = Body({
  name: Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' }),
  content_type: StringEnum([...CONTENT_TYPES]),
  metadata: Opt(Metadata),
  ttl_ms: Opt(Type.Integer({ minimum: 1, maximum: MAX_MS, description: 'the object is deleted this many ms after its creation' })),
});

const filters = {
  content_type: Type.Optional(StringEnum([...CONTENT_TYPES])),
  name: Type.Optional(Text(256)),
  search: Type.Optional(Text(256)),
  state: Type.Optional(StringEnum([...OBJECT_STATES])),
};
export const ObjectListQuery = Type.Object({ ...PageQuerySchema.properties, ...filters }, { additionalProperties: false });

export const DownloadQuery = Type.Object(
  {
    duration_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_DOWNLOAD_URL_SECONDS, default: 3600, description: 'validity of the URL (at most 7 days)' }),
    ),
  },
  { additionalProperties: false },
);

export const ObjectViewSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    content_type: StringEnum([...CONTENT_TYPES]),
    create_time_ms: Int,
    state: StringEnum([...OBJECT_STATES]),
    delete_after_time_ms: OrNull(Int),
    metadata: StringMap,
    size_bytes: OrNull(Int),
    upload_url: OrNull(Type.String({ description: 'while UPLOADING: PUT the bytes here (no API key; expires in an hour)' })),
  },
  { title: 'ObjectView', description: 'a storage object' },
);
export const ObjectListView = pageSchema('objects', ObjectViewSchema);
export const DownloadUrlView = Type.Object(
  { download_url: Type.String() },
  { title: 'ObjectDownloadURLView', description: "a presigned URL to the object's bytes" },
);

export const toView = (o: StoredObject, uploadUrl: string | null = null) => ({
  id: o.id,
  name: o.name,
  content_type: o.contentType,
  create_time_ms: o.createTimeMs,
  state: o.state,
  delete_after_time_ms: o.deleteAfterTimeMs,
  metadata: o.metadata,
  // Set once a PUT finished (it counts against the account), shown once the object is complete.
  size_bytes: o.state === 'UPLOADING' ? null : o.sizeBytes,
  upload_url: uploadUrl,
});
