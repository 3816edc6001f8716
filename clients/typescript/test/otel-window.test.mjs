// One window of the instruments a spec declares and its one value per metric (src/otel/window.ts), as the Python
// client's ldp/otel/window.py: each `value` of the spec's `otel` table, ties, the bucket mapping of the SDK's bounds
// onto the spec's, unfit points counted and never reported, and the tally as plain JSON.
import { test } from "node:test";
import assert from "node:assert/strict";

import { CollectionSpec } from "../dist/index.js";
import { TALLY_FORMAT, WindowTally, bucketMap, declaredMetrics } from "../dist/otel/index.js";

const SPEC = CollectionSpec.fromDict({ spec_version: 1, name: "app", budget: { per_window: 100, lifetime: 1000 }, metrics: {
  crashed: { protocol: "rr", params: { p: 0.25, q: 0.75 }, budget: { per_report: 1.1 },
    otel: { instrument: "app.crashes", kind: "counter", value: "any" } },
  errors2: { protocol: "grr", params: { epsilon: 1, domain_size: 2 }, budget: { per_report: 1 },
    otel: { instrument: "app.errors", kind: "histogram", value: "any" } },
  opened: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "files.opened", kind: "counter", value: "sum" } },
  depth: { protocol: "hybrid", params: { epsilon: 1, low: -10, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "queue.depth", kind: "updown_counter", value: "sum" } },
  battery: { protocol: "piecewise", params: { epsilon: 1, low: 0, high: 100, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "battery.level", kind: "gauge", value: "last" } },
  startup: { protocol: "duchi", params: { epsilon: 1, low: 0, high: 10, clip: true }, budget: { per_report: 1 },
    otel: { instrument: "startup.seconds", kind: "histogram", value: "mean" } },
  latency: { protocol: "grr", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 },
    otel: { instrument: "http.duration", kind: "histogram", value: "bucket", buckets: [100, 250] } },
  screen: { protocol: "grr", params: { epsilon: 1, domain_size: 3, labels: ["home", "search", "profile"] },
    budget: { per_report: 1 }, otel: { instrument: "ui.views", kind: "counter", value: "attribute", attribute: "screen" } },
  theme: { protocol: "oue", params: { epsilon: 1, domain_size: 3 }, budget: { per_report: 1 },
    otel: { instrument: "ui.theme", kind: "histogram", value: "attribute", attribute: "theme", values: ["dark", "light", "café"] } },
  query: { protocol: "cms", params: { epsilon: 2, width: 8, num_hashes: 2 }, budget: { per_report: 2 },
    otel: { instrument: "search.queries", kind: "counter", value: "attribute", attribute: "q" } },
} });

const DECLARED = new Map([...declaredMetrics(SPEC).values()].flat().map((d) => [d.metric, d]));
const ALL = [...DECLARED.values()];
const T = [1_800_000_000, 0];

const num = (value, attributes = {}, endTime = T) => ({ attributes, value, endTime });
const hist = (counts, boundaries, sum, attributes = {}) =>
  ({ attributes, endTime: T, value: { count: counts.reduce((a, b) => a + b, 0), sum, buckets: { boundaries, counts } } });

function tallyOf(adds) {
  const t = new WindowTally(7);
  for (const [metric, kind, points] of adds) t.add(DECLARED.get(metric), kind, points);
  return t;
}

test("declaredMetrics: each instrument by its name in lowercase, with its protocol's class and categories", () => {
  const d = declaredMetrics(SPEC);
  assert.deepEqual([...d.keys()].sort(), ["app.crashes", "app.errors", "battery.level", "files.opened", "http.duration",
    "queue.depth", "search.queries", "startup.seconds", "ui.theme", "ui.views"]);
  assert.deepEqual(DECLARED.get("screen").categories, ["home", "search", "profile"]);
  assert.deepEqual(DECLARED.get("theme").categories, ["dark", "light", "café"]);
  assert.equal(DECLARED.get("query").categories, null);
  assert.deepEqual(ALL.map((x) => [x.metric, x.valueClass]).sort(), [["battery", "number"], ["crashed", "boolean"],
    ["depth", "number"], ["errors2", "category"], ["latency", "category"], ["opened", "number"], ["query", "string"],
    ["screen", "category"], ["startup", "number"], ["theme", "category"]]);
});

