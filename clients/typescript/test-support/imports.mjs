// The import graph of the client's sources and the cycles in it (test/structure.test.mjs).
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

// Every module specifier a TypeScript file names: `import … from "x"`, `import type … from "x"`, `import "x"`,
// `export … from "x"` and `import("x")`. Comments are removed first so that an example in a doc comment is not
// taken for an import.
const SPECIFIER = /(?:\bimport\s*(?:type\s+)?(?:[\w*{}\s,$]+\s+from\s+)?|\bexport\s+(?:type\s+)?[\w*{}\s,$]*\s+from\s+|\bimport\s*\(\s*)["']([^"']+)["']/g;

export function specifiers(source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  return [...code.matchAll(SPECIFIER)].map((m) => m[1]);
}

function tsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []);
}

/** `{file: [files it imports]}` over `src/**\/*.ts`, paths relative to `root`; `.js` specifiers resolve to `.ts`. */
export function importGraph(root) {
  const graph = {};
  for (const file of tsFiles(join(root, "src"))) {
    const deps = specifiers(readFileSync(file, "utf8"))
      .filter((s) => s.startsWith("."))
      .map((s) => relative(root, resolve(dirname(file), s.replace(/\.js$/, ".ts"))));
    graph[relative(root, file)] = [...new Set(deps)].sort();
  }
  return graph;
}

/** Every cycle of `graph` found by a depth-first search, each as the list of its nodes (first repeated last). */
export function cycles(graph) {
  const state = new Map(); // node -> "open" while on the path, "done" after
  const path = [];
  const found = [];
  const visit = (node) => {
    state.set(node, "open");
    path.push(node);
    for (const next of graph[node] ?? []) {
      if (state.get(next) === "open") found.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, "done");
  };
  for (const node of Object.keys(graph).sort()) if (!state.has(node)) visit(node);
  return found;
}
