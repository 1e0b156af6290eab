import type { Agent, Dispatcher } from 'undici';

type Undici = typeof import('undici');

let loading: Promise<Undici> | undefined;

/**
 * undici, loaded at its first use. It is a megabyte of JavaScript (about 80 ms of CPU to load) that most API
 * servers and node agents never call between their start and their stop: gateway and MCP upstreams, registry
 * pulls, the git relay and forwarding to other nodes are what need it.
 */
export function loadUndici(): Promise<Undici> {
  // Its CommonJS exports, through `default`: a bundle's dynamic import of a CommonJS package has no named ones.
  loading ??= import('undici').then((m) => (m as { default?: Undici }).default ?? m);
  return loading;
}

/** An undici Agent made at its first request; the calls its holders make, each awaiting it first. */
export class LazyAgent {
  private made: Promise<Agent> | undefined;

  constructor(private readonly make: (undici: Undici) => Agent) {}

  get(): Promise<Agent> {
    this.made ??= loadUndici().then(this.make);
    return this.made;
  }

  async request(opts: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
    return (await this.get()).request(opts);
  }

  async stream(opts: Dispatcher.RequestOptions, factory: Dispatcher.StreamFactory): Promise<Dispatcher.StreamData> {
    return (await this.get()).stream(opts, factory);
  }

  /** Closes the agent if one was made (nothing was loaded otherwise, or its making failed). */
  async close(): Promise<void> {
    const agent = await this.made?.catch(() => undefined);
    await agent?.close();
  }
}
