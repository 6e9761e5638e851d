// node:fs as it is, plus the globSync Node.js 20 lacks (see node20.mjs).
export * from "node:fs";
export { default } from "node:fs";

export function globSync() {
  throw new Error("fs.globSync needs Node.js 22; the conformance suite's tier-check is not run here");
}
