// The conformance suite 0.1.16 is built for Node.js 20 but imports
// globSync from "fs", which Node.js has only from 22 on; the machine's
// Node.js is 20. Only its tier-check command calls globSync (the server
// scenarios never do), so this hook hands the suite an "fs" with every
// export of the real one plus a globSync that says it is missing, instead
// of letting the whole suite fail to load. Loaded with
// `node --import ./node20.mjs`.
import { register } from "node:module";

register("./node20-hooks.mjs", import.meta.url);
