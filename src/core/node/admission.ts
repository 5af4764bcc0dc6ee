/**
 * Admission on the node (spec/mesh.md §11.1 step 6): may this launch be loaded here, given what the node has? Pure: the
 * shell observes the instance count, free memory, which interpreters exist and which secrets are provisioned, and
 * this decides, naming the first reason to refuse.
 */
import { ok, type Result } from "../../kit/result.js";
export interface AdmissionRequest {
  readonly program: string;
  readonly memory_mb: number;
  readonly secrets: readonly string[];
}

export interface NodeCapacity {
  readonly instances: number;
  readonly maxInstances: number;
  readonly availableMemoryBytes: number;
  /** Interpreter names declared in node.json whose path exists. */
  readonly interpreters: ReadonlySet<string>;
  /** Secret names with a file under `secrets/`. */
  readonly provisionedSecrets: ReadonlySet<string>;
}

export type Admission = Result<void>;

export function admit(launch: AdmissionRequest, node: NodeCapacity): Admission {
  if (node.instances >= node.maxInstances) return { ok: false, error: `instance limit ${node.maxInstances} reached` };
  if (launch.memory_mb > 0 && launch.memory_mb * 1024 * 1024 > node.availableMemoryBytes) {
    return { ok: false, error: `not enough memory: ${launch.memory_mb} MiB declared` };
  }
  // An entry `@name` runs through the node's interpreter `name` (§5.1).
  if (launch.program.startsWith("@")) {
    const name = launch.program.slice(1);
    if (!node.interpreters.has(name)) return { ok: false, error: `interpreter ${name} is not declared on this node` };
  }
  for (const secret of launch.secrets) {
    if (!node.provisionedSecrets.has(secret))
      return { ok: false, error: `secret ${secret} is not provisioned on this node` };
  }
  return ok();
}
