import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DomainError } from '../../src/platform/errors.js';
import { connectSize, controlAction, sessionName } from '../../src/resources/pty/routes/wire.js';

const refused = (re: RegExp) => (e: unknown) => e instanceof DomainError && e.status === 400 && re.test(e.message);

describe('PTY wire', () => {
  test('session names: 1 to 256 of letters, digits, "-" and "_", percent-decoded first', () => {
    assert.equal(sessionName('a-B_9'), 'a-B_9');
    assert.equal(sessionName('x'.repeat(256)), 'x'.repeat(256));
    assert.equal(sessionName('my%2Dname'), 'my-name');
    for (const bad of ['', 'a.b', 'a*b', 'a%20b', 'x'.repeat(257), '%E0%A4%A']) assert.throws(() => sessionName(bad), refused(/session_name/), bad);
  });

  test('connect sizes: both or neither take effect; one given must be valid', () => {
    assert.deepEqual(connectSize(new URLSearchParams('cols=120&rows=40')), { cols: 120, rows: 40 });
    assert.equal(connectSize(new URLSearchParams('cols=120')), null);
    assert.equal(connectSize(new URLSearchParams('')), null);
    for (const q of ['cols=0&rows=5', 'cols=1001&rows=5', 'cols=abc', 'cols=1.5&rows=2', 'rows=-1', 'cols=&rows=3']) {
      assert.throws(() => connectSize(new URLSearchParams(q)), refused(/query\.(cols|rows)/), q);
    }
    assert.throws(() => connectSize(new URLSearchParams('colz=1')), refused(/query\.colz/));
  });

  test('control bodies: an action and what it needs, nothing else; signals by POSIX name', () => {
    assert.deepEqual(controlAction('{"action":"resize","cols":10,"rows":20}'), { action: 'resize', cols: 10, rows: 20 });
    assert.deepEqual(controlAction('{"action":"signal","signal":"SIGTERM"}'), { action: 'signal', signal: 'SIGTERM' });
    assert.deepEqual(controlAction('{"action":"signal","signal":"INT"}'), { action: 'signal', signal: 'SIGINT' });
    assert.deepEqual(controlAction('{"action":"close"}'), { action: 'close' });
    assert.throws(() => controlAction(''), refused(/action/));
    assert.throws(() => controlAction('nope'), refused(/JSON/));
    assert.throws(() => controlAction('[1]'), refused(/object/));
    assert.throws(() => controlAction('{"action":"resize","cols":"10","rows":20}'), refused(/body\.cols/));
    assert.throws(() => controlAction('{"action":"resize","cols":10}'), refused(/body\.rows/));
    assert.throws(() => controlAction('{"action":"signal","signal":"SIGNOPE"}'), refused(/body\.signal/));
    assert.throws(() => controlAction('{"action":"signal","signal":"toString"}'), refused(/body\.signal/));
    assert.throws(() => controlAction('{"action":"close","extra":1}'), refused(/body\.extra/));
  });
});
