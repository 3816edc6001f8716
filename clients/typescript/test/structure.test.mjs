// The client's sources form no import cycle: a cycle makes module initialization order-dependent (a class used
// before its module has run) and defeats tree shaking of the lite entry. The graph is read from the sources.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import { cycles, importGraph, specifiers } from "../test-support/imports.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

test("the sources have no import cycle", () => {
  const graph = importGraph(ROOT);
  assert.ok(Object.keys(graph).length > 30 && graph["src/index.ts"].length > 0, "the graph was read");
  assert.ok(graph["src/canonical.ts"].includes("src/pytext.ts"), "relative .js specifiers resolve to .ts files");
  const found = cycles(graph);
  assert.deepEqual(found, [], `import cycles: ${found.map((c) => c.join(" -> ")).join("; ")}`);
});

/** The one import that names no source file: the `dap` entry's WebAssembly glue, which wasm-bindgen writes at build
 * time (scripts/build-wasm.mjs). */
const GENERATED = new Set(["src/dap/wasm/ldp_dap.ts"]);

test("every import in the graph names a source file", () => {
  const graph = importGraph(ROOT);
  for (const [file, deps] of Object.entries(graph)) {
    for (const dep of deps) {
      assert.ok(dep in graph || GENERATED.has(dep), `${file} imports ${dep}, which is not a source file`);
    }
  }
});

test("the cycle finder finds cycles, through any path, and only them", () => {
  assert.deepEqual(cycles({ a: ["b"], b: ["c"], c: ["a"] }), [["a", "b", "c", "a"]]);
  assert.deepEqual(cycles({ a: ["a"] }), [["a", "a"]]);
  assert.deepEqual(cycles({ a: ["b", "c"], b: ["d"], c: ["d"], d: [] }), []);
  assert.deepEqual(cycles({ x: ["y"], y: ["z"], z: ["y"] }), [["y", "z", "y"]]);
});

test("every form of import is read, and commented ones are not", () => {
  const src = [
    'import { a } from "./a.js";', 'import type { B } from "./b.js";', 'import "./c.js";',
    'export { d } from "./d.js";', 'export * from "./e.js";', 'export type { F } from "./f.js";',
    'const g = await import("./g.js");', "// import { h } from \"./h.js\";", '/* import "./i.js"; */',
    'import {\n  j,\n  k,\n} from "./jk.js";',
  ].join("\n");
  assert.deepEqual(specifiers(src), ["./a.js", "./b.js", "./c.js", "./d.js", "./e.js", "./f.js", "./g.js", "./jk.js"]);
});
