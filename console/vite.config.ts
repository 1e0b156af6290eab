// The web console's build: `node scripts/build-console.mjs` (npm start and the tests run it) writes
// console/dist/, which the API server serves at `/`. Nothing it makes is committed.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  // Asset URLs are absolute: the server answers every page path (/devboxes/dbx_…) with the same index.html.
  base: '/',
  // Preact's JSX runtime, set here rather than through a plugin: Oxc compiles JSX itself.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // The console is one bundle plus the terminal's, loaded when a terminal opens; a report of each file's
    // size is what bench/README.md records.
    chunkSizeWarningLimit: 600,
    reportCompressedSize: true,
    sourcemap: false,
  },
  logLevel: 'warn',
});
