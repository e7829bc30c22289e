// The Node options `npm start` runs the server with (package.json `scripts.start`; the test
// `package-start-node-options` keeps the two equal). The harnesses start ours with them by
// default, so "the bin as shipped" means what `npm start` runs.
//
// None since 25 November 2026. `--max-semi-space-size=4` (V8's young generation capped at 8 MiB)
// was shipped for a day: it saved about 20 MiB of RSS after loopback runs against nginx, but
// cost 50 to 90% more CPU per http:// request against a Node destination, answering at once or
// after 20 ms, and left RSS higher in three of those four cases (`node bench/young-generation.mjs`,
// docs/benchmarks.md, Memory): objects of requests in flight outlive a small young generation.
export const SHIPPED_NODE_ARGS = []
