// "Yours" or "Public": lists that have both an account's own items and the server's public ones
// (agents, scenarios) switch between the two endpoints with this.
export type Scope = 'own' | 'public';

export function ScopeSwitch({ label, value, onChange }: { label: string; value: Scope; onChange: (s: Scope) => void }) {
  return (
    <fieldset class="scope-switch">
      <legend>{label}</legend>
      <label>
        <input type="radio" name={`scope-${label}`} checked={value === 'own'} onChange={() => onChange('own')} />
        Yours
      </label>
      <label>
        <input type="radio" name={`scope-${label}`} checked={value === 'public'} onChange={() => onChange('public')} />
        Public
      </label>
    </fieldset>
  );
}
