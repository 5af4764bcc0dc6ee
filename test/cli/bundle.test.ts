/**
 * What the installed `berth` (dist/src/cli/entry/berth.cjs) runs (issue 19): the package build's bundle of the CLI
 * (scripts/bundle-cli) for every verb but `node serve`, and the daemon's (scripts/bundle-node) for `node serve`, when
 * fresh (fresh-bundle.cts), else main.js. In a checkout a bundle older than main.js (a `tsc` after the package build)
 * never runs; in an installed package, whose files npm writes in the tarball's order (both bundles before main.js),
 * a bundle always runs. Judged on copies of the built berth.cjs and its helpers beside a stub main.js and stub
 * bundles, each saying which ran, with their times set by the test.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { builtPath } from "../support/built.js";
import { runNode } from "../support/process.js";

const work = mkdtempSync(join(tmpdir(), "berth-cli-bundle-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A package at `root` with stubs for main.js and both bundles, main.js written at second 1_000_000. */
function layout(root: string) {
  const cli = join(root, "dist", "src", "cli", "entry");
  const cliBundle = join(root, "dist", "src", "cli-bundle", "berth.cjs");
  const daemonBundle = join(root, "dist", "src", "node-daemon.bundle.cjs");
  mkdirSync(cli, { recursive: true });
  writeFileSync(join(root, "package.json"), '{ "type": "module" }\n');
  for (const file of [
    "berth.cjs",
    "runtime.cjs",
    "compile-cache.cjs",
    "cli-bundle.cjs",
    "daemon-bundle.cjs",
    "fresh-bundle.cjs",
  ])
    copyFileSync(builtPath(`src/cli/entry/${file}`), join(cli, file));
  writeFileSync(join(cli, "main.js"), 'process.stdout.write("main.js " + JSON.stringify(process.argv.slice(2)));\n');
  utimesSync(join(cli, "main.js"), 1_000_000, 1_000_000);
  return {
    /** Writes the CLI bundle, `seconds` after main.js (negative: before). */
    cliBundle(seconds: number) {
      mkdirSync(join(root, "dist", "src", "cli-bundle"), { recursive: true });
      writeFileSync(
        cliBundle,
        'exports.runBerth = async (argv) => { process.stdout.write("CLI bundle " + JSON.stringify(argv)); };\n',
      );
      utimesSync(cliBundle, 1_000_000 + seconds, 1_000_000 + seconds);
    },
    daemonBundle(seconds: number) {
      writeFileSync(
        daemonBundle,
        'exports.runNodeServe = async (argv) => { process.stdout.write("daemon bundle " + JSON.stringify(argv)); };\n',
      );
      utimesSync(daemonBundle, 1_000_000 + seconds, 1_000_000 + seconds);
    },
    removeCliBundle: () => rmSync(join(root, "dist", "src", "cli-bundle"), { recursive: true, force: true }),
    async berth(args: readonly string[]): Promise<string> {
      const r = await runNode([join(cli, "berth.cjs"), ...args]);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout;
    },
  };
}

describe("the installed berth, in a checkout", () => {
  const checkout = layout(join(work, "checkout"));

  it("runs the CLI bundle, with the command line, when it is as new as main.js or newer", async () => {
    checkout.cliBundle(0);
    expect(await checkout.berth(["place", "pkg", "--json"])).toBe('CLI bundle ["place","pkg","--json"]');
    checkout.cliBundle(100);
    expect(await checkout.berth(["--version"])).toBe('CLI bundle ["--version"]');
  });

  it("runs main.js when the CLI bundle is older than main.js (a tsc after the package build)", async () => {
    checkout.cliBundle(-100);
    expect(await checkout.berth(["place", "pkg"])).toBe('main.js ["place","pkg"]');
  });

  it("runs main.js when there is no CLI bundle (a build without the package step)", async () => {
    checkout.removeCliBundle();
    expect(await checkout.berth(["--help"])).toBe('main.js ["--help"]');
  });

  it("runs node serve from the daemon's bundle when fresh, else main.js, and never from the CLI bundle", async () => {
    checkout.cliBundle(100);
    checkout.daemonBundle(-100);
    expect(await checkout.berth(["node", "serve", "--data-dir", "x"])).toBe(
      'main.js ["node","serve","--data-dir","x"]',
    );
    checkout.daemonBundle(100);
    expect(await checkout.berth(["node", "serve", "--data-dir", "x"])).toBe(
      'daemon bundle ["node","serve","--data-dir","x"]',
    );
  });
});

describe("the installed berth, installed by npm (under node_modules)", () => {
  const installed = layout(join(work, "prefix", "lib", "node_modules", "berth-agents"));

  it("runs both bundles even when npm wrote them before main.js", async () => {
    installed.cliBundle(-1);
    installed.daemonBundle(-2);
    expect(await installed.berth(["place", "pkg"])).toBe('CLI bundle ["place","pkg"]');
    expect(await installed.berth(["node", "serve"])).toBe('daemon bundle ["node","serve"]');
  });

  it("runs main.js when the package has no CLI bundle", async () => {
    installed.removeCliBundle();
    expect(await installed.berth(["--version"])).toBe('main.js ["--version"]');
  });
});
