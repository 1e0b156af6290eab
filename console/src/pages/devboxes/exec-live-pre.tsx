// A `.log` block that output is appended to: it follows the newest lines while the reader is at the bottom
// and stays put once they scroll up to read. It takes focus, so a keyboard can scroll it too.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef } from 'preact/hooks';

export function LivePre({ class: cls, children }: { class?: string; children: ComponentChildren }) {
  const pre = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  useLayoutEffect(() => {
    const el = pre.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });
  return (
    <pre
      class={cls ? `log ${cls}` : 'log'}
      ref={pre}
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box takes focus so that a keyboard can scroll it
      tabIndex={0}
      onScroll={(e) => {
        const el = e.currentTarget;
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
      }}
    >
      {children}
    </pre>
  );
}
