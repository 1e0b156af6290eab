import type { Page, PageQuery } from '../../platform/store/types.js';
import type { Agent } from '../agents/index.js';
import type { Benchmark, JobRuns } from '../benchmarks/index.js';
import type { RunListFilter, Scenario, ScenarioRun, StartRunInput } from '../scenarios/index.js';

/**
 * What benchmark jobs use of other modules, wired by the module (wire.ts): jobs hold ids and drive scenario
 * runs, agents' boxes and executions through these, never their tables.
 */
export interface BenchmarkJobPorts {
  benchmarks: {
    /** Own or public; 404 otherwise. */
    get(accountId: string, id: string): Promise<Benchmark>;
    /** The account's benchmark of that name, else a public one of that name. */
    byName(accountId: string, name: string): Promise<Benchmark | undefined>;
  };
  jobRuns: JobRuns;
  scenarios: {
    /** Own or public; 404 otherwise. */
    get(accountId: string, id: string): Promise<Scenario>;
    /** The account's active scenario of that name, else a public one of that name. */
    byName(accountId: string, name: string): Promise<Scenario | undefined>;
  };
  scenarioRuns: {
    start(accountId: string, input: StartRunInput): Promise<ScenarioRun>;
    get(accountId: string, id: string): Promise<ScenarioRun>;
    list(accountId: string, filter: RunListFilter, page: PageQuery): Promise<Page<ScenarioRun>>;
    checkRequirements(accountId: string, scenario: Scenario, input: Pick<StartRunInput, 'envVars' | 'secrets'>): Promise<void>;
    /** Scores the run if needed, ends it completed (its box shut down); `signal` stops the wait, not the scoring. */
    complete(accountId: string, id: string, signal?: AbortSignal): Promise<ScenarioRun>;
    cancel(accountId: string, id: string): Promise<ScenarioRun>;
  };
  agents: {
    /** Own or public; 404 otherwise. */
    get(accountId: string, id: string): Promise<Agent>;
    /** The account's newest agent of that name, else a public one. */
    byName(accountId: string, name: string): Promise<Agent | undefined>;
    /** 400 (naming `field`) when a box of the account could not mount the agent at `agentPath`. */
    checkMount(accountId: string, agentId: string, agentPath: string | null, field: string): Promise<void>;
  };
  devboxes: {
    /** The box once in one of `statuses` (null past `timeoutMs`), with why it ended when it did. */
    waitForStatus(
      accountId: string,
      id: string,
      statuses: string[],
      timeoutMs: number,
      signal: AbortSignal,
    ): Promise<{ status: string; reason: string | null } | null>;
  };
  files: {
    /** Writes `contents` to `path` (relative to the box user's home) in the box. */
    write(accountId: string, devboxId: string, path: string, contents: string): Promise<void>;
  };
  executions: {
    /** Starts `command` in the box; a second start with one `commandId` answers the first execution. */
    start(accountId: string, devboxId: string, command: string, commandId: string): Promise<AgentExecution>;
    /** The execution once completed, or null past `timeoutMs` (or once `signal` aborts). */
    awaitCompleted(accountId: string, devboxId: string, id: string, timeoutMs: number, signal: AbortSignal): Promise<AgentExecution | null>;
    /** SIGKILL to its process group; resolves once it completed. */
    kill(accountId: string, devboxId: string, id: string): Promise<AgentExecution>;
    /** The last lines it printed (stderr, else stdout), for a failure's message. */
    tail(accountId: string, devboxId: string, id: string): Promise<string>;
  };
}

/** An agent's execution as trials see it. */
export interface AgentExecution {
  id: string;
  status: string;
  /** null until completed, and for one a server restart cut off. */
  exitStatus: number | null;
}
