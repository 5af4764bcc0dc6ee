import { describe, expect, it } from "vitest";
import { CREDENTIAL_WORDS, configSchema, nameWords, namespacePrefill, parseProviderConfig } from "./config.js";
import { IMAGE_PREFILL, parseImage } from "./image.js";
import { GOLDEN_IMAGE, GOLDEN_IMAGE_REF } from "../../../test/support/kubernetes/fixtures.js";

const base = { namespace: "buzz-agents-test", image: GOLDEN_IMAGE_REF };
const errorOf = (raw: unknown) => {
  const r = parseProviderConfig(raw);
  return r.ok ? null : r.error;
};
const DIGEST = "17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";

describe("image references (spec/kubernetes.md §15.4)", () => {
  it.each([
    [GOLDEN_IMAGE_REF, GOLDEN_IMAGE],
    [`localhost:5000/x@sha256:${DIGEST}`, `localhost:5000/x@sha256:${DIGEST}`],
    [`localhost:5000/x:v1@sha256:${DIGEST}`, `localhost:5000/x@sha256:${DIGEST}`],
    [`busybox@sha256:${DIGEST}`, `busybox@sha256:${DIGEST}`],
  ])("normalizes %s", (ref, expected) => {
    expect(parseImage(ref)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ["ghcr.io/x:latest", 'provider_config.image "ghcr.io/x:latest" is not digest-pinned: a tag is a mutable pointer'],
    [`a@b@sha256:${DIGEST}`, `provider_config.image "a@b@sha256:${DIGEST}" contains more than one '@'`],
    [`x@md5:${DIGEST}`, `provider_config.image digest "md5:${DIGEST}" must start with 'sha256:'`],
    [`x@sha256:${DIGEST.toUpperCase()}`, "must be exactly 64 lowercase hex characters"],
    ["x@sha256:abc", 'provider_config.image digest "sha256:abc" must be exactly 64 lowercase hex characters'],
    [`@sha256:${DIGEST}`, `provider_config.image "@sha256:${DIGEST}" has no repository name`],
    [`:tag@sha256:${DIGEST}`, "has no repository name"],
  ])("refuses %s", (ref, text) => {
    const r = parseImage(ref);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain(text);
  });
});

describe("provider_config parsing (spec/kubernetes.md §15.1)", () => {
  // issue 34: Buzz's 1 CPU / 2 GiB requests left a small node unschedulable; berth requests 250m / 512Mi.
  it("fills the documented defaults, requests small enough for a small node", () => {
    const r = parseProviderConfig(base);
    expect(r).toEqual({
      ok: true,
      value: {
        context: null,
        namespace: "buzz-agents-test",
        image: GOLDEN_IMAGE,
        cpuRequest: "250m",
        memoryRequest: "512Mi",
        cpuLimit: "2",
        memoryLimit: "4Gi",
        inactivitySeconds: 7200,
        serviceAccount: null,
        workspaceStorage: null,
        workspaceStorageClass: null,
        podOptions: null,
      },
    });
  });

  it("B1 refuses a non-object and B2 a null or cleared namespace", () => {
    expect(errorOf([1])).toBe("provider_config must be a JSON object");
    expect(errorOf("x")).toBe("provider_config must be a JSON object");
    expect(errorOf(null)).toMatch(
      /^provider_config.namespace is required: the info schema supplies a generated default/,
    );
    expect(errorOf({ ...base, namespace: "  " })).toMatch(/^provider_config.namespace is required/);
  });

  it.each(["Buzz-Agents", "-leading", "trailing-", "has_underscore", "n".repeat(64)])(
    "B3 refuses namespace %j",
    (ns) => {
      expect(errorOf({ ...base, namespace: ns })).toBe(
        `provider_config.namespace ${JSON.stringify(ns)} is not a valid Kubernetes namespace (lowercase alphanumerics and '-', ≤63 characters)`,
      );
    },
  );

  it("accepts a 63-character namespace", () => {
    expect(errorOf({ ...base, namespace: "n".repeat(63) })).toBeNull();
  });

  it("B4 names the field and shows the JSON it got", () => {
    expect(errorOf({ ...base, cpu_request: 2 })).toBe("provider_config.cpu_request must be a string, got 2");
    expect(errorOf({ ...base, namespace: ["a"] })).toBe('provider_config.namespace must be a string, got ["a"]');
  });

  it("B5 renders numbers bare, strings quoted and other JSON as text", () => {
    expect(errorOf({ ...base, inactivity_seconds: -1 })).toBe(
      "provider_config.inactivity_seconds must be a non-negative integer, got -1",
    );
    expect(errorOf({ ...base, inactivity_seconds: 1.5 })).toBe(
      "provider_config.inactivity_seconds must be a non-negative integer, got 1.5",
    );
    expect(errorOf({ ...base, inactivity_seconds: "abc" })).toBe(
      'provider_config.inactivity_seconds must be a non-negative integer, got "abc"',
    );
    expect(errorOf({ ...base, inactivity_seconds: true })).toBe(
      "provider_config.inactivity_seconds must be a non-negative integer, got true",
    );
  });

  it('accepts 300, "300" and treats "" as unset', () => {
    for (const [v, expected] of [
      [300, 300],
      ["300", 300],
      [" 300 ", 300],
      ["", 7200],
    ] as const) {
      const r = parseProviderConfig({ ...base, inactivity_seconds: v });
      expect(r.ok && r.value.inactivitySeconds).toBe(expected);
    }
  });

  it("B6 refuses an indefinite lifetime", () => {
    expect(errorOf({ ...base, inactivity_seconds: 0 })).toMatch(
      /^provider_config.inactivity_seconds: 0 \(indefinite lifetime\) is not supported/,
    );
  });

  it("B7 requires an image, and B8–B12 come from the image rules", () => {
    expect(errorOf({ namespace: "ns" })).toMatch(
      /^provider_config.image is required: no image is assumed at parse time/,
    );
    expect(errorOf({ namespace: "ns", image: "x:1" })).toMatch(/is not digest-pinned/);
  });

  it("B13 requires workspace_storage for a storage class", () => {
    expect(errorOf({ ...base, workspace_storage_class: "fast" })).toBe(
      "provider_config.workspace_storage_class requires workspace_storage",
    );
  });

  it("B14–B16 police pod_options strictly", () => {
    expect(errorOf({ ...base, pod_options: { bogus: 1 } })).toBe('provider_config.pod_options: unknown key "bogus"');
    expect(errorOf({ ...base, pod_options: { node_selector: { a: 1 } } })).toMatch(
      /^provider_config.pod_options: node_selector/,
    );
    expect(errorOf({ ...base, pod_options: { tolerations: [{ operator: "Maybe" }] } })).toMatch(
      /^provider_config.pod_options: tolerations/,
    );
    expect(errorOf({ ...base, pod_options: { setup_pending: "yes" } })).toBe(
      'provider_config.pod_options: setup_pending must be a boolean, got "yes"',
    );
    expect(errorOf({ ...base, pod_options: { setup_pending: null } })).toMatch(
      /^provider_config.pod_options: setup_pending must be a boolean/,
    );
    const setup = parseProviderConfig({ ...base, pod_options: { setup_pending: true } });
    expect(setup.ok && setup.value.podOptions).toEqual({ setupPending: true });
    expect(errorOf({ ...base, workspace_storage: "1Gi", pod_options: { workspace_size_limit: "1Gi" } })).toMatch(
      /^provider_config.pod_options: workspace_size_limit conflicts/,
    );
    expect(errorOf({ ...base, pod_options: { active_deadline_seconds: 0 } })).toBe(
      "provider_config.pod_options.active_deadline_seconds must be positive",
    );
    expect(errorOf({ ...base, pod_options: { ephemeral_storage_limit: " " } })).toBe(
      "provider_config.pod_options storage quantities must not be empty",
    );
    const empty = parseProviderConfig({
      ...base,
      pod_options: { node_selector: {}, tolerations: [], setup_pending: false },
    });
    expect(empty.ok && empty.value.podOptions).toBeNull();
  });

  it("leaves identity_policy to the identity stage, which runs after the nsec decodes (Buzz's order)", () => {
    expect(errorOf({ ...base, identity_policy: { agent_pubkey: "a", owner_pubkey: "b" } })).toBeNull();
  });

  // Buzz's order, crates/buzz-backend-kubernetes/src/config.rs `parse` at block/buzz@906578e: namespace, image,
  // resources, inactivity, workspace fields, then context and service account (issue 18.6).
  it("refuses in Buzz's order: with more than one fault the first error is Buzz's", () => {
    expect(errorOf({ namespace: "BAD", image: "x:1", inactivity_seconds: 0 })).toMatch(/namespace "BAD"/);
    expect(errorOf({ namespace: "ok", image: "x:1", inactivity_seconds: 0 })).toMatch(/not digest-pinned/);
    expect(errorOf({ namespace: "ok", image: "x:1", context: 5, cpu_request: 4 })).toMatch(/not digest-pinned/);
    expect(errorOf({ ...base, context: 5, cpu_request: 4 })).toBe(
      "provider_config.cpu_request must be a string, got 4",
    );
    expect(errorOf({ ...base, service_account: 6, inactivity_seconds: 0 })).toMatch(
      /^provider_config.inactivity_seconds: 0/,
    );
    expect(errorOf({ ...base, context: 5, workspace_storage_class: "c" })).toBe(
      "provider_config.workspace_storage_class requires workspace_storage",
    );
    expect(errorOf({ ...base, service_account: 6, context: 5 })).toBe(
      "provider_config.context must be a string, got 5",
    );
    expect(errorOf({ namespace: "ok", image: "x:1", workspace_storage_class: "c" })).toMatch(/not digest-pinned/);
    expect(errorOf({ ...base, workspace_storage_class: "c", pod_options: { bogus: 1 } })).toMatch(
      /requires workspace_storage/,
    );
    expect(errorOf({ ...base, pod_options: { bogus: 1 }, identity_policy: {} })).toMatch(/unknown key/);
  });

  // Buzz's pilot line, config.rs `parse` at block/buzz@0c7b698: pod_options after inactivity, before context and the
  // service account.
  it("refuses pod_options in the pilot line's place: after inactivity, before context and service_account", () => {
    expect(errorOf({ ...base, context: 5, pod_options: { bogus: 1 } })).toBe(
      'provider_config.pod_options: unknown key "bogus"',
    );
    expect(errorOf({ ...base, service_account: 6, pod_options: { active_deadline_seconds: 0 } })).toBe(
      "provider_config.pod_options.active_deadline_seconds must be positive",
    );
    expect(errorOf({ ...base, inactivity_seconds: 0, pod_options: { bogus: 1 } })).toMatch(
      /^provider_config.inactivity_seconds: 0/,
    );
    expect(errorOf({ ...base, memory_limit: 4, pod_options: { bogus: 1 } })).toBe(
      "provider_config.memory_limit must be a string, got 4",
    );
  });

  it("ignores unknown top-level keys, credential-looking ones included", () => {
    expect(errorOf({ ...base, token: "abc", kubeconfig: "x" })).toBeNull();
  });
});

describe("the info schema (spec/kubernetes.md §15.2)", () => {
  const schema = configSchema("buzz-agents-abc123") as {
    required: string[];
    properties: Record<string, { default?: unknown; type: string }>;
  };

  it("requires namespace and image and prefills both", () => {
    expect(schema.required).toEqual(["namespace", "image"]);
    expect(schema.properties.namespace?.default).toBe("buzz-agents-abc123");
    expect(schema.properties.image?.default).toBe(IMAGE_PREFILL);
    expect(schema.properties.inactivity_seconds?.type).toBe("number");
  });

  it("has no property name Buzz Desktop would refuse as a credential", () => {
    for (const name of Object.keys(schema.properties)) {
      for (const word of nameWords(name)) expect(CREDENTIAL_WORDS as readonly string[]).not.toContain(word);
    }
    expect(nameWords("apiToken")).toContain("token");
    expect(nameWords("ssh.key-file")).toContain("key");
  });

  // Buzz's schema test, crates/buzz-backend-kubernetes/src/config.rs: schema_declares_exactly_the_nine_v1_fields
  // (baseline), schema_declares_exactly_the_eleven_fields at block/buzz@906578e (the persistent-workspace line),
  // plus berth's one addition.
  it("declares exactly Buzz's eleven scalar fields plus pod_options_json, every one a scalar Desktop can render", () => {
    const buzzEleven = [
      "context",
      "cpu_limit",
      "cpu_request",
      "image",
      "inactivity_seconds",
      "memory_limit",
      "memory_request",
      "namespace",
      "service_account",
      "workspace_storage",
      "workspace_storage_class",
    ];
    expect(Object.keys(schema.properties).sort()).toEqual([...buzzEleven, "pod_options_json"].sort());
    for (const [name, p] of Object.entries(schema.properties)) expect(["string", "number"], name).toContain(p.type);
  });

  it("pod options arrive as a JSON text from the form, and a blank pod_options from the form is unset", () => {
    const viaText = parseProviderConfig({
      ...base,
      pod_options_json: '{"node_selector":{"kubernetes.io/arch":"arm64"},"active_deadline_seconds":60}',
    });
    const viaObject = parseProviderConfig({
      ...base,
      pod_options: { node_selector: { "kubernetes.io/arch": "arm64" }, active_deadline_seconds: 60 },
    });
    expect(viaText).toEqual(viaObject);
    expect(viaText.ok && viaText.value.podOptions).toEqual({
      nodeSelector: { "kubernetes.io/arch": "arm64" },
      activeDeadlineSeconds: 60,
    });
    for (const blank of ["", "  "]) {
      const r = parseProviderConfig({ ...base, pod_options: blank, pod_options_json: blank });
      expect(r.ok && r.value.podOptions).toBeNull();
    }
  });

  it("a pod_options_json that is not a JSON object is refused without echoing it", () => {
    expect(errorOf({ ...base, pod_options_json: "{nope" })).toBe("provider_config.pod_options_json is not valid JSON");
    expect(errorOf({ ...base, pod_options_json: "[1]" })).toBe(
      "provider_config.pod_options_json must hold a JSON object",
    );
    expect(errorOf({ ...base, pod_options_json: '{"host_network":true}' })).toBe(
      'provider_config.pod_options: unknown key "host_network"',
    );
    expect(errorOf({ ...base, pod_options: { active_deadline_seconds: 5 }, pod_options_json: "{}" })).toBe(
      "provider_config.pod_options and provider_config.pod_options_json are both set; use one",
    );
  });

  it("prefills round-trip through the parser", () => {
    const ns = namespacePrefill([1, 2, 3, 30, 31, 35]);
    expect(ns).toMatch(/^buzz-agents-[a-z0-9]{6}$/);
    expect(errorOf({ namespace: ns, image: IMAGE_PREFILL })).toBeNull();
  });
});
