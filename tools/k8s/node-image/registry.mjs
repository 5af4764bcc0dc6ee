// A registry that has nothing, for the real-node stack (tools/k8s/stack.sh), run inside the node's namespace on
// 127.0.0.1:<port> as registry.berth.invalid. It answers as registries do when a pull cannot succeed, chosen by the
// repository's name, so the kubelet's real pull-failure texts can be tested. The names are neutral words on purpose:
// a classifier reading free text must not be helped by a repository called "unauthorized".
//   /v2/locked/…     401 UNAUTHORIZED (no challenge: there is no token to fetch)
//   anything else    404 MANIFEST_UNKNOWN
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 5000);
const answer = (res, status, code, message) => {
  const body = JSON.stringify({ errors: [{ code, message, detail: null }] });
  res.writeHead(status, { "content-type": "application/json", "docker-distribution-api-version": "registry/2.0", "content-length": Buffer.byteLength(body) });
  res.end(body);
};
createServer((req, res) => {
  const path = new URL(req.url ?? "/", "http://registry").pathname;
  process.stdout.write(`${req.method} ${path}\n`);
  if (path === "/v2/" || path === "/v2") return answer(res, 200, "OK", "ok");
  const repo = path.split("/")[2] ?? "";
  if (repo === "locked") return answer(res, 401, "UNAUTHORIZED", "authentication required");
  return answer(res, 404, "MANIFEST_UNKNOWN", "manifest unknown");
}).listen(port, "127.0.0.1");
