/**
 * A writer for the backup test: appends events to a controller database's own chain as fast as it can, one
 * transaction each, and prints each event's seq only after its commit — so every seq on stdout is a committed event.
 * It never checkpoints the WAL (as when a long reader holds checkpoints back): the committed events sit in the `-wal`
 * file, which is what a plain copy of the database file misses.
 * Usage: node chain-appender.js DB KEY_FILE   (runs until killed)
 */
import { Chain } from "../../../src/chain/chain.js";
import { loadKeyFile } from "../../../src/keys/key-file.js";
import { openDatabase } from "../../../src/store/sqlite.js";

const [dbPath, keyPath] = process.argv.slice(2);
if (!dbPath || !keyPath) throw new Error("usage: chain-appender DB KEY_FILE");
const db = openDatabase(dbPath);
db.pragma("wal_autocheckpoint = 0");
const chain = Chain.open(db, loadKeyFile(keyPath), "controller");
let i = 0;
const appendOne = () => {
  const { event } = chain.record({ source: "test", kind: "test.append", payload: { i } }, () => null);
  i += 1;
  process.stdout.write(`${event.seq}\n`);
  setImmediate(appendOne);
};
appendOne();
