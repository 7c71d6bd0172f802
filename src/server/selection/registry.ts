import { BUILTIN_SELECTION_POLICIES } from './builtin-policies.ts';
import { SelectionError, type SelectionPolicy } from './policy.ts';

/** Selection policies by name: what a binding's `policy` refers to. */
export class SelectionPolicies {
  private readonly byName = new Map<string, SelectionPolicy>();

  constructor(policies: Iterable<SelectionPolicy> = []) {
    for (const policy of policies) this.register(policy);
  }

  /** Adds a policy; a second policy of the same name is a programming error. */
  register<P>(policy: SelectionPolicy<P>): void {
    if (!/^[a-z][a-z0-9-]*$/.test(policy.name)) {
      throw new SelectionError(
        'SELECTION_POLICY_NAME',
        `selection policy name ${JSON.stringify(policy.name)} must be lowercase letters, digits and dashes, starting with a letter`,
      );
    }
    if (this.byName.has(policy.name)) {
      throw new SelectionError(
        'SELECTION_POLICY_DUPLICATE',
        `a selection policy named ${JSON.stringify(policy.name)} is registered already`,
      );
    }
    this.byName.set(policy.name, policy as SelectionPolicy);
  }

  get(name: string): SelectionPolicy | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()].sort();
  }
}

/**
 * The policies of this process: the built-in ones. A DNS thread builds the same list when it
 * loads this module, so a binding the primary accepts is understood by every worker.
 */
export const selectionPolicies = new SelectionPolicies(BUILTIN_SELECTION_POLICIES);
