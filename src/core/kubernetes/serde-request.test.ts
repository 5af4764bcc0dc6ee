import { describe, expect, it } from "vitest";
import { parseRequest } from "./request.js";

const errorOf = (raw: unknown) => {
  const r = parseRequest(raw);
  return r.ok ? null : r.error;
};
const P = "could not understand the request: ";
const agent = { relay_url: "wss://r", private_key_nsec: "nsec1x" };

// serde's derive over crates/buzz-backend-kubernetes/src/wire.rs (5dive-ai/buzz@02b860dd): tests named after Buzz's
// (wire.rs rejects_unknown_op, null_owner_fields_parse, ignores_unconsumed_payload_fields; main.rs at block/buzz@3fac2c2
// malformed_input_is_an_in_band_error answers `could not understand the request: {e}`).
describe("the typed request parse gives serde's first error (issue 18.6)", () => {
  it("rejects_unknown_op with serde's unknown-variant text, and a non-string op as a variant identifier", () => {
    expect(errorOf({ op: "undeploy" })).toBe(`${P}unknown variant \`undeploy\`, expected \`info\` or \`deploy\``);
    expect(errorOf({ op: 5 })).toBe(`${P}invalid type: integer \`5\`, expected variant identifier`);
    expect(errorOf({ op: null })).toBe(`${P}invalid type: unit value, expected variant identifier`);
    expect(errorOf({ agent: {} })).toBe(`${P}missing field \`op\``);
    expect(errorOf("info")).toBe(`${P}invalid type: string (value withheld), expected internally tagged enum Request`);
    expect(errorOf(7)).toBe(`${P}invalid type: integer \`7\`, expected internally tagged enum Request`);
    expect(errorOf([])).toBe(`${P}missing field \`op\``);
  });

  it("the op is read first wherever it sits: a bad op wins over a broken agent", () => {
    expect(errorOf({ agent: 5, op: "nope" })).toBe(`${P}unknown variant \`nope\`, expected \`info\` or \`deploy\``);
    expect(errorOf({ op: "info", agent: 5, anything: [1] })).toBeNull();
  });

  it("a wrong type anywhere wins over a missing field; missing fields are named in declaration order", () => {
    expect(errorOf({ op: "deploy", agent: { private_key_nsec: 5 } })).toBe(
      `${P}invalid type: integer \`5\`, expected a string (at agent.private_key_nsec)`,
    );
    expect(errorOf({ op: "deploy", agent: {} })).toBe(`${P}missing field \`relay_url\` (at agent.relay_url)`);
    expect(errorOf({ op: "deploy", agent: { relay_url: "x" } })).toBe(
      `${P}missing field \`private_key_nsec\` (at agent.private_key_nsec)`,
    );
    expect(errorOf({ op: "deploy" })).toBe(`${P}missing field \`agent\``);
    expect(errorOf({ op: "deploy", agent: [] })).toBe(
      `${P}invalid type: sequence, expected struct AgentPayload (at agent)`,
    );
    expect(errorOf({ op: "deploy", agent: { ...agent, launch: 3 } })).toBe(
      `${P}invalid type: integer \`3\`, expected struct LaunchBlock (at agent.launch)`,
    );
  });

  it("fields are visited in serde_json's Map order (sorted keys): the first wrong type by key order wins", () => {
    const two = { op: "deploy", agent: { ...agent, respond_to: 1, env_vars: 2 } };
    expect(errorOf(two)).toBe(`${P}invalid type: integer \`2\`, expected a map (at agent.env_vars)`);
    expect(errorOf({ op: "deploy", agent: { ...agent, launch: { policy_env: 1, args: "x" } } })).toBe(
      `${P}invalid type: string (value withheld), expected a sequence (at agent.launch.args)`,
    );
  });

  it("null_owner_fields_parse: an Option takes null; a defaulted map or sequence does not", () => {
    expect(
      errorOf({ op: "deploy", agent: { ...agent, auth_tag: null, launch: { owner_pubkey: null, command: null } } }),
    ).toBeNull();
    expect(errorOf({ op: "deploy", agent: { ...agent, respond_to_allowlist: null, launch: null } })).toBeNull();
    expect(errorOf({ op: "deploy", agent: { ...agent, env_vars: null } })).toBe(
      `${P}invalid type: unit value, expected a map (at agent.env_vars)`,
    );
    expect(errorOf({ op: "deploy", agent: { ...agent, launch: { args: null } } })).toBe(
      `${P}invalid type: unit value, expected a sequence (at agent.launch.args)`,
    );
    expect(errorOf({ op: "deploy", agent: { ...agent, relay_url: null } })).toBe(
      `${P}invalid type: unit value, expected a string (at agent.relay_url)`,
    );
  });

  it("ignores_unconsumed_payload_fields, and never quotes a string value (it may be a key)", () => {
    expect(
      errorOf({
        op: "deploy",
        request_id: "r1",
        agent: { ...agent, name: "a", model: "m", parallelism: 10, agent_args: [] },
        provider_config: 5,
      }),
    ).toBeNull();
    const secret = "nsec1vl029mgpspedva04g90vltkh6fvh240zqtv9k0t9af8935ke9laqsnlfe5";
    expect(errorOf({ op: "deploy", agent: { ...agent, env_vars: secret } })).not.toContain(secret);
    expect(errorOf({ op: "deploy", agent: { ...agent, env_vars: { [secret]: 1 } } })).toBe(
      `${P}invalid type: integer \`1\`, expected a string (at agent.env_vars.…)`,
    );
    expect(errorOf({ op: "deploy", agent: { ...agent, env_vars: { GOOSE_MODEL: 1 } } })).toBe(
      `${P}invalid type: integer \`1\`, expected a string (at agent.env_vars.GOOSE_MODEL)`,
    );
  });
});
