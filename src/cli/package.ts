/** `berth package init|build|sign|verify`: signed packages that nodes verify before running anything. */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { RevocationList } from "../core/governance/policy.js";
import { CliError, describeZodIssues, invalidInput } from "./errors.js";
import { oneOf } from "./flags.js";
import { answer } from "./output.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];
const HEX_KEY = /^[0-9a-f]{64}$/;
const NETWORKS = ["none", "lan", "egress"] as const;

/** Package libraries, loaded when a package verb runs (issue 19: registration stays light). */
const packages = () => import("../mesh/packages/dir.js");

function wrap<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    // By name: the class lives in the lazily loaded module.
    if (error instanceof Error && error.name === "PackageError") throw new CliError(error.message);
    throw error;
  }
}

export function registerPackageCommands(program: Command): void {
  const pkg = program
    .command("package")
    .description(
      "build, sign and verify packages (a manifest plus the files it pins): directories on this machine, never through a server",
    );

  pkg
    .command("init <dir>")
    .description("write a source manifest (berth-package.src.json) to edit")
    .requiredOption("--name <name>", "package name")
    .option("--kind <kind>", "package kind", "agent")
    .option("--entry <file>", "the entry program (a file in <dir>, executable)", "run.sh")
    .option("--network <network>", "none, lan or egress", "none")
    .option("--json", "print one JSON document")
    .action(
      async (dir: string, opts: { name: string; kind: string; entry: string; network: string; json?: boolean }) => {
        const network = { data: oneOf("--network", opts.network, NETWORKS) };
        const { initPackage } = await packages();
        const path = wrap(() =>
          initPackage(resolve(dir), {
            name: opts.name,
            kind: opts.kind,
            files: [opts.entry],
            variants: [
              { id: "any-linux", arch: "any", os: "linux", entry: { program: opts.entry, args: [] }, requires: [] },
            ],
            network: network.data,
          }),
        );
        answer(opts.json, { source_manifest: path }, `wrote ${path}; edit it, then run \`berth package build ${dir}\``);
      },
    );

  pkg
    .command("build <dir>")
    .description("pin every listed file by SHA-256, size and mode into berth-package.json (unsigned)")
    .option("--json", "print one JSON document")
    .action(async (dir: string, opts: { json?: boolean }) => {
      const { buildPackage } = await packages();
      const { packageId, statement } = wrap(() => buildPackage(resolve(dir)));
      answer(
        opts.json,
        { package_id: packageId, name: statement.name, version: statement.version },
        `built ${statement.name} ${statement.version}\npackage id  ${packageId}\nnext: berth package sign ${dir} --key <signer key file>`,
      );
    });

  pkg
    .command("sign <dir>")
    .description("add a signature with a signer key file (the package id does not change)")
    .requiredOption("--key <file>", "signer key file (create one with `berth keys new --key-file <file>`)")
    .option("--json", "print one JSON document")
    .action(async (dir: string, opts: { key: string; json?: boolean }) => {
      const [{ loadKeyFile }, { signPackage }] = await Promise.all([import("../keys/key-file.js"), packages()]);
      const key = loadKeyFile(opts.key);
      const r = wrap(() => signPackage(resolve(dir), key));
      answer(
        opts.json,
        { package_id: r.packageId, signer: key.publicKey, signatures: r.signatures },
        `signed ${r.packageId} with ${key.publicKey} (${r.signatures} signature(s))`,
      );
    });

  pkg
    .command("verify <dir>")
    .description("verify signatures against trusted signers, revocations, and every pinned file's size and hash")
    .option("--signers <file>", "a signers.json file of trusted signer keys")
    .option("--signer <key>", "a trusted signer public key (repeatable)", collect)
    .option("--revocations <file>", "a revocations.json file")
    .option("--json", "print one JSON document")
    .action(
      async (dir: string, opts: { signers?: string; signer?: string[]; revocations?: string; json?: boolean }) => {
        const [{ verifyPackageDir }, { SignersFileSchema }, { EMPTY_REVOCATIONS, parseRevocations }] =
          await Promise.all([packages(), import("../mesh/policy/files.js"), import("../core/governance/policy.js")]);
        const trusted = new Set<string>();
        for (const k of opts.signer ?? []) {
          if (!HEX_KEY.test(k)) throw invalidInput("--signer: value: must be 64 lowercase hex characters");
          trusted.add(k);
        }
        if (opts.signers) {
          let raw: unknown;
          try {
            raw = JSON.parse(readFileSync(opts.signers, "utf8"));
          } catch {
            throw new CliError(`--signers: ${opts.signers} is missing or not valid JSON`);
          }
          const parsed = SignersFileSchema.safeParse(raw);
          if (!parsed.success) throw invalidInput(describeZodIssues(opts.signers, parsed.error.issues));
          for (const s of parsed.data) trusted.add(s.key);
        }
        let revocations: RevocationList | null = EMPTY_REVOCATIONS;
        if (opts.revocations) {
          const loaded = existsSync(opts.revocations)
            ? parseRevocations(readFileSync(opts.revocations, "utf8"))
            : { ok: false as const, error: "missing" };
          revocations = loaded.ok ? loaded.value : null;
        }
        const v = verifyPackageDir(resolve(dir), trusted, revocations);
        answer(
          opts.json,
          v.ok
            ? { ok: true, package_id: v.value.packageId, signers: v.value.signers }
            : { ok: false, error: `refused: ${v.error}`, reason: v.error },
          v.ok ? `ok: ${v.value.packageId} signed by ${v.value.signers.join(", ")}` : `refused: ${v.error}`,
        );
        if (!v.ok) process.exitCode = 1;
      },
    );
}
