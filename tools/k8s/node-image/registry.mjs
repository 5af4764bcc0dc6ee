// A registry that has nothing, for the real-node stack (tools/k8s/stack.sh), run inside the node's namespace on
// 127.0.0.1:<port> as registry.berth.invalid. It answers as registries do when a pull cannot succeed, chosen by the
// repository's first path segment, so the kubelet's real pull-failure texts can be tested:
//   /v2/unauthorized/…  401 UNAUTHORIZED (no challenge: no token to fetch)
//   /v2/denied/…        403 DENIED
//   anything else       404 MANIFEST_UNKNOWN
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
  if (repo === "unauthorized") return answer(res, 401, "UNAUTHORIZED", "authentication required");
  if (repo === "denied") return answer(res, 403, "DENIED", "requested access to the resource is denied");
  return answer(res, 404, "MANIFEST_UNKNOWN", "manifest unknown");
}).listen(port, "127.0.0.1");
