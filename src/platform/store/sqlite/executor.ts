import type Database from 'better-sqlite3';
import { DomainError } from '../../errors.js';
import { constraintError, unavailableError, type ConstraintKind } from '../sql/errors.js';
import type { QueryResult, SqlExecutor } from '../sql/executor.js';

type Statement = Database.Statement;

/** SQLite's extended result codes for constraints, mapped to driver-neutral kinds. */
const CONSTRAINTS: Record<string, ConstraintKind> = {
  SQLITE_CONSTRAINT_UNIQUE: 'unique',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'unique',
  SQLITE_CONSTRAINT_FOREIGNKEY: 'foreign_key',
  SQLITE_CONSTRAINT_CHECK: 'check',
  SQLITE_CONSTRAINT_NOTNULL: 'not_null',
};

/** The one switch from better-sqlite3 errors to domain errors. */
export function translateSqliteError(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  const code = (err as { code?: string }).code;
  if (typeof code !== 'string') return err;
  const kind = CONSTRAINTS[code];
  if (kind) return constraintError(kind, (err as Error).message);
  // better-sqlite3 reports extended codes (SQLITE_IOERR_FSYNC, SQLITE_BUSY_TIMEOUT...): match their families.
  if (/^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CORRUPT|CANTOPEN)/.test(code)) {
    return unavailableError((err as Error).message);
  }
  return err;
}

/**
 * better-sqlite3 underneath an async port. Statements run synchronously (prepared once, cached by text),
 * so outside a transaction the async wrapper costs a microtask, not a thread hop.
 *
 * Transactions: better-sqlite3 has one connection, so while a `BEGIN IMMEDIATE` is open across awaits, a
 * statement of an unrelated request would silently join it (and roll back with it). An in-process async
 * mutex prevents that: while a transaction is open, statements from outside it wait for it to end (`gate`),
 * and transactions run one after the other. The transaction's own executor skips the gate.
 */
/** The transaction queue of one database file, shared by every connection this process opens to it. */
interface TxLock {
  /** Set while a transaction is open: resolves when it ends. */
  gate: Promise<void> | null;
  /** The tail of the queue of transactions. */
  tail: Promise<void>;
}

// Per file, not per connection: a second connection in the same process (the CLI's, a test's) would
// otherwise block the thread in SQLite's busy wait while the first one's transaction awaits.
const locks = new Map<string, TxLock>();

export class SqliteExecutor implements SqlExecutor {
  readonly dialect = 'sqlite' as const;
  private readonly statements = new Map<string, Statement>();
  private readonly lock: TxLock;

  constructor(
    readonly db: Database.Database,
    private readonly inTransaction = false,
    private readonly parent?: SqliteExecutor,
  ) {
    let lock = parent?.lock ?? locks.get(db.name);
    if (!lock) {
      lock = { gate: null, tail: Promise.resolve() };
      locks.set(db.name, lock);
    }
    this.lock = lock;
  }

  async query<R>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<R>> {
    if (!this.inTransaction) while (this.lock.gate) await this.lock.gate;
    return this.run<R>(sql, params);
  }

  /** Synchronous core, for the transaction body and the gated path alike. */
  private run<R>(sql: string, params: readonly unknown[]): QueryResult<R> {
    const owner = this.parent ?? this;
    let stmt = owner.statements.get(sql);
    try {
      if (!stmt) {
        stmt = this.db.prepare(sql);
        owner.statements.set(sql, stmt);
      }
      if (stmt.reader) {
        const rows = stmt.all(...params) as R[];
        return { rows, rowCount: rows.length };
      }
      return { rows: [], rowCount: stmt.run(...params).changes };
    } catch (err) {
      throw translateSqliteError(err);
    }
  }

  async script(sql: string): Promise<void> {
    if (!this.inTransaction) while (this.lock.gate) await this.lock.gate;
    try {
      this.db.exec(sql);
    } catch (err) {
      throw translateSqliteError(err);
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this); // nested: part of the open one
    const lock = this.lock;
    const previous = lock.tail;
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    lock.tail = previous.then(() => mine);
    await previous;
    lock.gate = mine;
    const tx = new SqliteExecutor(this.db, true, this);
    try {
      tx.run('BEGIN IMMEDIATE', []);
      let result: T;
      try {
        result = await fn(tx);
      } catch (err) {
        // Some errors (SQLITE_FULL, an I/O error) end the transaction themselves: a second ROLLBACK would
        // throw "no transaction is active" in place of the error that says what went wrong.
        if (this.db.inTransaction) tx.run('ROLLBACK', []);
        throw err;
      }
      tx.run('COMMIT', []);
      return result;
    } finally {
      // A failed COMMIT leaves the transaction open: end it before anyone else runs a statement.
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      lock.gate = null;
      release();
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
