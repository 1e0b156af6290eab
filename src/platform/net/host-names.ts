/**
 * Matching a name against host name patterns: what a network policy's `allowed_hostnames` (checked where the
 * policy is written) allow, as the boxes' DNS in the runtime judges each question by them. Here because both
 * sides read it: the runtime imports no resource.
 */

/** A name's labels as the DNS reads them: at most 255 bytes on the wire, labels of 1 to 63 bytes. */
function isDnsName(name: string): boolean {
  if (name.length + 2 > 255) return false;
  return name === '' || name.split('.').every((l) => l.length > 0 && l.length <= 63);
}

/**
 * One matcher for patterns: exact names, or `*.` then a name for every name under it at any depth; any other
 * `*` matches nothing. A name matches when any pattern does (case-insensitive). Exact names and the suffixes
 * under `*.` are sets, so a name costs one lookup per label, whatever the patterns.
 */
export function hostMatcher(patterns: string[]): (name: string) => boolean {
  const exact = new Set<string>();
  const under = new Set<string>();
  for (const p of patterns) {
    if (p.startsWith('*.')) under.add(p.slice(2));
    else if (!p.includes('*')) exact.add(p);
  }
  return (raw) => {
    const name = raw.toLowerCase().replace(/\.$/, '');
    if (!isDnsName(name)) return false;
    if (exact.has(name)) return true;
    for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
      if (under.has(name.slice(dot + 1))) return true;
    }
    return false;
  };
}
