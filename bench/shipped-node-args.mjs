// The Node options `npm start` runs the server with (package.json `scripts.start`; the test
// `package-start-node-options` keeps the two equal). The harnesses start ours with them by
// default, so "the bin as shipped" means what `npm start` runs.
//
// --max-semi-space-size=4: V8's young generation capped at 8 MiB instead of Node 20's 32 MiB.
// About 20 to 25 MiB less resident memory after load, for 0 to 10% more CPU per request
// (docs/benchmarks.md, Memory).
export const SHIPPED_NODE_ARGS = ['--max-semi-space-size=4']
