import type { Dialect } from './sql/executor.js';

/**
 * Schema steps written once and spelled for SQLite or PostgreSQL when they run: a tagged template
 * (`ddl\`CREATE TABLE t (id ${KEY} PRIMARY KEY, at_ms ${BIG} NOT NULL)\``) whose tokens are the few words the
 * two dialects spell differently.
 *
 * Why a map of our own rather than a query builder's schema builder (Kysely's, say): the dialects differ only
 * in the spellings below. Everything else the migrations use (CREATE TABLE and INDEX, partial and unique
 * indexes, CHECK, foreign keys with ON DELETE, ALTER ... ADD COLUMN, UPDATE and INSERT ... SELECT backfills)
 * is SQL both accept as written, which a builder would take as raw `sql` fragments anyway. And a builder
 * re-spells what it emits (quoted identifiers, its own order of clauses), while SQLite keeps each table's
 * CREATE text as it was written: steps rendered from this map give a new database the very text a database
 * made by an older devboxd holds (test/fast/upgrade.ts compares them). Queries stay hand-written SQL (the hot
 * path, measured in bench/README), so a builder would serve only here.
 */

/** One word (or phrase) as each dialect spells it. */
export interface Spelling {
  readonly sqlite: string;
  readonly postgres: string;
}

/**
 * Text that is a key or a name that lists sort or look up by. PostgreSQL's default collation orders by locale;
 * "C" orders bytes, as SQLite's BINARY does, so cursors (which compare ids) and name orders agree on both.
 */
export const KEY: Spelling = { sqlite: 'TEXT', postgres: 'TEXT COLLATE "C"' };

/** A count that may pass 2^31: millisecond times, byte counts, sequences. SQLite's INTEGER holds 64 bits. */
export const BIG: Spelling = { sqlite: 'INTEGER', postgres: 'BIGINT' };

/** A key the database numbers, never reused: SQLite's AUTOINCREMENT, PostgreSQL's sequence. */
export const SERIAL_KEY: Spelling = { sqlite: 'INTEGER PRIMARY KEY AUTOINCREMENT', postgres: 'BIGSERIAL PRIMARY KEY' };

/** The UTF-8 byte length of a text column (SQLite's length() counts characters unless given a BLOB). */
export const octets = (column: string): Spelling => ({ sqlite: `length(CAST(${column} AS BLOB))`, postgres: `octet_length(${column})` });

type Part = Spelling | Ddl;

/** One migration step (one or more `;`-separated statements), spelled for a dialect by `render`. */
export class Ddl {
  constructor(
    private readonly texts: readonly string[],
    private readonly parts: readonly Part[],
  ) {}

  render(dialect: Dialect): string {
    let out = this.texts[0]!;
    this.parts.forEach((part, i) => {
      out += (part instanceof Ddl ? part.render(dialect) : part[dialect]) + this.texts[i + 1]!;
    });
    return out;
  }
}

/** A step written once; `${KEY}`-style tokens (and other steps, spliced whole) are spelled per dialect. */
export function ddl(texts: TemplateStringsArray, ...parts: Part[]): Ddl {
  return new Ddl([...texts], parts);
}

/**
 * A step that is different work on each dialect, where one of them cannot say what the other does (SQLite
 * drops a NOT NULL only by copying the table) or needs nothing (a collation SQLite already compares by).
 */
export function eachDialect(steps: { sqlite: Ddl; postgres: Ddl }): Ddl {
  return new Ddl(['', ''], [{ sqlite: steps.sqlite.render('sqlite'), postgres: steps.postgres.render('postgres') }]);
}
