/**
 * The generic parameter check: what a protocol's generated table (`params/tables.ts`) declares of each parameter (its
 * type, its ranges in order, its choices), checked as the Python client checks it, with the same refusal (`code` and
 * `fields`; the message is `describeRefusal`'s). A module of its own, below `params/base.ts` and `random.ts`, which
 * both use it.
 */
import { ExpectedKind, LdpTypeError, LdpValueError, kindOf } from "../errors.js";
import type { ParamRow } from "./tables.js";

/**
 * The client's integer rule: whether a JS `number` stands for a Python `int`, i.e. it is integral with |x| <= 2^53.
 * Every integer of [-2^53, 2^53] is exactly a double, and the conformance vectors give `9007199254740992` (2^53) as
 * a JSON integer, which `JSON.parse` makes this number. An integral number beyond ±2^53 is a float, as Python's
 * `float` of it: a double there stands for no one integer (`2 ** 53 + 1 === 2 ** 53`), so `2 ** 64` is refused where
 * an index is wanted (`value_type`, got `"float"`), as Python refuses `2.0 ** 64`. An integer beyond ±2^53 is given
 * as a `bigint`, which is an int of any size, as Python's `int` (`2n ** 64n`: `value_range`, as Python's `2 ** 64`).
 * A JSON `2.0` is an int here, where Python reads a float: JS cannot tell them apart.
 */
export function isPyInt(x: unknown): x is number {
  return typeof x === "number" && Number.isInteger(x) && Math.abs(x) <= 2 ** 53;
}

/** The name of a row of `rows`. */
export type RowName<R extends readonly ParamRow[]> = R[number]["name"];

/** The strings row `N` of `rows` may be (its `choices`): `ChoiceOf<typeof PEM_PARAMS, "oracle">` is
 * `"olh" | "grr" | "auto"`. */
export type ChoiceOf<R extends readonly ParamRow[], N extends RowName<R>> =
  Extract<R[number], { readonly name: N }> extends { readonly choices: readonly (infer C)[] } ? C : never;

/**
 * The checks a protocol's generated table declares (`rows`, in its order): each parameter's type (`param_type`;
 * `float`, `int`, `optint` (null, or an int), `bool`), its ranges in order (`param_range` with exactly that range's
 * bounds) and its choices (`param_choice`). A table's other types (lists, labels, strings that are no choice,
 * `multi`'s attributes) are the protocol's to parse, with the rules that join parameters (`relation`).
 *
 * `from` and `to` (row names, both included; default: the first and last row) check part of the table, so a
 * constructor interleaves its rules where the Python check makes them and the first refusal is Python's. `dynamic`:
 * the `max` of each row whose range is `dynamic`, computed when that row is reached (the rows before it checked).
 */
export function checkParams<R extends readonly ParamRow[]>(values: Readonly<Record<string, unknown>>, rows: R, from?: RowName<R>,
  to?: RowName<R>, dynamic: { readonly [name in RowName<R>]?: () => number } = {}): void {
  let on = from === undefined;
  for (const row of rows) {
    on ||= row.name === from;
    if (on) checkParam(values[row.name], row, (dynamic as Record<string, () => number>)[row.name]);
    if (row.name === to) return;
  }
}

/** One row's checks of `value` (`checkParams`); `max`: the bound of a `dynamic` range. */
export function checkParam(value: unknown, row: ParamRow, max?: () => number): void {
  const { name: param, type, choices } = row;
  if (choices) {
    if (!choices.includes(value as string)) throw new LdpValueError("param_choice", { param, choices, got: value ?? null });
    return;
  }
  if (value === null && type === "optint") return;
  const expected = type === "optint" ? "int" : type;
  if (expected === "float" ? typeof value !== "number" : expected === "int" ? !isPyInt(value) :
    expected === "bool" && typeof value !== "boolean") {
    throw new LdpTypeError("param_type", { param, expected: expected as ExpectedKind, got: kindOf(value) });
  }
  const x = value as number;
  for (const { dynamic, ...bounds } of row.ranges ?? []) {
    if (dynamic) (bounds as { max?: number }).max = max!();
    const { min, max: top, min_exclusive, max_exclusive, finite } = bounds;
    if (!((min === undefined || (min_exclusive ? x > min : x >= min)) &&
      (top === undefined || (max_exclusive ? x < top : x <= top)) && (!finite || Number.isFinite(x)))) {
      throw new LdpValueError("param_range", { param, got: x, ...bounds });
    }
  }
}

