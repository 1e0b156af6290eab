// Writes the README's configuration reference from the settings table (src/config-file/sections/):
//   node --import tsx scripts/config-docs.ts
// test/fast/config-file.test.ts fails while README.md and the table disagree.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { withReference } from '../src/config-file/index.js';

const readme = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'README.md');
const before = fs.readFileSync(readme, 'utf8');
const after = withReference(before);
if (after !== before) fs.writeFileSync(readme, after);
process.stdout.write(after === before ? 'README.md: the reference was up to date\n' : 'README.md: reference rewritten\n');
