import type { Gate } from '../../../lib/gate.js';
import type { DevboxService } from '../../devboxes/index.js';
import type { FileService } from '../file-service.js';

/** What the file routes are given: in a file of its own, so the route files and routes/index.ts import no one another in a cycle. */
export interface FileRouteOptions {
  files: FileService;
  devboxes: DevboxService;
  /** Bounds the read_file_contents / write_file_contents requests held in memory at once. */
  contentsGate: Gate;
  /** Bounds the upload_file / download_file streams running at once. */
  transferGate: Gate;
}
