import { it } from "vitest";
import { writeFileSync } from "node:fs";
import { apiFixture } from "../server/support.js";
it("m", async () => { const fx = await apiFixture(); writeFileSync("/tmp/firstb-metrics.txt", (await fx.call("GET", "/metrics")).text); await fx.close(); });
