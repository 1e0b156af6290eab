// The SDK-driven devboxes suite again, on PostgreSQL: each server gets a fresh database on one throwaway cluster.
process.env.DEVBOXD_TEST_DATABASE = 'postgres';
await import('../api/devboxes.test.js');
