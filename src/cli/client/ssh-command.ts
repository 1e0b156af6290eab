import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from '../parse.js';
import { CLIENT_OPTIONS, clientOf, type Options } from './connect.js';

/**
 * `devboxd devbox ssh ID [-- COMMAND...]`: the stock `ssh` into a box, as the README's SSH section sets it up by
 * hand. A key is issued for the box (create_ssh_key), written to a directory of this process's own (mode 0700,
 * the key 0600) and removed when ssh exits; the TLS side of the API port is reached through `openssl
 * s_client`, its server name picking the box. Exits with ssh's status.
 */
export function sshCommand(): Command {
  return {
    words: ['devbox', 'ssh'],
    args: ['ID', '[COMMAND...]'],
    options: CLIENT_OPTIONS,
    summary: `open a shell in a devbox with ssh (and openssl) from this machine, or run COMMAND (after --) there;
a key is issued for the box and kept only while ssh runs`,
    run: async ({ ID, COMMAND }, o: Options) => {
      const api = await clientOf(o, 'usage: devboxd devbox ssh ID [-- COMMAND...]');
      const key = await api.devboxes.createSSHKey(ID!);
      const base = new URL((o['base-url'] as string | undefined) ?? process.env.RUNLOOP_BASE_URL ?? `http://127.0.0.1:${process.env.DEVBOXD_PORT || 4000}`);
      const port = base.port || (base.protocol === 'https:' ? '443' : '80');
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'devboxd-ssh-'));
      try {
        const file = path.join(dir, 'key');
        fs.writeFileSync(file, key.ssh_private_key, { mode: 0o600 });
        const args = [
          '-i',
          file,
          '-o',
          'IdentitiesOnly=yes',
          '-o',
          `ProxyCommand=openssl s_client -quiet -servername %h -connect ${base.hostname}:${port}`,
          // The box's host key is devboxd's, the same for every box of a server: remembered here for this session.
          '-o',
          `UserKnownHostsFile=${path.join(dir, 'known_hosts')}`,
          '-o',
          'StrictHostKeyChecking=accept-new',
          '-o',
          'LogLevel=ERROR',
          ...(COMMAND ? [] : ['-t']),
          `${key.ssh_user}@${key.url}`,
          ...(COMMAND ? [COMMAND] : []),
        ];
        const child = spawn('ssh', args, { stdio: 'inherit' });
        return await new Promise<number>((resolve, reject) => {
          child.once('error', (err) => reject(new Error(`could not run ssh (openssh-client): ${err.message}`)));
          child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
        });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
