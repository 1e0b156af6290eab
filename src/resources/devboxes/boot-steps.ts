import type { BootStep } from './extensions.js';

/** Writes the create request's file mounts into the box (as root, creating parent directories). */
export const fileMountsStep: BootStep = {
  name: 'file mounts',
  applies: (ctx) => Object.keys(ctx.fileMounts).length > 0,
  async run({ sandbox, fileMounts }) {
    for (const [path, contents] of Object.entries(fileMounts)) {
      const p = sandbox.spawn({ argv: ['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'sh', path] });
      p.stdout.resume();
      p.stderr.resume();
      p.stdin.end(contents);
      const { exitCode } = await p.exited;
      if (exitCode !== 0) throw new Error(`file mount failed: could not write ${path}`);
    }
  },
};
