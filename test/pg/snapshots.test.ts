// The SDK-driven snapshots suite again, on PostgreSQL: each server gets a fresh database on one throwaway cluster.
process.env.DEVBOXD_TEST_DATABASE = 'postgres';
await import('../api/snapshots.test.js');
