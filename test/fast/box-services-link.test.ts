import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { SandboxError } from '../../src/runtime/driver.js';
import { answers, buildFastApp, type FastApp } from '../helpers/app.js';

/**
 * The box-services socket is made before the sandbox, which the runtime links as it creates it: a box that
 * runs is linked to its socket, and one whose sandbox could not be made, or that ended, keeps none.
 */
let f: FastApp;
const { ok } = answers(() => f);

before(async () => {
  f = await buildFastApp();
});
after(async () => f?.close());

test('a running box is linked to its socket from its create on; shut down, both go', async () => {
  const { id } = await ok<{ id: string }>({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: {} });
  const socket = f.deps.boxServices.socketPath(id);
  assert.equal(f.runtime.links.get(id), socket, 'the runtime got the link with the sandbox');
  assert.ok(fs.existsSync(socket));
  await ok({ method: 'POST', url: `/v1/devboxes/${id}/shutdown`, payload: {} });
  assert.ok(!f.deps.boxServices.linked().includes(id));
  assert.ok(!fs.existsSync(socket));
});

test('a box whose sandbox cannot be created ends in failure and leaves no socket behind', async () => {
  const create = f.runtime.create;
  f.runtime.create = async () => {
    throw new SandboxError('failed', 'no room on this host');
  };
  try {
    const { id } = await ok<{ id: string }>({ method: 'POST', url: '/v1/devboxes', payload: {} });
    let status = '';
    for (let i = 0; i < 200 && status !== 'failure'; i++) {
      status = (await ok<{ status: string }>({ method: 'GET', url: `/v1/devboxes/${id}` })).status;
      if (status !== 'failure') await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(status, 'failure');
    assert.ok(!f.deps.boxServices.linked().includes(id), 'the socket made for it is closed');
    assert.ok(!fs.existsSync(f.deps.boxServices.socketPath(id)));
  } finally {
    f.runtime.create = create;
  }
});
