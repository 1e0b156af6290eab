import { DomainError, ERRORS } from '../../platform/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { Store } from '../../platform/store/types.js';
import type { DevboxService } from '../devboxes/index.js';
import type { CreateResolver } from '../devboxes/index.js';
import type { Devbox } from '../devboxes/index.js';
import type { SqlAxonStore } from './sql-axon-store.js';
import { SqlBrokerStore } from './sql-broker-store.js';
import { BROKER_PROTOCOLS, type Axon, type AxonEvent, type BrokerMount, type BrokerProtocolName } from './types.js';

const FIELDS = ['type', 'axon_id', 'protocol', 'agent_binary', 'launch_args', 'working_directory'];
/** How long a resume waits for a box caught suspending to finish suspending. */
const SUSPENDING_WAIT_MS = 60_000;

const str = (m: Record<string, unknown>, field: string, where: string, max: number, optional = false): string | null => {
  const v = m[field];
  if ((v === undefined || v === null) && optional) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > max || v.includes('\u0000'))
    throw ERRORS.invalid(`${where}.${field} must be a string of 1 to ${max} characters without NUL`);
  return v;
};

/** A `broker_mount` as sent (index in `mounts`) → its fields checked, every message naming the field. */
export function parseBrokerMount(m: Record<string, unknown>, where: string): Omit<BrokerMount, 'devboxId' | 'position' | 'deliveredSequence'> {
  const extra = Object.keys(m).find((k) => !FIELDS.includes(k));
  if (extra) throw ERRORS.invalid(`${where}.${extra} is not a parameter of a broker_mount`);
  const protocol = m.protocol ?? 'claude_json';
  if (!(BROKER_PROTOCOLS as readonly unknown[]).includes(protocol)) {
    throw ERRORS.invalid(`${where}.protocol ${JSON.stringify(protocol)} is not a broker protocol (one of: ${BROKER_PROTOCOLS.join(', ')})`);
  }
  const args = m.launch_args ?? [];
  if (!Array.isArray(args) || args.length > 100 || args.some((a) => typeof a !== 'string' || a.length > 4096 || a.includes('\u0000'))) {
    throw ERRORS.invalid(`${where}.launch_args must be at most 100 strings of at most 4096 characters without NUL`);
  }
  return {
    axonId: str(m, 'axon_id', where, 200)!,
    protocol: protocol as BrokerProtocolName,
    agentBinary: str(m, 'agent_binary', where, 4096)!,
    launchArgs: args as string[],
    workingDirectory: str(m, 'working_directory', where, 4096, true),
  };
}

const axonTrigger = (d: { launchParameters: unknown }) =>
  (d.launchParameters as { lifecycle?: { resume_triggers?: { axon_event?: boolean | null } | null } | null } | null)?.lifecycle?.resume_triggers?.axon_event ===
  true;

/**
 * The devbox side of broker mounts: the create resolver (the axons exist in the account; recorded with the
 * box, delivering what is published from then on) and the resume trigger (an event on an axon mounted into a
 * suspended box whose `resume_triggers.axon_event` is true resumes it).
 */
export class BrokerMounts {
  readonly store: SqlBrokerStore;
  private readonly waking = new Set<string>();

  constructor(
    db: Store,
    private readonly axons: SqlAxonStore,
    private readonly devboxes: () => DevboxService,
    private readonly resume: (accountId: string, id: string) => Promise<unknown>,
    private readonly log: Logger,
  ) {
    this.store = new SqlBrokerStore(db.db);
  }

  readonly resolver: CreateResolver = async (accountId, input) => {
    const raw = input.brokerMounts ?? [];
    if (raw.length === 0) {
      if (axonTrigger({ launchParameters: input.launchParameters })) {
        throw ERRORS.invalid('launch_parameters.lifecycle.resume_triggers.axon_event needs a broker_mount in mounts (the axon whose events resume the box)');
      }
      return undefined;
    }
    const mounts: BrokerMount[] = [];
    for (const { index, mount } of raw) {
      const where = `body.mounts[${index}]`;
      const m = parseBrokerMount(mount, where);
      const axon = await this.axons.get(accountId, m.axonId);
      if (!axon || axon.deletedAtMs !== null) throw ERRORS.invalid(`${where}.axon_id: no axon ${m.axonId}`);
      mounts.push({ ...m, devboxId: '', position: index, deliveredSequence: axon.lastSequence });
    }
    return {
      persist: async (tx, devbox) => {
        const store = new SqlBrokerStore(tx.db);
        for (const m of mounts) await store.insert({ ...m, devboxId: devbox.id });
      },
    };
  };

  /** The publish listener: resumes the suspended boxes the axon is mounted into that asked for it. */
  readonly onPublished = (axon: Pick<Axon, 'id' | 'accountId'>, _e: AxonEvent): void => {
    void this.wake(axon).catch((err) => this.log.error({ err, axon: axon.id }, 'axon resume trigger failed'));
  };

  private async wake(axon: Pick<Axon, 'id' | 'accountId'>): Promise<void> {
    for (const id of await this.store.devboxesOf(axon.id)) {
      if (this.waking.has(id)) continue;
      const d = await this.devboxes()
        .get(axon.accountId, id)
        .catch(() => undefined);
      if (!d || !axonTrigger(d) || (d.status !== 'suspended' && d.status !== 'suspending')) continue;
      this.waking.add(id);
      void this.resumeBox(d).finally(() => this.waking.delete(id));
    }
  }

  private async resumeBox(d: Devbox): Promise<void> {
    if (d.status === 'suspending') {
      const now = await this.devboxes().waitForStatus(d.accountId, d.id, ['suspended', 'running', 'failure', 'shutdown'], SUSPENDING_WAIT_MS);
      if (now?.status !== 'suspended') return;
    }
    this.log.info({ devbox: d.id }, 'resuming on an axon event');
    await this.resume(d.accountId, d.id).catch((err) => {
      // A racing trigger (or a user) resumed it first.
      if (!(err instanceof DomainError && err.code === 'devbox_not_suspended')) this.log.error({ err, devbox: d.id }, 'axon resume failed');
    });
  }
}
