import { buildFastApp } from '../helpers/app.js';
const f = await buildFastApp();
const id = (await f.call({ method: 'POST', url: '/v1/devboxes/create_and_await_running', payload: {} })).json().id;
for (const ct of ['multipart/form-data; boundary=fuzzbound', 'multipart/form-data; boundary=other', 'multipart/form-data', 'multipart/form-data; boundary=""']) {
  for (const body of ['--fuzzbound--\r\n', '--fuzzbound\r\ncontent-disposition: form-data; name="path"\r\n\r\na\r\n--fuzzbound--\r\n', '']) {
    const r = await f.call({ method: 'POST', url: `/v1/devboxes/${id}/upload_file`, headers: {'content-type': ct}, payload: body });
    console.log(ct, JSON.stringify(body).slice(0, 30), r.statusCode, r.body);
  }
}
await f.close();