test("an empty window: any is false (0 for two categories), sum 0, the others have no value", () => {
  const values = new WindowTally(7).values(ALL);
  assert.deepEqual(Object.fromEntries(values), { crashed: false, errors2: 0, opened: 0, depth: 0 });
});

test("any: the counter's sum, the histogram's count, above 0", () => {
  const values = tallyOf([
    ["crashed", "counter", [num(0), num(2, { a: "x" })]],
    ["errors2", "histogram", [hist([0, 1], [5], 7)]],
  ]).values(ALL);
  assert.equal(values.get("crashed"), true);
  assert.equal(values.get("errors2"), 1);
  assert.equal(tallyOf([["crashed", "counter", [num(0)]]]).values(ALL).get("crashed"), false);
});

test("sum: the window's sum over every point and collection, negative for an up-down counter", () => {
  const values = tallyOf([
    ["opened", "counter", [num(2, { f: "a" }), num(3.5, { f: "b" })]],
    ["opened", "counter", [num(1)]],
    ["depth", "updown_counter", [num(4), num(-7)]],
  ]).values(ALL);
  assert.equal(values.get("opened"), 6.5);
  assert.equal(values.get("depth"), -3);
});

test("last: the latest point's value; on a tie of times the one added last", () => {
  const t = tallyOf([["battery", "gauge", [num(80, {}, [100, 5]), num(70, {}, [100, 7]), num(90, {}, [99, 999_999_999])]]]);
  assert.equal(t.values(ALL).get("battery"), 70);
  t.add(DECLARED.get("battery"), "gauge", [num(60, { x: "1" }, [100, 7])]);
  assert.equal(t.values(ALL).get("battery"), 60);
  t.add(DECLARED.get("battery"), "gauge", [num(10, {}, [50, 0])]); // an older point changes nothing
  assert.equal(t.values(ALL).get("battery"), 60);
});

test("mean: sum / count over the window's observations; a histogram without its sum is unfit", () => {
  const t = tallyOf([["startup", "histogram", [hist([1, 2], [1], 4.5), hist([0, 0], [1], 0), hist([1], [], 1.5)]]]);
  assert.equal(t.values(ALL).get("startup"), 1.5);
  assert.equal(t.unfit, 0);
  t.add(DECLARED.get("startup"), "histogram", [{ attributes: {}, endTime: T, value: { count: 2, buckets: { boundaries: [], counts: [2] } } }]);
  assert.equal(t.unfit, 1);
  assert.equal(t.values(ALL).get("startup"), 1.5);
});

test("bucketMap: each SDK bucket in the spec bucket holding it; null when a spec bound is not an SDK bound", () => {
  assert.deepEqual(bucketMap([100, 250], [100, 250]), [0, 1, 2]);
  assert.deepEqual(bucketMap([50, 100, 200, 250, 1000], [100, 250]), [0, 0, 1, 1, 2, 2]);
  assert.equal(bucketMap([0, 5, 10, 25, 50, 75, 100, 250, 500], [100, 250.5]), null);
  assert.equal(bucketMap([], [1]), null);
  assert.deepEqual(bucketMap([1, 2], []), [0, 0, 0]);
});

test("bucket: the spec bucket holding most observations, the lowest on a tie; SDK bounds without the spec's are unfit", () => {
  const t = tallyOf([["latency", "histogram", [hist([1, 2, 0, 3], [50, 100, 250], 0), hist([0, 0, 0], [100, 250], 0)]]]);
  // spec buckets: (-inf, 100] gets 1 + 2, (100, 250] 0, (250, inf) 3: a tie of 0 and 2, the lowest wins
  assert.equal(t.values(ALL).get("latency"), 0);
  t.add(DECLARED.get("latency"), "histogram", [hist([0, 1, 0], [100, 250], 0)]);
  assert.equal(t.values(ALL).get("latency"), 0);
  t.add(DECLARED.get("latency"), "histogram", [hist([0, 0, 1], [100, 250], 0)]);
  assert.equal(t.values(ALL).get("latency"), 2);
  t.add(DECLARED.get("latency"), "histogram", [hist([0, 9], [100], 0), hist([9, 9, 9], [100, 200], 0)]);
  assert.equal(t.unfit, 2);
  assert.equal(t.values(ALL).get("latency"), 2);
  assert.equal(tallyOf([["latency", "histogram", [hist([0, 0, 0], [100, 250], 0)]]]).values(ALL).has("latency"), false);
});

