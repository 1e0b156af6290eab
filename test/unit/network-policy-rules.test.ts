import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hostMatcher } from '../../src/platform/net/index.js';
import { checkCidrs, checkHostnames } from '../../src/resources/network-policies/rules.js';
import { planCidrs } from '../../src/runtime/linux/egress-cidrs.js';

describe('host name patterns', () => {
  test('exact names and a leading wildcard (subdomains only, any depth)', () => {
    const m = hostMatcher(checkHostnames(['GitHub.com', '*.npmjs.org', 'API.openai.com'], 'allowed_hostnames'));
    for (const yes of ['github.com', 'GITHUB.COM.', 'registry.npmjs.org', 'a.b.npmjs.org', 'api.openai.com']) assert.ok(m(yes), yes);
    for (const no of ['npmjs.org', 'evilnpmjs.org', 'github.com.evil.net', 'xgithub.com', 'openai.com', 'www.openai.com', 'api-openai.com', ''])
      assert.ok(!m(no), no);
  });

  test('* is only the whole first label: other patterns are refused naming the entry', () => {
    for (const p of ['api.*.com', '*.*.example.com', 'a*.example.com', '*example.com', 'example.*', '*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.z']) {
      assert.throws(() => checkHostnames(['ok.com', p], 'allowed_hostnames'), /allowed_hostnames\[1\]/, p);
    }
    assert.throws(() => checkHostnames([`${'a'.repeat(64)}.com`], 'f'), /f\[0\]/, 'a label over 63');
    assert.throws(() => checkHostnames([`${'a.'.repeat(127)}com`], 'f'), /f\[0\]/, 'a name over 253');
  });

  test("the reviewer's pathological pattern and question answer at once; names over 255 bytes never match", () => {
    // Before: each * was a nested regex quantifier, and this question backtracked for minutes.
    const pathological = '*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.z';
    const m = hostMatcher([pathological, '*.z', 'a.a.b', ...Array.from({ length: 999 }, (_, i) => `*.host${i}.example.com`)]);
    const worst = `${'a.'.repeat(59)}b`;
    const t0 = performance.now();
    for (let i = 0; i < 1000; i++) assert.equal(m(worst), false);
    assert.ok(m(`${'a.'.repeat(59)}z`));
    const ms = performance.now() - t0;
    // Backtracking took minutes; a linear matcher takes milliseconds. The bound only has to tell those apart,
    // on a host as loaded as a parallel test run makes it.
    assert.ok(ms < 2000, `1000 questions took ${ms.toFixed(1)} ms`);
    assert.equal(m(`${'a'.repeat(63)}.`.repeat(4) + 'z'), false, 'a 257-byte name');
  });

  test('dots and dashes are literal, not pattern characters', () => {
    const m = hostMatcher(['a-b.example.com']);
    assert.ok(m('a-b.example.com'));
    assert.ok(!m('aXb.example.com'));
    assert.ok(!hostMatcher(['a.example.com'])('aXexample.com'));
  });

  test('an empty list matches nothing; bad patterns are refused with their index', () => {
    assert.ok(!hostMatcher([])('github.com'));
    assert.throws(() => checkHostnames(['ok.com', 'bad name'], 'f'), /f\[1\]/);
    assert.throws(() => checkHostnames(['*.*'], 'f'), /f\[0\]/);
    assert.throws(() => checkHostnames(['a..b'], 'f'), /f\[0\]/);
  });

  test('CIDRs must be canonical IPv4 with valid port ranges', () => {
    assert.deepEqual(checkCidrs([{ cidr: '0.0.0.0/0', ports: [] }], 'c'), [{ cidr: '0.0.0.0/0', ports: [] }]);
    assert.throws(() => checkCidrs([{ cidr: '10.0.0.1/8', ports: [] }], 'c'), /host bits/);
    assert.throws(() => checkCidrs([{ cidr: '10.0.0.0/33', ports: [] }], 'c'), /c\[0\]\.cidr/);
    assert.throws(() => checkCidrs([{ cidr: '10.0.0.0/8', ports: [{ port: 80, endPort: 70, protocol: null }] }], 'c'), /end_port/);
  });
});

describe('CIDR rules as set elements', () => {
  test('nested CIDRs without ports keep the outermost; port rules expand to their protocols', () => {
    assert.deepEqual(
      planCidrs([
        { cidr: '10.1.0.0/16', ports: [] },
        { cidr: '10.0.0.0/8', ports: [] },
        { cidr: '10.0.0.0/8', ports: [] },
        { cidr: '192.168.1.0/24', ports: [] },
        { cidr: '198.18.0.0/24', ports: [{ port: 80 }, { port: 8000, endPort: 8100, protocol: 'UDP' }] },
      ]),
      { any: ['10.0.0.0/8', '192.168.1.0/24'], ports: ['198.18.0.0/24 tcp 80', '198.18.0.0/24 udp 80', '198.18.0.0/24 udp 8000-8100'], overlap: false },
    );
  });

  test('port rules that overlap in address, protocol and port are reported; apart in any of them are not', () => {
    const rule = (cidr: string, port: number, endPort?: number, protocol?: 'TCP' | 'UDP') => ({ cidr, ports: [{ port, endPort, protocol }] });
    assert.equal(planCidrs([rule('10.1.0.0/16', 8000, 8100), rule('10.0.0.0/8', 8050, undefined, 'TCP')]).overlap, true);
    assert.equal(planCidrs([rule('10.1.0.0/16', 8000, 8100, 'UDP'), rule('10.0.0.0/8', 8050, undefined, 'TCP')]).overlap, false);
    assert.equal(planCidrs([rule('10.1.0.0/16', 8000, 8100), rule('10.2.0.0/16', 8050)]).overlap, false);
    assert.equal(planCidrs([rule('10.1.0.0/16', 80), rule('10.1.0.0/16', 81)]).overlap, false);
  });
});
