/** `berth keys new|show`: the identity key every berth component signs with. */
import type { Command } from "commander";
import { answer } from "./output.js";
import { defaultPaths } from "./paths.js";

export function registerKeyCommands(program: Command): void {
  const keys = program.command("keys").description("identity keys (Ed25519) used to sign the audit chain and control messages: key files on this machine, never through a server");
  keys
    .command("new")
    .description("create a new identity key file (mode 0600); refuses to overwrite an existing one")
    .option("--key-file <path>", "where to write the key", defaultPaths.controllerKey())
    .option("--json", "print one JSON document")
    .action(async (opts: { keyFile: string; json?: boolean }) => {
      const [{ generateSigningKey, saveKeyFile }, { nodeIdOf }] = await Promise.all([import("../keys/key-file.js"), import("../core/crypto/ed25519.js")]);
      const key = generateSigningKey();
      saveKeyFile(opts.keyFile, key);
      const doc = { key_file: opts.keyFile, public_key: key.publicKey, id: nodeIdOf(key.publicKey) };
      answer(opts.json, doc, `created ${doc.key_file}\npublic key  ${doc.public_key}\nid          ${doc.id}`);
    });
  keys
    .command("show")
    .description("print the public key and id of a key file (never the private key)")
    .option("--key-file <path>", "the key file", defaultPaths.controllerKey())
    .option("--json", "print one JSON document")
    .action(async (opts: { keyFile: string; json?: boolean }) => {
      const [{ loadKeyFile }, { nodeIdOf }] = await Promise.all([import("../keys/key-file.js"), import("../core/crypto/ed25519.js")]);
      const key = loadKeyFile(opts.keyFile);
      const doc = { key_file: opts.keyFile, public_key: key.publicKey, id: nodeIdOf(key.publicKey) };
      answer(opts.json, doc, `public key  ${doc.public_key}\nid          ${doc.id}`);
    });
}
