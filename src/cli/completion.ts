import { type Command, type Io, UsageError } from './parse.js';

/**
 * A bash completion script for `commands`, made from the same table the parser reads (so it cannot drift):
 * the first word, the second word of multi-word commands, and each command's options. zsh reads it too
 * (`autoload bashcompinit && bashcompinit`).
 */
export function bashCompletion(commands: Command[]): string {
  const q = (words: Iterable<string>) => [...new Set(words)].join(' ');
  const firsts = q(commands.map((c) => c.words[0]!));
  const seconds = new Map<string, string[]>();
  for (const c of commands) if (c.words.length > 1) seconds.set(c.words[0]!, [...(seconds.get(c.words[0]!) ?? []), c.words[1]!]);
  const opts = commands.map((c) => `    "${c.words.join(' ')}") opts="${q(Object.keys(c.options ?? {}).map((o) => `--${o}`))} --help" ;;`);
  return `# devboxd completion (bash): source <(devboxd completion bash)
_devboxd() {
  local cur=\${COMP_WORDS[COMP_CWORD]} first=\${COMP_WORDS[1]} second=\${COMP_WORDS[2]} opts=""
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=( $(compgen -W "${firsts}" -- "$cur") ); return; fi
  case "$first" in
${[...seconds].map(([w, s]) => `    ${w}) if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=( $(compgen -W "${q(s)}" -- "$cur") ); return; fi ;;`).join('\n')}
  esac
  case "$first $second" in
${opts.filter((l) => l.includes(' ') && /"\S+ \S+"\)/.test(l)).join('\n')}
  esac
  if [ -z "$opts" ]; then
    case "$first" in
${opts.filter((l) => /"[^ "]+"\)/.test(l)).join('\n')}
    esac
  fi
  [[ "$cur" == -* ]] && COMPREPLY=( $(compgen -W "$opts" -- "$cur") )
}
complete -o default -F _devboxd devboxd
`;
}

/** `devboxd completion bash`: prints the script for the commands `table()` gives. */
export function completionCommand(io: Io, table: () => Command[]): Command {
  return {
    words: ['completion'],
    args: ['SHELL'],
    summary: 'print a completion script for SHELL (bash; zsh through bashcompinit): source <(devboxd completion bash)',
    run: async ({ SHELL }) => {
      if (SHELL !== 'bash')
        throw new UsageError(
          `devboxd completion: no completion for ${SHELL}: bash only (zsh: autoload bashcompinit && bashcompinit)`,
          'usage: devboxd completion bash',
        );
      io.out(bashCompletion(table()));
      return 0;
    },
  };
}
