import type { Logger } from '../../lib/logger.js';
import type { StopListener } from '../devboxes/index.js';
import type { PtySessions } from './pty-sessions.js';
import type { PtyTunnels } from './pty-tunnels.js';

/**
 * The box's processes are gone: its sessions end; once it ended (not on suspend) its tunnels go too, told
 * by the lifecycle rather than read from the record, which a failed write may leave behind.
 */
export function ptyStopListener(sessions: () => PtySessions, tunnels: () => PtyTunnels, log: Logger): StopListener {
  return (id, ended) => {
    sessions().onStopped(id);
    // A delete that fails leaves rows a request finds refused anyway: the box has ended (PtyFront.open).
    if (ended)
      tunnels()
        .dropBox(id)
        .catch((err) => log.warn({ err, devbox: id }, 'PTY tunnels of an ended box not deleted'));
  };
}
