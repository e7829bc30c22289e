// The Node options `npm start` runs the server with (package.json `scripts.start`, and the
// container image's ENTRYPOINT; the test `package-start-node-options` keeps the three equal).
// The harnesses start ours with them by default, so "the bin as shipped" means what `npm start`
// runs.
//
// `--max-semi-space-size=8` since 27 November 2026: V8's young generation stops at 16 MiB, where
// it grows to 32 MiB on Node 20 and 22 and to 64 MiB on Node 24. `node bench/young-generation.mjs`
// (destinations answering at once and after 20 ms, 32 and 256 connections) found the same CPU
// per request with it and without it, and 10 to 16 MiB less RSS on Node 20, 30 to 97 MiB less on
// Node 24. A smaller cap costs CPU: `=4` (8 MiB) was shipped for a day on 25 November and cost 50
// to 90% more CPU per request against destinations that take time to answer, whose requests'
// objects outlive a young generation that small.
export const SHIPPED_NODE_ARGS = ['--max-semi-space-size=8']
