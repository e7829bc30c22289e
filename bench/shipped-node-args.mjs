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
//
// `--no-allocation-site-pretenuring` since 27 November 2026 (evening): V8 watches object
// literals whose objects outlive young collections and from then on allocates that literal's
// objects in the old generation. Keep-alive load (every connection lives for the whole run)
// teaches it that a connection's objects live long; then every short CONNECT's objects went to
// the old generation, and each young collection cost 3.6 times as much (8.4 ms against 2.3).
// `node bench/after-load.mjs` (the full bin after 15 s of intercepted keep-alive load, then
// alternating CONNECT rounds against a fresh twin, 8 rounds of 2 s): 651 µs per CONNECT and a
// 169 MiB peak without the option, 569 µs and 134 MiB with it (the fresh twins 550 and 587:
// a process that only ever answered CONNECTs costs about 7% more with it on Node 20); after
// http:// load 676 against 584 µs; on Node 24 548 µs and 174 MiB against 463 and 152. In the per-request suite's
// intercepted-then-CONNECT scenarios: 628 µs per CONNECT and a 134 MiB peak with it, 686 and
// 172 without (the relay moved too, 359 against 422). http:// under hey and bench:memory's
// scenarios: the same CPU within the noise. Node refuses it in NODE_OPTIONS: it has to be on
// the command line.
//
// `--no-maglev` since 29 November 2026: V8's mid-tier optimizing compiler, on by default from
// Node 24 (Node 20 and 22 run without it, so there the option changes nothing). On Node 24 its
// compilations, off the main thread and on it, leave freed memory in glibc's malloc arenas that
// is never given back. Node 24.22.3, the full bin: `bench/memory.mjs` (4 fresh processes each,
// 5 s of hey per scenario) 121 / 132 MiB after http:// / intercepted load against 140 / 149;
// `bench/node-options-ab.mjs` (warm processes, 16 alternating rounds of 4 s) CPU per request
// 0.96x the shipped bin's for http:// and 1.04x intercepted (rounds 0.79x to 1.33x), RSS at the
// end 126 against 152 and 135 against 153; `bench/startup-release-ab.mjs` (6 fresh processes
// each, three 4 s segments of hey) CPU per request 118.7 / 78.8 / 76.6 µs against 111.7 / 73.8 /
// 80.7 for http:// and 108.2 / 84.5 / 76.6 against 115.5 / 88.1 / 85.3 intercepted, RSS at the
// end 124 against 147 and 132 against 145. Node refuses it in NODE_OPTIONS too.
export const SHIPPED_NODE_ARGS = ['--max-semi-space-size=8', '--no-allocation-site-pretenuring', '--no-maglev']
