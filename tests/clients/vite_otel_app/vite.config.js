// The fixture builds as a developer's app would; only the output folder is named.
export default { build: { outDir: "dist", emptyOutDir: true } };
