// GitLab's own CI schema (app/assets/javascripts/editor/schema/ci.json), as the copy
// gitlab-ci-local ships to validate pipelines, printed as JSON: the test validates the
// pipelines cudamatrix writes against it (the copy is read from node_modules, never
// committed). gitlab-ci-local's own additions (its gcl* keys) are in another module.
import { schema } from "gitlab-ci-local/src/schema/schema.js";

process.stdout.write(JSON.stringify(schema));
