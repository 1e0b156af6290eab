import { keyOf, type SettingType } from './schema.js';
import { type PlacedSetting, SECTIONS } from './settings.js';

/** The README's markers around the generated reference (scripts/config-docs.ts writes between them). */
export const REFERENCE_START = '<!-- config-reference:start: generated from src/config-file/sections/ by scripts/config-docs.ts; edit those -->';
export const REFERENCE_END = '<!-- config-reference:end -->';

function typeCell(type: SettingType, secret: PlacedSetting['secret']): string {
  const t = typeof type === 'string' ? type : type.map((w) => `\`${w}\``).join(' \\| ');
  return secret === true ? `${t}, secret` : t;
}

/** The reference: a table per section, a row per setting (its key, variable, YAML type, default, meaning). */
export function renderReference(): string {
  const parts = SECTIONS.map((s) => {
    const rows = s.settings.map((x) => `| \`${keyOf(x.name)}\` | \`${x.name}\` | ${typeCell(x.type, x.secret)} | ${x.default} | ${x.meaning} |`);
    return [`### \`${s.name}:\` ${s.about}`, '', '| key | variable | type | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
  });
  return `${REFERENCE_START}\n\n${parts.join('\n\n')}\n\n${REFERENCE_END}`;
}

/** `readme` with the text between the markers replaced by the reference; throws when the markers are missing. */
export function withReference(readme: string): string {
  const start = readme.indexOf(REFERENCE_START);
  const end = readme.indexOf(REFERENCE_END);
  if (start < 0 || end < start) throw new Error(`README.md has no ${REFERENCE_START} … ${REFERENCE_END} markers`);
  return readme.slice(0, start) + renderReference() + readme.slice(end + REFERENCE_END.length);
}
