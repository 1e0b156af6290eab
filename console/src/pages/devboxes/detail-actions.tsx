// The lifecycle buttons a box's status allows: a running box can be kept alive, suspended or shut down, a
// suspended one resumed, and any box that has not ended shut down (the only one that cannot be undone, so it
// asks first). Each reloads the view once the server answered.
import type { DevboxView } from '@runloop/api-client/resources/devboxes/devboxes';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { Action } from '../../ui/common';

export const ENDED = new Set(['shutdown', 'failure']);

export function LifecycleActions({ box, done }: { box: DevboxView; done: () => void }) {
  const path = `/v1/devboxes/${box.id}`;
  const s = box.status;
  // A keep-alive changes nothing the view shows: the page says when it was sent instead.
  const [keptAt, setKeptAt] = useState<number | null>(null);
  return (
    <>
      {keptAt !== null && s === 'running' && <small role="status">Kept alive at {new Date(keptAt).toLocaleTimeString()}</small>}
      {s === 'running' && (
        <>
          <Action label="Keep alive" variant="secondary" run={() => post(`${path}/keep_alive`)} done={() => setKeptAt(Date.now())} />
          <Action label="Suspend" variant="secondary" run={() => post(`${path}/suspend`)} done={done} />
        </>
      )}
      {s === 'suspended' && <Action label="Resume" run={() => post(`${path}/resume`)} done={done} />}
      {!ENDED.has(s) && (
        <Action
          label="Shut down"
          variant="contrast"
          confirm={`Shut down ${box.name || box.id}? Its processes stop and it cannot be started again.`}
          run={() => post(`${path}/shutdown`)}
          done={done}
        />
      )}
    </>
  );
}
