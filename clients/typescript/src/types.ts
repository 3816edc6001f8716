/**
 * The value each protocol records, as TypeScript types, so that a spec gives typed metric names and values:
 *
 * * from a spec written in TypeScript `as const`: `TelemetryClient.open<MetricValues<typeof SPEC>>(...)`;
 * * from a spec file: `npx ldp-spec-types spec.json > metrics.ts` writes the same `Metrics` interface
 *   (`bin/ldp-spec-types.mjs`, which reads `VALUE_KINDS`).
 *
 * A value kind per protocol and per shared kind (`VALUE_KINDS`; `poplar1`'s strings are `text`): `binary` (`true`/`false` or 0/1), `label` (one of the metric's labels,
 * or an index into its domain), `number` (a finite real), `text` (a string, or bytes), `word` (a string), `record`
 * (`multi`: an object of its attributes' values).
 */

/** How each protocol's values look. */
export const VALUE_KINDS = /* @__PURE__ */ Object.freeze({
  rr: "binary",
  grr: "label", sue: "label", oue: "label", olh: "label", blh: "label", hr: "label", ss: "label", "hr-block": "label",
  lgrr: "label", loue: "label", thresh: "label", pgr: "label", hpg: "label",
  duchi: "number", piecewise: "number", hybrid: "number", "memo-mean": "number", "bucket-grr": "number",
  "bucket-oue": "number", dbitflip: "number", "memo-dbitflip": "number", hh: "number",
  rappor: "text", cms: "text", hcms: "text", "rappor-ngrams": "text", pem: "text", poplar1: "text",
  sfp: "word",
  multi: "record",
} as const);

export type ValueKind = (typeof VALUE_KINDS)[keyof typeof VALUE_KINDS];

type LabelValue<P> = P extends { readonly labels: readonly (infer L)[] } ? (L extends string ? L : never) | number : number;

/** The value a metric of protocol `Proto` with params `P` records. */
export type ValueOf<Proto, P> = Proto extends keyof typeof VALUE_KINDS
  ? { binary: boolean | 0 | 1; label: LabelValue<P>; number: number; text: string | Uint8Array; word: string;
      record: Record<string, unknown> }[(typeof VALUE_KINDS)[Proto]]
  : unknown;

/** A spec document's shape, as far as the types need it. */
export interface SpecShape {
  readonly metrics: {
    readonly [name: string]: { readonly protocol: string; readonly params?: unknown; readonly trust?: string };
  };
}

/** Each metric of spec `S` (written `as const`) with the type of its values (a two-aggregator metric's too: recorded
 * given its task, `ldp-telemetry-client/dap`). */
export type MetricValues<S extends SpecShape> = {
  -readonly [K in keyof S["metrics"]]: ValueOf<S["metrics"][K]["protocol"], S["metrics"][K]["params"]>;
};
