/**
 * A separate OS process that appends to a chain database, for the concurrency and crash tiers.
 * argv: <db> <key-file> <mode> <count>
 *   batch        append <count> events, each with a state row, one transaction per event; print each hash
 *   hold         append one event with a state row, print "ready", then block inside the open transaction
 *   commit-hold  append one event with a state row, commit, print "committed", then block
 *   forever      keep appending (state row + event) until killed
 */
import { Chain } from "../../src/chain/chain.js";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { openDatabase, withWriteTx } from "../../src/store/sqlite.js";

const [dbPath, keyFile, mode, countText] = process.argv.slice(2);
if (!dbPath || !keyFile || !mode) throw new Error("usage: append-worker <db> <key-file> <mode> [count]");
const db = openDatabase(dbPath);
db.exec("CREATE TABLE IF NOT EXISTS work_item (id TEXT PRIMARY KEY, pid INTEGER NOT NULL)");
const chain = Chain.open(db, loadKeyFile(keyFile), "controller");
const block = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120_000);

function appendOne(i: number): string {
  const id = `${process.pid}-${i}`;
  return withWriteTx(db, (tx) => {
    tx.db.prepare("INSERT INTO work_item (id, pid) VALUES (?, ?)").run(id, process.pid);
    return chain.append(tx, { source: "placement", kind: "workload.place", payload: { phase: "decision", item: id } })
      .hash;
  });
}

if (mode === "batch") {
  const count = Number(countText ?? "1");
  const hashes: string[] = [];
  for (let i = 0; i < count; i++) hashes.push(appendOne(i));
  process.stdout.write(`${hashes.join("\n")}\n`);
} else if (mode === "hold") {
  withWriteTx(db, (tx) => {
    tx.db.prepare("INSERT INTO work_item (id, pid) VALUES (?, ?)").run("held", process.pid);
    chain.append(tx, { source: "placement", kind: "workload.place", payload: { phase: "decision", item: "held" } });
    process.stdout.write("ready\n");
    block();
  });
} else if (mode === "commit-hold") {
  appendOne(0);
  process.stdout.write("committed\n");
  block();
} else if (mode === "forever") {
  process.stdout.write("started\n");
  for (let i = 0; ; i++) appendOne(i);
} else {
  throw new Error(`unknown mode ${mode}`);
}
