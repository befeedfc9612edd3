/**
 * A registry of named builders (release-please's factory pattern): the agent, compute, forge and store
 * factories each hold one, keyed by the config's `kind`. An unknown name fails with the known ones.
 */
import { UnknownNameError } from './errors.js';

export class Registry<Builder> {
  private readonly builders: Map<string, Builder>;

  /** `what` names the kind in errors ("agent", "compute backend"…). */
  constructor(
    private readonly what: string,
    entries: Iterable<readonly [string, Builder]>,
  ) {
    this.builders = new Map(entries);
  }

  /** The builder for `name`; UnknownNameError (with the sorted known names) when there is none. */
  get(name: string): Builder {
    const builder = this.builders.get(name);
    if (builder === undefined) throw new UnknownNameError(this.what, name, this.names());
    return builder;
  }

  /** The registered names, sorted (help texts, validation). */
  names(): string[] {
    return [...this.builders.keys()].sort();
  }

  /** Add or replace a kind (an out-of-tree extension, or a test). */
  register(name: string, builder: Builder): void {
    this.builders.set(name, builder);
  }

  unregister(name: string): void {
    this.builders.delete(name);
  }
}
