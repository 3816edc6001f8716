// The docs say what this client does: docs/typescript-client.md's "protocols" and "not yet" rows and the TypeScript
// column of docs/conformance.md's clients table match the registry (`python conformance/docs_tables.py` rewrites
// them); the package's README and CHANGELOG exist and name this version.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { NOT_YET, PROTOCOLS } from "../dist/protocols/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const names = (list) => [...list].sort().map((n) => `\`${n}\``).join(", ") || "none";

test("docs/typescript-client.md lists the protocols and the not-yet list of the registry", () => {
  const page = readFileSync(join(root, "docs", "typescript-client.md"), "utf8").split("\n");
  assert.ok(page.includes(`| protocols | ${names(Object.keys(PROTOCOLS))} |`), "protocols row (run conformance/docs_tables.py)");
  assert.ok(page.includes(`| not yet | ${names(NOT_YET)} |`), "not-yet row (run conformance/docs_tables.py)");
});

test("docs/conformance.md's TypeScript column matches the registry", () => {
  const rows = readFileSync(join(root, "docs", "conformance.md"), "utf8").split("\n").filter((l) => /^\| `[a-z-]+` \| yes \| (yes|not yet) \| /.test(l));
  assert.ok(rows.length >= 28);
  for (const row of rows) {
    const [, name, , ts] = row.split("|").map((c) => c.trim());
    const protocol = name.slice(1, -1);
    assert.equal(ts, protocol in PROTOCOLS ? "yes" : "not yet", protocol);
  }
});

test("the package has a README and a CHANGELOG naming its version", () => {
  const pkg = JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8"));
  const changelog = readFileSync(join(here, "..", "CHANGELOG.md"), "utf8");
  assert.match(changelog, new RegExp(`^## ${pkg.version.replace(/\./g, "\\.")}\\b`, "m"));
  assert.match(readFileSync(join(here, "..", "README.md"), "utf8"), new RegExp(`${pkg.name}-${pkg.version}\\.tgz`));
});
