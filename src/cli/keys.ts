/** `berth keys new|show`: the identity key every berth component signs with. */
import type { Command } from "commander";
import { answer } from "./output.js";
import { defaultPaths } from "./paths.js";

/** A fresh Nostr secret written to a new file only (0600, never over an existing one); its public key. */
async function newNsecFile(file: string): Promise<{ nsec_file: string; public_key: string }> {
  const [{ randomBytes }, { writeFileSync }, { decodeNsec, encodeNsec }, { CliError }] = await Promise.all([
    import("node:crypto"),
    import("node:fs"),
    import("../core/identity/nostr.js"),
    import("./errors.js"),
  ]);
  let nsec: string | null = null;
  while (nsec === null) nsec = encodeNsec(randomBytes(32));
  const decoded = decodeNsec(nsec);
  if (!decoded.ok) throw new Error(`a new nsec did not decode: ${decoded.error}`);
  try {
    writeFileSync(file, `${nsec}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST")
      throw new CliError(
        `${file} already exists; berth never overwrites a key (remove it first if you mean to replace the agent's identity)`,
        2,
        { kind: "key_file" },
      );
    throw new CliError(`cannot write ${file}: ${code ?? (error as Error).message}`, 2, { kind: "file" });
  }
  return { nsec_file: file, public_key: decoded.value };
}

export function registerKeyCommands(program: Command): void {
  const keys = program
    .command("keys")
    .description(
      "identity keys (Ed25519) used to sign the audit chain and control messages: key files on this machine, never through a server",
    );
  keys
    .command("new")
    .description(
      "create a new identity key file (mode 0600); refuses to overwrite an existing one. --nsec FILE: a Kubernetes agent's Nostr identity instead (the spec's kubernetes.nsec_file)",
    )
    .option("--key-file <path>", "where to write the key", defaultPaths.controllerKey())
    .option(
      "--nsec <file>",
      "write a new Nostr secret key (nsec1…, mode 0600) for a Kubernetes agent, and print its public key",
    )
    .option("--json", "print one JSON document")
    .action(async (opts: { keyFile: string; nsec?: string; json?: boolean }) => {
      if (opts.nsec !== undefined) {
        const doc = await newNsecFile(opts.nsec);
        answer(
          opts.json,
          doc,
          `created ${doc.nsec_file} (the agent's secret: keep it out of the spec and of version control)\npublic key  ${doc.public_key}\nuse it in the agent spec as  kubernetes: { nsec_file: ${doc.nsec_file} }`,
        );
        return;
      }
      const [{ generateSigningKey, saveKeyFile }, { nodeIdOf }] = await Promise.all([
        import("../keys/key-file.js"),
        import("../core/crypto/ed25519.js"),
      ]);
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
      const [{ loadKeyFile }, { nodeIdOf }] = await Promise.all([
        import("../keys/key-file.js"),
        import("../core/crypto/ed25519.js"),
      ]);
      const key = loadKeyFile(opts.keyFile);
      const doc = { key_file: opts.keyFile, public_key: key.publicKey, id: nodeIdOf(key.publicKey) };
      answer(opts.json, doc, `public key  ${doc.public_key}\nid          ${doc.id}`);
    });
}
