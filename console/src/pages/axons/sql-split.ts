// Splits a script into statements at semicolons outside quotes and comments, for the SQL panel's batch mode.
export function splitStatements(script: string): string[] {
  const out: string[] = [];
  let start = 0;
  let i = 0;
  while (i < script.length) {
    const c = script[i]!;
    if (c === "'" || c === '"' || c === '`') {
      const close = script.indexOf(c, i + 1);
      i = close < 0 ? script.length : close + 1;
    } else if (c === '-' && script[i + 1] === '-') {
      const nl = script.indexOf('\n', i);
      i = nl < 0 ? script.length : nl + 1;
    } else if (c === '/' && script[i + 1] === '*') {
      const end = script.indexOf('*/', i + 2);
      i = end < 0 ? script.length : end + 2;
    } else if (c === ';') {
      out.push(script.slice(start, i));
      start = ++i;
    } else i++;
  }
  out.push(script.slice(start));
  return out.map((s) => s.trim()).filter(Boolean);
}
