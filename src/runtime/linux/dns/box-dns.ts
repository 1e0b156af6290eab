/**
 * The boxes' DNS under their egress rules (EgressRules): `follow` takes the rules a box was given last, and
 * each of its questions is decided by them when it comes: allowAll forwards every name, a name matching
 * `hostnames` is asked upstream and its A records pinned, any other is NXDOMAIN. The sockets (forwarder.ts)
 * are made once per boot by `answer`, not at every change of the rules.
 */
import { hostMatcher } from '../../../platform/net/index.js';
import type { BoxNetwork, EgressRules } from '../../driver.js';
import { DnsForwarder, type DnsForwarderOptions, type NameDecision } from './forwarder.js';

export class BoxDns {
  private readonly forwarder: DnsForwarder;
  private readonly rules = new Map<string, EgressRules>();
  /** One matcher per rules object: made at its first question, not per question or per box. */
  private readonly matchers = new WeakMap<EgressRules, (name: string) => boolean>();

  constructor(opts: DnsForwarderOptions) {
    this.forwarder = new DnsForwarder(opts);
  }

  /** The box's next questions are decided by `rules`. */
  follow(id: string, rules: EgressRules): void {
    this.rules.set(id, rules);
  }

  /**
   * Answers the box's questions at its host end; a no-op while it answers there already. A box stopped
   * while its rules were being set (its rules are gone) gets no sockets: nothing would close them.
   */
  async answer(id: string, net: BoxNetwork): Promise<void> {
    if (!this.rules.has(id)) return;
    await this.forwarder.attach(id, net, (name) => this.decide(id, name));
  }

  /** The box's sockets close and its rules go (its link is going). */
  stop(id: string): void {
    this.rules.delete(id);
    this.forwarder.detach(id);
  }

  close(): void {
    this.rules.clear();
    this.forwarder.close();
  }

  private decide(id: string, name: string): NameDecision {
    const rules = this.rules.get(id);
    if (!rules) return 'deny';
    if (rules.allowAll) return 'forward';
    let match = this.matchers.get(rules);
    if (!match) {
      match = hostMatcher(rules.hostnames);
      this.matchers.set(rules, match);
    }
    return match(name) ? 'pin' : 'deny';
  }
}
