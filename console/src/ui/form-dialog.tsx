// A form in a modal <dialog>: create and edit forms of the list pages. The fields are rendered only while it
// is open, so each opening starts from the given defaults and nothing typed (a secret's value) outlives it.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { ErrorNote } from './common';

export interface FormDialogProps {
  title: string;
  open: boolean;
  onClose: () => void;
  submitLabel: string;
  /** Reads the form (by its inputs' names); a thrown ApiError's message is shown in the dialog. */
  onSubmit: (form: FormData) => Promise<unknown>;
  /** Called after a successful submit, before the dialog closes. */
  done?: (result: unknown) => void;
  children: ComponentChildren;
}

export function FormDialog(props: FormDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const headingId = useId();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) {
      setError(null);
      d.showModal();
    } else if (!props.open && d.open) d.close();
  }, [props.open]);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const result = await props.onSubmit(new FormData(e.currentTarget as HTMLFormElement));
      props.done?.(result);
      props.onClose();
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} aria-labelledby={headingId} onClose={props.onClose} class="form-dialog">
      {props.open && (
        <article>
          <header>
            <h2 id={headingId}>{props.title}</h2>
          </header>
          <form onSubmit={submit}>
            {props.children}
            <ErrorNote error={error} />
            <footer>
              <button type="button" class="secondary" onClick={props.onClose}>
                Cancel
              </button>
              <button type="submit" aria-busy={busy} disabled={busy}>
                {props.submitLabel}
              </button>
            </footer>
          </form>
        </article>
      )}
    </dialog>
  );
}

/** Which dialog a page shows: none, the create form, or the edit form of one row. */
export type Editing<T> = { mode: 'create' } | { mode: 'edit'; row: T } | null;
