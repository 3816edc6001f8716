// JSON as Python reads it (docs/conformance.md §4, "JSON numbers in JavaScript"): a number token with a fraction or
// an exponent is a float, kept as a `PyFloat`; every other value as `JSON.parse` gives it. `JSON.parse` makes `7.0`
// and `7` the same number, and a refusal text names them differently ("value 7.0 is outside…", "value 7 is…").
// Kept outside test/ because `node --test` runs every file under a test/ folder.
import { PyFloat } from "../dist/canonical.js";

/** `text` parsed, float tokens as `PyFloat`. Strict enough for the vector files (which `JSON.parse` accepts). */
export function parseKeepingFloats(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = () => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const out = {};
      ws();
      if (text[i] === "}") return i++, out;
      for (;;) {
        ws();
        const key = value();
        ws();
        i++; // ':'
        out[key] = value();
        ws();
        if (text[i++] === "}") return out;
      }
    }
    if (c === "[") {
      i++;
      const out = [];
      ws();
      if (text[i] === "]") return i++, out;
      for (;;) {
        out.push(value());
        ws();
        if (text[i++] === "]") return out;
      }
    }
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      const s = JSON.parse(text.slice(i, j + 1));
      i = j + 1;
      return s;
    }
    const m = /^(?:true|false|null|-?\d+(\.\d+)?([eE][-+]?\d+)?)/.exec(text.slice(i, i + 400));
    if (m === null) throw new SyntaxError(`bad JSON at ${i}`);
    i += m[0].length;
    const v = JSON.parse(m[0]);
    return m[1] !== undefined || m[2] !== undefined ? new PyFloat(v) : v;
  };
  const out = value();
  ws();
  if (i !== text.length) throw new SyntaxError(`trailing JSON at ${i}`);
  return out;
}
