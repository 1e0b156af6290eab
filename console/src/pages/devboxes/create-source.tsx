// What a new box starts from: the default image, a blueprint (the account's built ones and the public ones,
// the first page of each, or any id or name typed) or a disk snapshot (the first page, or an id typed).
import type { BlueprintView } from '@runloop/api-client/resources/blueprints';
import type { DevboxSnapshotView } from '@runloop/api-client/resources/devboxes/devboxes';
import { page } from '../../api';
import { ErrorNote } from '../../ui/common';
import { useLoad } from '../../ui/use-load';
import type { Source } from './create-parse';

const SHOWN = 50;

interface Choices {
  own: { id: string; name: string }[];
  shared: { id: string; name: string }[];
  more: boolean;
}

async function choices(source: Source): Promise<Choices | null> {
  if (source === 'blueprint') {
    const [own, shared] = await Promise.all([
      page<BlueprintView>('/v1/blueprints', 'blueprints', { limit: SHOWN, status: 'build_complete' }),
      page<BlueprintView>('/v1/blueprints/list_public', 'blueprints', { limit: SHOWN, status: 'build_complete' }),
    ]);
    return { own: own.items, shared: shared.items, more: own.hasMore || shared.hasMore };
  }
  if (source === 'snapshot') {
    const snaps = await page<DevboxSnapshotView>('/v1/devboxes/disk_snapshots', 'snapshots', { limit: SHOWN });
    return { own: snaps.items.map((s) => ({ id: s.id, name: s.name ?? '' })), shared: [], more: snaps.hasMore };
  }
  return null;
}

export function SourcePicker(props: { source: Source; from: string; onSource: (s: Source) => void; onFrom: (v: string) => void }) {
  const { data, error } = useLoad(() => choices(props.source), [props.source]);
  const what = props.source === 'blueprint' ? 'blueprint' : 'snapshot';
  const listed = data ? [...data.own, ...data.shared].some((c) => c.id === props.from) : false;
  const option = (c: { id: string; name: string }) => (
    <option key={c.id} value={c.id}>
      {c.name ? `${c.name} (${c.id})` : c.id}
    </option>
  );
  return (
    <fieldset>
      <legend>Start from</legend>
      {(
        [
          ['image', 'The default image'],
          ['blueprint', 'A blueprint'],
          ['snapshot', 'A disk snapshot'],
        ] as const
      ).map(([value, label]) => (
        <label key={value}>
          <input type="radio" name="source" value={value} checked={props.source === value} onChange={() => props.onSource(value)} />
          {label}
        </label>
      ))}
      {props.source !== 'image' && (
        <div class="grid">
          <label>
            {what === 'blueprint' ? 'Blueprint' : 'Snapshot'}
            <select value={listed ? props.from : ''} onChange={(e) => props.onFrom(e.currentTarget.value)} aria-busy={!data && !error}>
              <option value="">{data && data.own.length + data.shared.length === 0 ? `No ${what}s yet` : `Choose a ${what}…`}</option>
              {data && data.shared.length > 0 ? (
                <>
                  <optgroup label="Yours">{data.own.map(option)}</optgroup>
                  <optgroup label="Public">{data.shared.map(option)}</optgroup>
                </>
              ) : (
                data?.own.map(option)
              )}
            </select>
            {data?.more && <small>The first {SHOWN} are listed; type the id or name of another.</small>}
            {data && data.own.length + data.shared.length === 0 && (
              <small>
                {what === 'blueprint' ? (
                  <>
                    None is built yet: <a href="/blueprints">build a blueprint</a> (an image with your tools installed), then start boxes from it.
                  </>
                ) : (
                  <>
                    None is taken yet: <a href="/snapshots">snapshot a box's disk</a>, then start boxes from that disk.
                  </>
                )}
              </small>
            )}
          </label>
          <label>
            Or type its {what === 'blueprint' ? 'id or name' : 'id'}
            <input
              value={listed ? '' : props.from}
              placeholder={what === 'blueprint' ? 'bpt_… or a name' : 'snp_…'}
              onInput={(e) => props.onFrom(e.currentTarget.value)}
            />
          </label>
        </div>
      )}
      <ErrorNote error={error} />
    </fieldset>
  );
}
