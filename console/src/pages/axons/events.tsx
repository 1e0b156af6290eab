// An axon's events as they are published: the newest kept ones first, then the SSE stream from after them.
import type { AxonEventView } from '@runloop/api-client/resources/axons/axons';
import type { AxonEventListView } from '@runloop/api-client/resources/axons/events';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, stream } from '../../api';
import { ErrorNote, Time } from '../../ui/common';

/** Events kept on screen: a busy axon would otherwise grow the page without bound. */
const SHOWN = 200;
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => clearTimeout(t), { once: true });
  });

type Phase = 'loading' | 'live' | 'reconnecting' | 'ended';

/**
 * Starts from one page of the newest events (a stream would replay all 10 000 an axon keeps), then follows
 * `subscribe/sse` after the last of them. A stream that falls behind ends with a 408 error event and one
 * that drops ends plainly: both resume after the last event shown, so none is missed or shown twice.
 */
function useAxonEvents(id: string) {
  const [events, setEvents] = useState<AxonEventView[]>([]);
  const [phase, setPhase] = useState<Phase>('loading');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const ac = new AbortController();
    let last: number | undefined;
    setEvents([]);
    setPhase('loading');
    setError(null);
    const follow = async () => {
      const recent = await get<AxonEventListView>(`/v1/axons/${id}/events`, { limit: 50, include_total_count: false }, ac.signal);
      setEvents(recent.events);
      last = recent.events[0]?.sequence;
      while (!ac.signal.aborted) {
        let ended: { code?: number; message?: string } | null = null;
        try {
          setPhase('live');
          await stream(
            `/v1/axons/${id}/subscribe/sse`,
            (data, event) => {
              if (event === 'error') {
                ended = JSON.parse(data) as { code?: number; message?: string };
                return;
              }
              const e = JSON.parse(data) as AxonEventView;
              if (last !== undefined && e.sequence <= last) return;
              last = e.sequence;
              setEvents((prev) => [e, ...prev].slice(0, SHOWN));
            },
            ac.signal,
            { after_sequence: last },
          );
        } catch (err) {
          if (ac.signal.aborted) return;
          // A refusal (the axon deleted, the key's scope) will not change by trying again.
          if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
        }
        const why = ended as { code?: number; message?: string } | null;
        if (why && why.code !== 408) {
          setError(why.message ?? `the stream ended with code ${why.code}`);
          setPhase('ended');
          return;
        }
        if (!why) {
          setPhase('reconnecting');
          await sleep(2000, ac.signal);
        }
      }
    };
    follow().catch((err: unknown) => {
      if (ac.signal.aborted) return;
      setError(err instanceof Error ? err.message : String(err));
      setPhase('ended');
    });
    return () => ac.abort();
  }, [id]);
  return { events, phase, error };
}

const PHASE_TEXT: Record<Phase, string> = {
  loading: 'Loading the newest events…',
  live: 'Live: new events appear here as they are published.',
  reconnecting: 'The stream dropped; reconnecting…',
  ended: 'The stream ended.',
};

function Payload({ text }: { text: string }) {
  let shown = text;
  try {
    shown = JSON.stringify(JSON.parse(text), null, 2);
  } catch {}
  return <pre class="payload">{shown}</pre>;
}

export function AxonEvents({ id }: { id: string }) {
  const { events, phase, error } = useAxonEvents(id);
  return (
    <div>
      <p role="status" aria-live="polite" aria-busy={phase === 'loading' || phase === 'reconnecting'}>
        {PHASE_TEXT[phase]}
      </p>
      <ErrorNote error={error} />
      {events.length === 0 && phase !== 'loading' ? (
        <p>
          No events yet. Publish one with the form above, or from a script: <code>api.axons.publish(id, &#123; … &#125;)</code>.
        </p>
      ) : (
        <div class="table-wrap">
          <table class="striped">
            <caption>Newest first; the latest {SHOWN} are kept on this page.</caption>
            <thead>
              <tr>
                <th scope="col">Seq</th>
                <th scope="col">Time</th>
                <th scope="col">Origin</th>
                <th scope="col">Source</th>
                <th scope="col">Type</th>
                <th scope="col">Payload</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.sequence}>
                  <td>{e.sequence}</td>
                  <td>
                    <Time ms={e.timestamp_ms} />
                  </td>
                  <td>{e.origin.replace(/_/g, ' ').toLowerCase()}</td>
                  <td>{e.source}</td>
                  <td>
                    <code>{e.event_type}</code>
                  </td>
                  <td>
                    <Payload text={e.payload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
