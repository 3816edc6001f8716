// The `ldp-telemetry-client/dap` entry's WebAssembly: the Rust crate in wasm/ (the native client's DAP reports)
// compiled with cargo for wasm32-unknown-unknown (the rustup target; its Cargo.lock pins every crate), then its
// JavaScript glue written by wasm-bindgen's command-line tool, which must be the exact version of the crate's
// `wasm-bindgen` dependency (0.2.130): installed with `cargo install` into cargo's bin when it is not there. The glue
// and the .wasm go to dist/dap/wasm/, its declarations to src/dap/wasm/ too (read by tsc; neither is committed).
// The build folder is LDP_WASM_TARGET_DIR, else CARGO_TARGET_DIR, else wasm/target (CI keeps one between runs, and its
// tests that pack the client from another folder share it: only the two path crates are compiled again there).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const WASM_BINDGEN = "0.2.130";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const crate = join(root, "wasm");
const run = (cmd, args, options = {}) => execFileSync(cmd, args, { stdio: "inherit", ...options });
const cargoBin = join(process.env.CARGO_HOME ?? join(homedir(), ".cargo"), "bin");
const env = { ...process.env, PATH: `${cargoBin}:${process.env.PATH}` };

function bindgen() {
  try {
    const version = execFileSync("wasm-bindgen", ["--version"], { env }).toString().trim().split(" ")[1];
    if (version === WASM_BINDGEN) return;
    console.error(`wasm-bindgen ${version} found, ${WASM_BINDGEN} needed: installing it`);
  } catch {
    console.error(`wasm-bindgen not found: installing wasm-bindgen-cli ${WASM_BINDGEN} (cargo install, once)`);
  }
  run("cargo", ["install", "--quiet", "wasm-bindgen-cli", "--version", WASM_BINDGEN], { env });
}

const target = process.env.LDP_WASM_TARGET_DIR ?? process.env.CARGO_TARGET_DIR ?? join(crate, "target");
run("cargo", ["build", "--locked", "--quiet", "--release", "--target", "wasm32-unknown-unknown"],
  { cwd: crate, env: { ...env, CARGO_TARGET_DIR: target } });
bindgen();
const wasm = join(target, "wasm32-unknown-unknown", "release", "ldp_telemetry_client_wasm.wasm");
const out = join(root, "dist", "dap", "wasm");
mkdirSync(out, { recursive: true });
run("wasm-bindgen", ["--target", "web", "--out-dir", out, "--out-name", "ldp_dap", wasm], { env });
mkdirSync(join(root, "src", "dap", "wasm"), { recursive: true });
copyFileSync(join(out, "ldp_dap.d.ts"), join(root, "src", "dap", "wasm", "ldp_dap.d.ts"));
if (!existsSync(join(out, "ldp_dap_bg.wasm"))) throw new Error("wasm-bindgen wrote no ldp_dap_bg.wasm");
