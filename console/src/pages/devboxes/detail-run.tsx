// Run a command in the box (execute_async) and follow it on its own page, where its output arrives live.
import type { DevboxAsyncExecutionDetailView } from '@runloop/api-client/resources/devboxes/devboxes';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { post } from '../../api';
import { ErrorNote } from '../../ui/common';

export function RunCommand({ id, running }: { id: string; running: boolean }) {
  const { route } = useLocation();
  const [command, setCommand] = useState('');
  const [shell, setShell] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const ex = await post<DevboxAsyncExecutionDetailView>(`/v1/devboxes/${id}/execute_async`, {
        command,
        shell_name: shell.trim() || undefined,
      });
      route(`/devboxes/${id}/executions/${ex.execution_id}`);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} aria-label="Run a command">
      {!running && <p>Commands run while the box is running: resume it first, or wait until it has started.</p>}
      <div class="grid run-command">
        <label>
          Command <small>(run by bash as the box's user, in its home directory)</small>
          <input class="mono" required value={command} placeholder="echo hi" onInput={(e) => setCommand(e.currentTarget.value)} />
        </label>
        <label>
          Shell name <small>(optional: commands on one shell share its directory and variables)</small>
          <input value={shell} placeholder="main" onInput={(e) => setShell(e.currentTarget.value)} />
        </label>
      </div>
      <ErrorNote error={error} />
      <button type="submit" aria-busy={busy} disabled={busy || !running}>
        Run
      </button>
    </form>
  );
}
