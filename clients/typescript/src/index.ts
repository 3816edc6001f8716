/**
 * The public exports of the ldp TypeScript client (browser-safe: nothing here imports `node:*`; the Node file store
 * is exported by `./node.js`): the core (`./core.js`).
 */
export * from "./core.js";
