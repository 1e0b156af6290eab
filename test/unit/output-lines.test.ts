import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { byLine } from '../../src/resources/executions/routes/stream.js';

describe('output events by line', () => {
  test('a chunk of several lines becomes one event per line, each with the byte offset after it', () => {
    // "é" is two bytes: offsets count bytes, not characters.
    assert.deepEqual(byLine({ output: 'a\né\nlast', offset: 110 }), [
      { output: 'a\n', offset: 103 },
      { output: 'é\n', offset: 106 },
      { output: 'last', offset: 110 },
    ]);
  });

  test('one line, a piece without a newline, and empty lines are kept as they come', () => {
    assert.deepEqual(byLine({ output: 'one\n', offset: 4 }), [{ output: 'one\n', offset: 4 }]);
    assert.deepEqual(byLine({ output: 'partial', offset: 7 }), [{ output: 'partial', offset: 7 }]);
    assert.deepEqual(byLine({ output: '\n\nx\n', offset: 4 }), [
      { output: '\n', offset: 1 },
      { output: '\n', offset: 2 },
      { output: 'x\n', offset: 4 },
    ]);
  });
});
