// Reading form fields into API bodies: trimmed text, one-per-line lists and KEY=value maps, with errors that
// name the line a user got wrong (the server's own checks come after these).

/** The field's trimmed text, or undefined when empty (so an optional field is left out of the body). */
export function text(form: FormData, name: string): string | undefined {
  const v = form.get(name);
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  return t === '' ? undefined : t;
}

export function checked(form: FormData, name: string): boolean {
  return form.get(name) !== null;
}

/** Non-empty lines, trimmed. */
export function lines(value: string | undefined): string[] {
  return (value ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** Items separated by commas or new lines (tool names, host names). */
export function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(/[,\n]/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/** `KEY=value` lines into a map; a line without `=` is an error naming it. */
export function keyValues(value: string | undefined, field: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines(value)) {
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`${field}: "${line}" is not KEY=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

export function keyValueText(map: Record<string, string> | null | undefined): string {
  return Object.entries(map ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}
