// The x-request-id suite again, on PostgreSQL: claims, waits and replays through pooled connections.
process.env.DEVBOXD_TEST_DATABASE = 'postgres';
await import('../api/idempotency.test.js');
