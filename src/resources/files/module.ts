import type { Module } from '../../host.js';
import { Gate } from '../../lib/gate.js';
import { devboxesModule } from '../devboxes/index.js';
import { type FileConfig, loadFileConfig } from './config.js';
import { FileService } from './file-service.js';
import { fileRoutes } from './routes/index.js';

declare module '../../platform/module/contract.js' {
  interface Services {
    files: FileService;
    /** Bounds the read_file_contents / write_file_contents requests held in memory at once. */
    fileContentsGate: Gate;
    /** Bounds the upload_file / download_file streams running at once (each holds stream buffers). */
    fileTransferGate: Gate;
  }
}

/** Files in a box: contents, uploads and downloads, each kind bounded by a fair gate. */
export const filesModule: Module<FileConfig> = {
  name: 'files',
  needs: [devboxesModule],
  config: loadFileConfig,
  build: ({ host, config, use }) => ({
    files: new FileService(use('devboxes'), host.logger.child({ component: 'files' }), { stallMs: config.uploadStallMs }),
    fileContentsGate: Gate.fair(config.fileContentsConcurrency, config.fileContentsQueue),
    fileTransferGate: Gate.fair(config.fileTransferConcurrency, config.fileTransferQueue),
  }),
  routes: (app, s) => app.register(fileRoutes, { files: s.files, devboxes: s.devboxes, contentsGate: s.fileContentsGate, transferGate: s.fileTransferGate }),
};