test("attribute over categories: the index of the value counted most, the lowest on a tie; others unfit", () => {
  const t = tallyOf([
    ["screen", "counter", [num(2, { screen: "profile" }), num(2, { screen: "search" }), num(5, { other: "home" })]],
    ["theme", "histogram", [hist([3], [], 1, { theme: "café" }), hist([1], [], 1, { theme: "dark" })]],
  ]);
  assert.equal(t.values(ALL).get("screen"), 1); // search (index 1) and profile (2) tie at 2; the point without the attribute says nothing
  assert.equal(t.values(ALL).get("theme"), 2); // values name the categories: café is index 2
  assert.equal(t.unfit, 0);
  t.add(DECLARED.get("screen"), "counter", [num(9, { screen: "settings" }), num(9, { screen: 3 }), num(0, { screen: "zero" })]);
  assert.equal(t.unfit, 2); // not a category, not a string; a zero amount is not looked at
  assert.equal(t.values(ALL).get("screen"), 1);
  t.add(DECLARED.get("screen"), "counter", [num(1, { screen: "profile" })]);
  assert.equal(t.values(ALL).get("screen"), 2);
});

test("attribute over strings: the value counted most, the smallest by code point on a tie", () => {
  const t = tallyOf([["query", "counter", [num(2, { q: "\u{1F600}" }), num(2, { q: "\uFFFF" }), num(1, { q: "a" })]]]);
  assert.equal(t.values(ALL).get("query"), "\uFFFF"); // U+FFFF < U+1F600 (though "\uFFFF" > "\uD83D" in UTF-16 order)
  const proto = tallyOf([["query", "counter", [num(3, { q: "__proto__" }), num(1, { q: "constructor" })]]]);
  assert.equal(proto.values(ALL).get("query"), "__proto__");
  const back = WindowTally.fromJSON(JSON.parse(JSON.stringify(proto.toJSON())));
  assert.equal(back.values(ALL).get("query"), "__proto__");
  // an attribute named as an Object.prototype member is read only as the point's own
  const own = tallyOf([["query", "counter", [num(1, {})]]]);
  own.add({ ...DECLARED.get("query"), source: { ...DECLARED.get("query").source, attribute: "toString" } }, "counter", [num(1, {})]);
  assert.equal(own.values(ALL).has("query"), false);
});

test("a closed window takes nothing more; close drops what it held", () => {
  const t = tallyOf([["opened", "counter", [num(4)]]]);
  t.close();
  assert.equal(t.closed, true);
  assert.equal(t.empty, true);
  t.add(DECLARED.get("opened"), "counter", [num(5)]);
  assert.equal(t.values(ALL).get("opened"), 0);
});

test("the tally as plain JSON: the same values back; anything else refused", () => {
  const t = tallyOf([
    ["crashed", "counter", [num(1)]], ["opened", "counter", [num(2.5)]], ["battery", "gauge", [num(33, {}, [5, 5])]],
    ["startup", "histogram", [hist([1, 1], [1], 3)]], ["latency", "histogram", [hist([0, 2, 1], [100, 250], 0)]],
    ["screen", "counter", [num(1, { screen: "home" }), num(1, { screen: "nope" })]], ["query", "counter", [num(1, { q: "x" })]],
  ]);
  const doc = JSON.parse(JSON.stringify(t.toJSON()));
  assert.equal(doc.format, TALLY_FORMAT);
  assert.equal(doc.window, 7);
  assert.equal(doc.unfit, 1);
  const back = WindowTally.fromJSON(doc);
  assert.deepEqual(back.values(ALL), t.values(ALL));
  assert.deepEqual(back.toJSON(), t.toJSON());
  for (const bad of [null, [], { ...doc, format: "x" }, { ...doc, window: 1.5 }, { ...doc, closed: 1 }, { ...doc, totals: [] },
    { ...doc, totals: { a: "1" } }, { ...doc, last: { battery: [1] } }, { ...doc, tallies: { a: { b: null } } }]) {
    assert.throws(() => WindowTally.fromJSON(bad), TypeError, JSON.stringify(bad));
  }
});
