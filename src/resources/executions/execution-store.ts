import type { Execution, LogEntry, LogEntryInput, LogFilter } from './types.js';

export interface ExecutionStore {
  insert(e: Execution): Promise<void>;
  /** Writes the mutable fields (status, exit status, end time, byte counts) unless the row is completed already. */
  update(e: Execution): Promise<void>;
  /**
   * Inserts or updates the record and appends the log entries, in one transaction: a command's start and its
   * exit each cost one commit (one disk sync on SQLite), where record and entry apart cost two.
   */
  save(e: Execution, insert: boolean, entries: LogEntryInput[]): Promise<void>;
  get(devboxId: string, id: string): Promise<Execution | undefined>;
  findByCommandId(devboxId: string, commandId: string): Promise<Execution | undefined>;
  /** Executions left queued or running (by a previous server process, at start) on boxes of `node`. */
  listUnfinished(node?: string): Promise<Execution[]>;
}

export interface LogStore {
  /** Appends in one transaction; returns the entries with their sequence numbers. */
  append(entries: LogEntryInput[]): Promise<LogEntry[]>;
  /** Oldest first. */
  list(devboxId: string, filter: LogFilter): Promise<LogEntry[]>;
}

declare module '../../platform/store/types.js' {
  interface StoreParts {
    readonly executions: ExecutionStore;
    readonly logs: LogStore;
  }
}
