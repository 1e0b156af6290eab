// One axon: its fields, a form to publish an event, its events live, and its SQL database.
import type { AxonView } from '@runloop/api-client/resources/axons/axons';
import { useLocation } from 'preact-iso';
import { del, get } from '../../api';
import { Action, ErrorNote, Fields, Header, Time } from '../../ui/common';
import { KeyValues } from '../../ui/key-values';
import { useLoad } from '../../ui/use-load';
import { AxonEvents } from './events';
import { PublishEvent } from './publish';
import { SqlPanel } from './sql';

export default function AxonDetail({ id }: { id: string }) {
  const { route } = useLocation();
  const { data: axon, error } = useLoad((signal) => get<AxonView>(`/v1/axons/${id}`, undefined, signal), [id]);
  if (error)
    return (
      <section>
        <Header title="Axon" />
        <ErrorNote error={error} />
        <a href="/axons">Back to axons</a>
      </section>
    );
  if (!axon) return <p aria-busy="true">Loading the axon…</p>;
  return (
    <section>
      <Header title={axon.name || axon.id}>
        <Action
          label="Delete"
          variant="secondary"
          confirm="Delete this axon? Its events and SQL database go with it."
          run={() => del(`/v1/axons/${id}`)}
          done={() => route('/axons')}
        />
      </Header>
      <p>
        <a href="/axons">All axons</a>
      </p>
      <Fields
        rows={[
          ['Id', <code>{axon.id}</code>],
          ['Name', axon.name || '—'],
          ['Created', <Time ms={axon.created_at_ms} />],
          ['Metadata', <KeyValues map={axon.metadata} />],
        ]}
      />
      <h2>Publish an event</h2>
      <PublishEvent id={id} />
      <h2>Events</h2>
      <AxonEvents id={id} />
      <h2>SQL</h2>
      <p>Each axon has a SQLite database of its own (up to 64 MiB) for the state its agents keep.</p>
      <SqlPanel id={id} />
    </section>
  );
}
