// Publishing an event by hand: what a webhook or an agent would send, to try an axon and its subscribers.
import type { AxonPublishParams, PublishResultView } from '@runloop/api-client/resources/axons/axons';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { ErrorNote } from '../../ui/common';
import { useSubmit } from '../../ui/use-submit';

const ORIGINS: AxonPublishParams['origin'][] = ['USER_EVENT', 'EXTERNAL_EVENT', 'AGENT_EVENT'];

export function PublishEvent({ id }: { id: string }) {
  const [eventType, setEventType] = useState('note');
  const [source, setSource] = useState('console');
  const [origin, setOrigin] = useState<AxonPublishParams['origin']>('USER_EVENT');
  const [payload, setPayload] = useState('{"text": "hello"}');
  const [sent, setSent] = useState<PublishResultView | null>(null);
  const submit = useSubmit();
  const publish = (e: Event) =>
    submit.run(e, async () => {
      setSent(null);
      const body: AxonPublishParams = { event_type: eventType.trim(), source: source.trim(), origin, payload };
      setSent(await post<PublishResultView>(`/v1/axons/${id}/publish`, body));
    });
  return (
    <form onSubmit={publish} aria-label="Publish an event">
      <div class="grid">
        <label>
          Event type
          <input required value={eventType} onInput={(e) => setEventType(e.currentTarget.value)} />
        </label>
        <label>
          Source
          <input required value={source} onInput={(e) => setSource(e.currentTarget.value)} />
        </label>
        <label>
          Origin
          <select value={origin} onChange={(e) => setOrigin(e.currentTarget.value as AxonPublishParams['origin'])}>
            {ORIGINS.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label>
        Payload (any text, usually JSON)
        <textarea rows={3} class="mono" value={payload} onInput={(e) => setPayload(e.currentTarget.value)} />
      </label>
      <ErrorNote error={submit.error} />
      <div class="form-row">
        <button type="submit" aria-busy={submit.busy} disabled={submit.busy}>
          Publish
        </button>
        <span role="status">{sent ? `Published as event ${sent.sequence}.` : ''}</span>
      </div>
    </form>
  );
}
