import type { OperationDocs } from '../../../platform/http/openapi/operations.js';

/** File transfers in the API reference (/docs). */
export const fileOperations: OperationDocs = {
  tag: 'Files',
  operations: {
    'POST /v1/devboxes/{id}/upload_file': {
      sdk: ['devboxes.uploadFile'],
      summary: 'Upload a file to a devbox',
      description:
        'multipart/form-data with `path` (relative to the home directory) and `file`. The bytes stream into the box as they arrive, of any ' +
        'size the box disk takes, and the file belongs to the devbox user. A client that goes quiet for a minute gets a 408 and changes nothing.',
    },
    'POST /v1/devboxes/{id}/download_file': {
      sdk: ['devboxes.downloadFile'],
      summary: 'Download a file from a devbox',
      description:
        "The file's bytes at `path`, any type and size, streamed with back-pressure. A missing file is a 404, a directory a 400. Needs " +
        'devbox write on a restricted key: the box files are its contents.',
    },
    'POST /v1/devboxes/{id}/read_file_contents': {
      sdk: ['devboxes.readFileContents'],
      summary: 'Read a text file from a devbox',
      description:
        'The file at `file_path` as a UTF-8 string (invalid bytes become replacement characters), up to 64 MiB: a larger file is a 400, and ' +
        '`download_file` takes it.',
    },
    'POST /v1/devboxes/{id}/write_file_contents': {
      sdk: ['devboxes.writeFileContents'],
      summary: 'Write a text file in a devbox',
      description:
        'Writes `contents` to the file at `file_path` as the devbox user, creating directories on the way and replacing what was there. ' +
        'For large files use `upload_file`.',
    },
  },
};
