// client.mjs URL TENANT DESCRIPTORS START_MS END_MS STEP OUT_PREFIX
// Calls unhex with connect-es (createClient over the Connect transport of
// @connectrpc/connect-node), once with JSON and once with binary protobuf,
// and writes SelectSeries points as "service timestamp value" lines to
// OUT_PREFIX.json and OUT_PREFIX.proto for the shell test to compare.
import { readFileSync, writeFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { fromBinary, createFileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

const [url, tenant, desc, start, end, step, out] = process.argv.slice(2);
const CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const reg = createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(desc)));
const svc = reg.getService("querier.v1.QuerierService");
if (!svc) throw new Error("no querier.v1.QuerierService in " + desc);

for (const binary of [false, true]) {
  const transport = createConnectTransport({
    baseUrl: url,
    httpVersion: "1.1",
    useBinaryFormat: binary,
    interceptors: [(next) => async (req) => { req.header.set("X-Scope-OrgID", tenant); return next(req); }],
  });
  const client = createClient(svc, transport);
  const types = await client.profileTypes({ start: BigInt(start), end: BigInt(end) });
  if (!types.profileTypes.some((t) => t.ID === CPU)) throw new Error("ProfileTypes lacks " + CPU);
  const stats = await client.getProfileStats({});
  if (!stats.dataIngested) throw new Error("GetProfileStats: no data");
  const r = await client.selectSeries({
    profileTypeID: CPU, labelSelector: "{}", start: BigInt(start), end: BigInt(end),
    step: Number(step), groupBy: ["service_name"],
  });
  const lines = [];
  for (const s of r.series) {
    const svcName = s.labels.find((l) => l.name === "service_name").value;
    for (const p of s.points) lines.push(`${svcName} ${p.timestamp} ${p.value.toFixed(3)}`);
  }
  writeFileSync(out + (binary ? ".proto" : ".json"), lines.join("\n") + "\n");
  console.log(`connect-es ${binary ? "binary" : "JSON"}: ${types.profileTypes.length} types, ` +
              `${r.series.length} series, ${lines.length} points`);
}
