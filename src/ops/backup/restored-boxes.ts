/**
 * What a restored database says of the boxes that had a sandbox when the backup was taken. A sandbox is
 * processes, cgroups and a mounted disk, none of which a backup holds, so those boxes end `failure` with a
 * reason naming the backup, before any server opens the database: a server that found them `running` would
 * look for their sandboxes and, on the host it came from, could reach the original boxes (cgroups are named by
 * box id host-wide). Their unfinished commands end with 137, as under any box that stops. Suspended boxes stay
 * suspended: their disks are layers, which the backup holds, so they resume.
 */
import type { Store } from '../../platform/store/types.js';
import { ON_NODE } from '../../resources/devboxes/index.js';

/** The exit status of a command whose box stopped under it (as executions record it). */
const BOX_STOPPED_STATUS = 137;

export async function endRestoredBoxes(store: Store, backupTime: string): Promise<{ boxes: number; executions: number }> {
  const why = `restored from the backup of ${backupTime}: its sandbox (processes and disk) is not in a backup`;
  const now = Date.now();
  return store.transaction(async (tx) => {
    const ended = new Set<string>();
    for (const d of await tx.devboxes.listByStatus(ON_NODE)) {
      const done = await tx.devboxes.transition(d.id, {
        from: ON_NODE,
        to: 'failure',
        transitions: [{ status: 'failure', transitionTimeMs: now, failureReason: why }],
        endTimeMs: now,
        failureReason: 'health_check_failed',
      });
      if (done) ended.add(d.id);
    }
    let executions = 0;
    for (const e of await tx.executions.listUnfinished()) {
      if (!ended.has(e.devboxId)) continue;
      await tx.executions.update({ ...e, status: 'completed', exitStatus: BOX_STOPPED_STATUS, endTimeMs: now });
      executions++;
    }
    return { boxes: ended.size, executions };
  });
}
