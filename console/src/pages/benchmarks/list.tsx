// Benchmarks: the public ones (the server's built-in starter among them) and the account's own, each
// startable from its row; a form creates one from scenario ids.
import type { BenchmarkView } from '@runloop/api-client/resources/benchmarks';
import { useLocation } from 'preact-iso';
import { useState } from 'preact/hooks';
import { post } from '../../api';
import { Header } from '../../ui/common';
import { FormDialog } from '../../ui/form-dialog';
import { list, text } from '../../ui/form-values';
import { type Column, PagedTable } from '../../ui/paged-table';
import { StartRunButton } from './start-run';

const COLUMNS: Column<BenchmarkView>[] = [
  { title: 'Name', cell: (b) => <a href={`/benchmarks/${b.id}`}>{b.name}</a> },
  { title: 'Description', cell: (b) => b.description || '—' },
  { title: 'Scenarios', cell: (b) => b.scenarioIds.length },
  { title: 'Run', cell: (b) => <StartRunButton benchmark={b} /> },
];

function CreateBenchmark({ open, onClose }: { open: boolean; onClose: () => void }) {
  const { route } = useLocation();
  return (
    <FormDialog
      title="Create a benchmark"
      open={open}
      onClose={onClose}
      submitLabel="Create"
      onSubmit={(f) =>
        post<BenchmarkView>('/v1/benchmarks', {
          name: text(f, 'name'),
          description: text(f, 'description') ?? null,
          scenario_ids: list(text(f, 'scenario_ids')),
        })
      }
      done={(b) => route(`/benchmarks/${(b as BenchmarkView).id}`)}
    >
      <label>
        Name (unique in your account)
        <input name="name" required />
      </label>
      <label>
        Description (optional)
        <input name="description" />
      </label>
      <label>
        Scenario ids (comma or line separated; your own or public scenarios, in the order they run)
        <textarea name="scenario_ids" rows={3} class="mono" placeholder="scn_…" />
      </label>
    </FormDialog>
  );
}

export default function BenchmarkList() {
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <Header title="Benchmarks">
        <button type="button" onClick={() => setCreating(true)}>
          Create benchmark
        </button>
      </Header>
      <CreateBenchmark open={creating} onClose={() => setCreating(false)} />
      <p>A benchmark is a set of scenarios. A run starts a devbox per scenario, your agent works in each, and each is scored; the run's score is their mean.</p>
      <h2>Public benchmarks</h2>
      <PagedTable<BenchmarkView>
        label="public benchmarks"
        path="/v1/benchmarks/list_public"
        itemsKey="benchmarks"
        columns={COLUMNS}
        empty={<p>This server has no public benchmark.</p>}
      />
      <h2>Your benchmarks</h2>
      <PagedTable<BenchmarkView>
        label="benchmarks of yours"
        path="/v1/benchmarks"
        itemsKey="benchmarks"
        columns={COLUMNS}
        empty={
          <p>
            Start with the public <strong>devboxd-starter</strong> above: <strong>Start a run</strong> on its row. To make your own, create scenarios (
            <a href="/scenarios">Scenarios</a>) and then <strong>Create benchmark</strong> with their ids.
          </p>
        }
      />
    </section>
  );
}
