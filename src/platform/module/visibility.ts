import type { Store } from '../store/types.js';
import type { ModuleCommand } from './contract.js';

/** What the visibility commands need of the CLI: where to write, and the database. */
export interface VisibilityContext {
  io: { out(text: string): void; err(text: string): void };
  withStore(fn: (store: Store) => Promise<number>): Promise<number>;
}

/** A kind of record an operator may make public to every account, as its module describes it. */
export interface Publishable {
  /** The command word and the record's name: `blueprints`, `blueprint`. */
  plural: string;
  one: string;
  article: 'a' | 'an';
  /** What public means for it, for `--help`. */
  means: string;
  /** Sets the flag; false when there is no such record. */
  setPublic(store: Store, id: string, isPublic: boolean): Promise<boolean>;
}

/** `devboxd <plural> publish ID` and `unpublish ID`: the operator decides what every account sees. */
export function visibilityCommands<X extends VisibilityContext>(kind: Publishable): ModuleCommand<X>[] {
  return [true, false].map((pub) => ({
    words: [kind.plural, pub ? 'publish' : 'unpublish'],
    args: ['ID'],
    summary: pub ? `make ${kind.article} ${kind.one} public: ${kind.means}` : 'make it private to its account again',
    run: ({ io, withStore }, { ID }) =>
      withStore(async (store) => {
        if (!(await kind.setPublic(store, ID!, pub))) {
          io.err(`no ${kind.one} ${ID}\n`);
          return 1;
        }
        io.out(`${kind.one} ${ID} is now ${pub ? 'public' : 'private'}\n`);
        return 0;
      }),
  }));
}
