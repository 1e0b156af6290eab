/** A durable job's states: pending (due at run_after), running (claimed by its node), then final. */
export type JobState = 'pending' | 'running' | 'succeeded' | 'failed';

/**
 * Work that must finish even across a server restart (a snapshot capture, a suspend; later builds and
 * runs): recorded before it starts, claimed by the node that runs it, resumed by that node at start.
 */
export interface Job {
  id: string;
  /** What to do, e.g. `snapshot.capture`; the runner has one handler per kind. */
  kind: string;
  /** The record the job works on (a snapshot id, a devbox id): at most one open job per kind and subject. */
  subjectId: string;
  state: JobState;
  /** Runs started so far (a restart that cut one counts it). */
  attempts: number;
  lastError: string | null;
  /** Not run before this time (retry back-off). */
  runAfterMs: number;
  /** DEVBOXD_NODE_NAME of the server that runs it (its sandboxes and layers are there). */
  node: string;
  createTimeMs: number;
  updateTimeMs: number;
}
