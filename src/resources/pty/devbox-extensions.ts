import type { StopListener } from '../devboxes/extensions.js';
import type { PtySessions } from './pty-sessions.js';
import type { PtyTunnels } from './pty-tunnels.js';

/**
 * The box's processes are gone: its sessions end; once it ended (not on suspend) its tunnels go too, told
 * by the lifecycle rather than read from the record, which a failed write may leave behind.
 */
export function ptyStopListener(sessions: () => PtySessions, tunnels: () => PtyTunnels): StopListener {
  return (id, ended) => {
    sessions().onStopped(id);
    if (ended) tunnels().dropBox(id);
  };
}
