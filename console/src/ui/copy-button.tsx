// Copies a value (a new API key's secret) to the clipboard. The Clipboard API exists only in secure contexts
// (https, localhost); elsewhere the value's field is selected and the browser's copy command used.
import { useState } from 'preact/hooks';

export function CopyButton({ value, label = 'Copy', field }: { value: string; label?: string; field?: () => HTMLInputElement | null }) {
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  const copy = async () => {
    try {
      if (navigator.clipboard) await navigator.clipboard.writeText(value);
      else {
        const input = field?.();
        input?.select();
        if (!input || !document.execCommand('copy')) throw new Error('copy unavailable');
      }
      setCopied('yes');
    } catch {
      setCopied('no');
    }
  };
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy}>
        {label}
      </button>
      <span role="status">{copied === 'yes' ? ' Copied.' : copied === 'no' ? ' Copying failed: select the text and copy it yourself.' : ''}</span>
    </span>
  );
}
