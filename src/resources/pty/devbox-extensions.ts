import type { StopListener } from '../devboxes/extensions.js';
import { TERMINAL, type Devbox } from '../devboxes/types.js';
import type { PtySessions } from './pty-sessions.js';
import type { PtyTunnels } from './pty-tunnels.js';

/** The box's processes are gone: its sessions end; once it ended (not on suspend) its tunnels go too. */
export function ptyStopListener(
  sessions: () => PtySessions,
  tunnels: () => PtyTunnels,
  devboxById: (id: string) => Promise<Devbox | undefined>,
): StopListener {
  return (id) => {
    sessions().onStopped(id);
    void devboxById(id)
      .then((d) => {
        if (!d || TERMINAL.has(d.status)) tunnels().dropBox(id);
      })
      .catch(() => undefined); // a tunnel of an ended box is dropped at its next request instead
  };
}
