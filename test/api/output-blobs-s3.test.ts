/**
 * The execution-output blob tests (output-blobs.test.ts) once more with the server's blobs in an S3 bucket:
 * s3rver on 127.0.0.1, started by test/helpers/s3.ts for the servers of this file.
 */
process.env.DEVBOXD_TEST_BLOB_BACKEND = 's3';
await import('./output-blobs.test.js');
