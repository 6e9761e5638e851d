// features.mjs drives one official MCP TypeScript SDK client through the
// MCP features beside tools, for cmd/crewlet's TestTypeScriptSDKFeatures:
//
//   node features.mjs <plan.json>
//
// The plan names the SDK and transport (as harness.mjs's), a project and
// one of its items the Go test filed, and what the surface keeps:
// sessions (logging and subscriptions) or not (the seat's). It checks
// tool annotations, resources/templates/list, resources/list (every page),
// resources/read, completion/complete, prompts/list and prompts/get; with
// sessions, logging/setLevel then a log line, and resources/subscribe then
// notifications/resources/updated after a write to the item. It prints
// one JSON report: {sdk, protocol, checks: [{name, pass, detail}], fatal?}.

import { readFileSync } from "node:fs";
import { connect } from "./connect.mjs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const itemURI = `crewlet://work-items/${plan.item}`;
const report = { sdk: plan.sdk, protocol: "", checks: [] };

function record(name, detail) {
  report.checks.push({ name, pass: detail === "", detail });
}

// Notifications, kept for the checks that wait for one.
const notes = [];
let wake = () => {};
function awaitNote(ok) {
  return new Promise((resolve) => {
    const look = () => {
      if (notes.some(ok)) return resolve(true);
      wake = look;
    };
    look();
  });
}

async function check(name, f) {
  try {
    record(name, (await f()) ?? "");
  } catch (e) {
    record(name, `threw: ${e?.code !== undefined ? `${e.code} ` : ""}${e?.message ?? String(e)}`);
  }
}

function annotations(tools) {
  const byName = Object.fromEntries(tools.map((t) => [t.name, t.annotations ?? {}]));
  for (const t of tools) {
    const a = t.annotations ?? {};
    for (const h of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
      if (typeof a[h] !== "boolean") return `${t.name} has no ${h}`;
    }
    if (typeof a.title !== "string" || a.title === "") return `${t.name} has no title`;
  }
  if (byName.trash_work_item?.destructiveHint !== true) return "trash_work_item is not destructive";
  if (byName.get_work_item?.readOnlyHint !== true) return "get_work_item is not read-only";
  if (plan.sessions && byName.purge_work_item?.destructiveHint !== true) return "purge_work_item is not destructive";
  return "";
}

function text(result) {
  return (result.messages ?? []).map((m) => m.content?.text ?? "").join("\n");
}

let client;
try {
  const c = await connect(plan);
  client = c.client;
  report.protocol = c.protocol;
  client.fallbackNotificationHandler = async (n) => {
    notes.push(n);
    wake();
  };
  await check("annotations", async () => annotations((await client.listTools()).tools));
  await check("resources/templates/list", async () => {
    const { resourceTemplates } = await client.listResourceTemplates();
    const got = resourceTemplates.map((t) => t.uriTemplate);
    for (const want of ["crewlet://work-items/{key}", "crewlet://projects/{key}", "crewlet://pages/{id}", "crewlet://spaces/{key}"]) {
      if (!got.includes(want)) return `no ${want} in ${got}`;
    }
    return "";
  });
  await check("resources/list", async () => {
    const uris = [];
    let cursor;
    do {
      const page = await client.listResources(cursor ? { cursor } : {});
      uris.push(...page.resources.map((r) => r.uri));
      cursor = page.nextCursor;
    } while (cursor);
    if (!uris.includes(itemURI) || !uris.includes(`crewlet://projects/${plan.project}`)) return `${itemURI} or its project missing from ${uris.length} resources`;
    return "";
  });
  await check("resources/read", async () => {
    const { contents } = await client.readResource({ uri: itemURI });
    const obj = JSON.parse(contents[0].text);
    if (obj.item?.key !== plan.item || !obj.level || !obj.seen_through) return `read ${contents[0].text.slice(0, 200)}`;
    return "";
  });
  await check("completion/complete", async () => {
    const r = await client.complete({ ref: { type: "ref/resource", uri: "crewlet://work-items/{key}" }, argument: { name: "key", value: `${plan.project}-` } });
    if (!r.completion.values.includes(plan.item)) return `item keys: ${r.completion.values}`;
    const p = await client.complete({ ref: { type: "ref/prompt", name: "status_report" }, argument: { name: "project", value: plan.project.slice(0, 1) } });
    if (!p.completion.values.includes(plan.project)) return `projects: ${p.completion.values}`;
    return "";
  });
  await check("prompts", async () => {
    const { prompts } = await client.listPrompts();
    const names = prompts.map((p) => p.name);
    for (const want of ["triage_new_items", "status_report", "find_duplicates"]) {
      if (!names.includes(want)) return `no ${want} in ${names}`;
    }
    const r = await client.getPrompt({ name: "status_report", arguments: { project: plan.project } });
    if (!text(r).includes(plan.item)) return `status_report: ${text(r).slice(0, 300)}`;
    return "";
  });
  if (plan.sessions) {
    await check("logging", async () => {
      await client.setLoggingLevel("warning");
      const ghost = `crewlet://work-items/${plan.project}-999999`;
      await client.subscribeResource({ uri: ghost });
      await awaitNote((n) => n.method === "notifications/message" && n.params?.data?.msg === "resource_subscribe_unresolved" && n.params?.data?.uri === ghost);
      return "";
    });
    await check("subscribe", async () => {
      await client.subscribeResource({ uri: itemURI });
      const res = await client.callTool({ name: "update_work_item", arguments: { key: plan.item, status: "in_progress" } });
      if (res.isError) return `update_work_item refused: ${JSON.stringify(res.content)}`;
      await awaitNote((n) => n.method === "notifications/resources/updated" && n.params?.uri === itemURI);
      return "";
    });
  }
} catch (e) {
  report.fatal = `${e?.code !== undefined ? `${e.code} ` : ""}${e?.stack ?? String(e)}`;
}
try {
  await client?.close();
} catch {
  // The report is what matters.
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
