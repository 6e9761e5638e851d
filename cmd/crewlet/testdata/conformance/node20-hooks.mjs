// Module hooks for node20.mjs: inside the conformance package, "fs" is
// resolved to fs-globsync.mjs.
import fs from "node:fs";

const shim = new URL("./fs-globsync.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  if ((specifier === "fs" || specifier === "node:fs") && context.parentURL?.includes("/@modelcontextprotocol/conformance/") && typeof fs.globSync !== "function") {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}
