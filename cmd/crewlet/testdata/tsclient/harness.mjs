// harness.mjs drives one official MCP TypeScript SDK client against one
// crewlet surface, for cmd/crewlet's TestTypeScriptSDKClients:
//
//   node harness.mjs <plan.json>
//
// The plan (written by the Go test) names the SDK ("v1":
// @modelcontextprotocol/sdk 1.x, "v2": @modelcontextprotocol/client 2.x),
// the transport (stdio: a command to spawn; http: a URL and headers) and
// the steps: a tool, its arguments (with ${VAR} replaced by the plan's
// vars and the values earlier steps saved) and what the call must answer,
// "ok" or a refusal code. It lists the tools first (the SDKs compile the
// output-schema validators from tools/list), runs every step, and prints
// one JSON report on stdout; the Go test asserts on it. A step fails when
// the call throws (as the SDK does on structured content that does not
// match the output schema), when a success's text is not its structured
// content as JSON, or when a refusal is not isError with no structured
// content and one text holding {"refused": <code>, "message": "..."}.

import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import { connect as connectPlan } from "./connect.mjs";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));

// expand replaces ${VAR} in every string of v: a string that is exactly
// one reference takes the value as it is (a number stays a number).
function expand(v, vars) {
  if (typeof v === "string") {
    const whole = /^\$\{([A-Z_]+)\}$/.exec(v);
    if (whole) {
      if (!(whole[1] in vars)) throw new Error(`no value for \${${whole[1]}}`);
      return vars[whole[1]];
    }
    return v.replace(/\$\{([A-Z_]+)\}/g, (_, name) => {
      if (!(name in vars)) throw new Error(`no value for \${${name}}`);
      return String(vars[name]);
    });
  }
  if (Array.isArray(v)) return v.map((x) => expand(x, vars));
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x, vars)]));
  }
  return v;
}

// at reads a dotted path ("page.version", "pages.0.id") in an object.
function at(obj, path) {
  return path.split(".").reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

function texts(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
}

// transientRefusal is a refusal that says to come back after a while
// (behind, no_quorum, broker_unreachable: a node catching up, a broker
// electing), with its hint and the op_id a write refused so carries.
const transient = new Set(["behind", "no_quorum", "broker_unreachable"]);
function transientRefusal(result) {
  if (!result.isError) return undefined;
  try {
    const r = JSON.parse(texts(result)[0] ?? "");
    if (transient.has(r.refused) && typeof r.retry_after_seconds === "number") {
      return { after: r.retry_after_seconds, opID: r.op_id };
    }
  } catch {
    // Not a refusal's JSON: nothing to come back for.
  }
  return undefined;
}

// callSettled calls a step's tool and, where the step wants ok, calls it
// again after the hint while it is refused for a while, for up to a
// minute, as a client does: under load a node may be behind its own last
// write for longer than the read budget. A write comes back under the
// op_id its refusal named (where the tool takes one: the seat surface's
// derive it from the same call), so it is never written twice.
async function callSettled(client, step, args, takesOpID) {
  let result = await client.callTool({ name: step.tool, arguments: args });
  const deadline = Date.now() + 60_000;
  for (let t = transientRefusal(result); step.expect === "ok" && t !== undefined && Date.now() < deadline; t = transientRefusal(result)) {
    await new Promise((done) => setTimeout(done, Math.max(t.after, 0.05) * 1000));
    const again = takesOpID && t.opID !== undefined && args.op_id === undefined ? { ...args, op_id: t.opID } : args;
    result = await client.callTool({ name: step.tool, arguments: again });
  }
  return result;
}

// check returns "" when the result is what the step expects, else why not.
function check(step, result, vars) {
  const text = texts(result);
  if (step.expect === "ok") {
    if (result.isError) return `refused: ${text.join(" | ")}`;
    if (result.structuredContent === undefined) return "a success without structured content";
    if (text.length !== 1) return `a success with ${text.length} text contents, want 1`;
    let parsed;
    try {
      parsed = JSON.parse(text[0]);
    } catch (e) {
      return `the text is not JSON (${e.message}): ${text[0].slice(0, 200)}`;
    }
    if (!isDeepStrictEqual(parsed, result.structuredContent)) {
      return `the text is not the structured content: ${text[0].slice(0, 300)} vs ${JSON.stringify(result.structuredContent).slice(0, 300)}`;
    }
    const outcome = result.structuredContent.outcome;
    if (outcome !== undefined && outcome !== "applied" && outcome !== "pending") {
      return `outcome ${outcome}: ${text[0].slice(0, 300)}`;
    }
    for (const [name, path] of Object.entries(step.save ?? {})) {
      const v = at(result.structuredContent, path);
      if (v === undefined) return `nothing at ${path} to save as ${name}: ${text[0].slice(0, 300)}`;
      vars[name] = v;
    }
    return "";
  }
  if (result.isError !== true) return `not refused (want ${step.expect}): ${text.join(" | ").slice(0, 300)}`;
  if (result.structuredContent !== undefined) return `a refusal with structured content: ${JSON.stringify(result.structuredContent)}`;
  if ((result.content ?? []).length !== 1 || text.length !== 1) return `a refusal with ${(result.content ?? []).length} contents, want one text`;
  let obj;
  try {
    obj = JSON.parse(text[0]);
  } catch (e) {
    return `the refusal's text is not JSON (${e.message}): ${text[0].slice(0, 200)}`;
  }
  if (obj.refused !== step.expect) return `refused ${obj.refused}, want ${step.expect}: ${text[0].slice(0, 300)}`;
  if (typeof obj.message !== "string" || obj.message.trim() === "") return `a refusal without a message: ${text[0]}`;
  return "";
}

const report = { sdk: plan.sdk, protocol: "", tools: [], results: [] };
let client;
try {
  const c = await connectPlan(plan);
  client = c.client;
  report.protocol = c.protocol;
  const listed = await client.listTools();
  report.tools = listed.tools.map((t) => t.name);
  const withOpID = new Set(listed.tools.filter((t) => t.inputSchema?.properties?.op_id !== undefined).map((t) => t.name));
  const vars = { ...plan.vars };
  for (const [i, step] of plan.steps.entries()) {
    const r = { i, tool: step.tool, expect: step.expect, pass: false, detail: "" };
    try {
      const args = expand(step.args ?? {}, vars);
      const result = await callSettled(client, step, args, withOpID.has(step.tool));
      r.detail = check(step, result, vars);
      r.pass = r.detail === "";
    } catch (e) {
      r.detail = `threw: ${e?.code !== undefined ? `${e.code} ` : ""}${e?.message ?? String(e)}`;
    }
    report.results.push(r);
  }
} catch (e) {
  report.fatal = `${e?.code !== undefined ? `${e.code} ` : ""}${e?.stack ?? String(e)}`;
}
try {
  await client?.close();
} catch {
  // The report is what matters; a close that fails says nothing about it.
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(0);
