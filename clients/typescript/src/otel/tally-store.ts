/**
 * The window tally of a `PrivatizingMetricReader` kept in the device's state (`DeviceState.otel`, beside the budget
 * ledger), so that a process or page that stops mid-window continues it at its next start. The saved tally names
 * its spec's fingerprint: another spec's, or one that cannot be read, is set aside.
 */
import { diag } from "@opentelemetry/api";
import type { CollectionSpec } from "../spec.js";
import type { StateStore } from "../state.js";
import { WindowTally } from "./window.js";

/** The tally kept in `store`, if it is `spec`'s and readable; else `fresh` (the reader's own, of the window it was
 * made in). */
export async function loadTally(store: StateStore, spec: CollectionSpec, fresh: WindowTally): Promise<WindowTally> {
  const doc = await store.transact((tx) => tx.state?.otel, { readOnly: true });
  if (doc === undefined) return fresh;
  try {
    if ((doc as { spec?: unknown }).spec !== spec.fingerprint) throw new TypeError("another spec's tally");
    return WindowTally.fromJSON(doc);
  } catch (err) {
    diag.warn(`ldp: the saved window tally is set aside (${(err as Error).message}): starting the window anew`);
    return fresh;
  }
}

/** Keeps `tally` in `store` (a write only when it changed). While the device is opted out, none is kept, there or
 * in `tally` (cleared). */
export async function saveTally(store: StateStore, spec: CollectionSpec, tally: WindowTally): Promise<void> {
  const doc = { ...tally.toJSON(), spec: spec.fingerprint };
  const optedOut = await store.transact((tx) => {
    const state = tx.state;
    if (state === null) return false;
    if (state.optedOut) {
      delete state.otel;
      return true;
    }
    state.otel = doc;
    return false;
  });
  if (optedOut) tally.clear();
}
