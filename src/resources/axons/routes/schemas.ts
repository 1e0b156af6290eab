import { Type } from 'typebox';
import { Body, Int, LIMITS, Metadata, Opt, OrNull, PageQuerySchema, pageSchema, StringEnum, StringMap, Text } from '../../../platform/http/schemas/common.js';
import type { SqlResult, SqlStepOutcome } from '../sql-types.js';
import type { Axon, AxonEvent } from '../types.js';

/** Bounds of one SQL statement as sent (text and bound parameters) and of a batch. */
export const SQL_TEXT_MAX = 100_000;
export const SQL_PARAMS_MAX = 999;
export const SQL_BATCH_MAX = 100;

const Label = Type.String({ minLength: 1, maxLength: 256, pattern: '^[^\\u0000]*$' });

export const CreateAxonBody = Body({ name: Opt(Text(LIMITS.name)), metadata: Opt(Metadata) });
export const UpdateAxonBody = Body({ metadata: Opt(Metadata) });
export const AxonIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });

/** `metadata[k]` and `metadata[k][in]` keys are open-ended, so the query allows extra properties. */
export const AxonListQuery = Type.Intersect([
  PageQuerySchema,
  Type.Object({
    id: Type.Optional(Type.String({ maxLength: 200 })),
    name: Type.Optional(Text(LIMITS.name)),
    search: Type.Optional(Text(LIMITS.name)),
  }),
]);

export const PublishBody = Body({
  event_type: Label,
  origin: StringEnum(['EXTERNAL_EVENT', 'AGENT_EVENT', 'USER_EVENT'], { description: 'SYSTEM_EVENT is the server’s own' }),
  payload: Type.String({ pattern: '^[^\\u0000]*$', description: 'JSON text, at most 256 KiB' }),
  source: Label,
});

export const EventsQuery = PageQuerySchema;
export const SubscribeQuery = Type.Object({
  after_sequence: Type.Optional(Type.Integer({ minimum: 0, description: 'events with a larger sequence; absent: from the oldest kept' })),
});

const Statement = Body({
  sql: Type.String({ minLength: 1, maxLength: SQL_TEXT_MAX }),
  params: Opt(Type.Array(Type.Unknown(), { maxItems: SQL_PARAMS_MAX, description: 'null, numbers, strings, booleans (as 1/0)' })),
});
export const SqlQueryBody = Statement;
export const SqlBatchBody = Body({ statements: Type.Array(Statement, { minItems: 1, maxItems: SQL_BATCH_MAX }) });

export const AxonViewSchema = Type.Object(
  { id: Type.String(), name: OrNull(Type.String()), metadata: StringMap, created_at_ms: Int, deleted_at_ms: OrNull(Int) },
  { title: 'AxonView', description: 'an axon (beta): an event stream with a name and metadata' },
);
export const AxonListView = pageSchema('axons', AxonViewSchema);
export const PublishResultSchema = Type.Object(
  { sequence: Int, timestamp_ms: Int },
  { title: 'PublishResultView', description: 'where the published event landed in the stream' },
);
export const AxonEventViewSchema = Type.Object(
  {
    axon_id: Type.String(),
    sequence: Int,
    event_type: Type.String(),
    origin: Type.String(),
    payload: Type.String(),
    source: Type.String(),
    timestamp_ms: Int,
  },
  { title: 'AxonEventView', description: 'one event of an axon' },
);
export const EventListView = pageSchema('events', AxonEventViewSchema);

const SqlResultSchema = Type.Object(
  {
    columns: Type.Array(Type.Object({ name: Type.String(), type: Type.String() })),
    rows: Type.Array(Type.Array(Type.Unknown()), { description: 'one array of values per row, in the order of columns; BLOBs as base64' }),
    meta: Type.Object({ changes: Int, duration_ms: Type.Number(), rows_read_limit_reached: Type.Boolean() }),
  },
  { title: 'SqlQueryResultView', description: "a statement's result: columns, rows and counters" },
);
export const SqlQueryResultSchema = SqlResultSchema;
export const SqlBatchResultSchema = Type.Object(
  { results: Type.Array(Type.Object({ success: Type.Optional(SqlResultSchema), error: Type.Optional(Type.Object({ message: Type.String() })) })) },
  { title: 'SqlBatchResultView', description: "each statement's result or error, in order" },
);

export const toView = (a: Axon) => ({ id: a.id, name: a.name, metadata: a.metadata, created_at_ms: a.createdAtMs, deleted_at_ms: a.deletedAtMs });

export const toEventView = (e: AxonEvent) => ({
  axon_id: e.axonId,
  sequence: e.sequence,
  event_type: e.eventType,
  origin: e.origin,
  payload: e.payload,
  source: e.source,
  timestamp_ms: e.timestampMs,
});

export const toStep = (o: SqlStepOutcome): { success?: SqlResult; error?: { message: string } } =>
  'success' in o ? { success: o.success } : { error: { message: o.error } };
