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
//
// `--no-sparkplug` since 29 November 2026 (twenty-seventh session): V8's baseline compiler,
// Sparkplug, on by default in Node 20, 22 and 24, turns warm functions' bytecode into machine
// code, which V8 never drops (`--flush-baseline-code` is off by default), so the start-up's
// functions keep theirs for the life of the process. Hot functions are still optimized by
// TurboFan. The full bin: `bench/memory.mjs` (Node 22.23.5, 4 fresh processes each, 5 s of hey
// per scenario) 106 / 114 MiB after http:// / intercepted load against 108 / 116, code space 1.0
// / 1.3 MiB against 2.0 / 2.5, CPU 0.099 / 0.102 CPU-s per 1,000 requests against 0.098 / 0.101;
// Node 24.22.3 (3 processes each, 5 s) 124 / 136 / 182 / 184 MiB after new TLS connections per
// request, plain and intercepted 64 MiB downloads and opaque tunnels against 127 / 154 / 188 /
// 191, CPU 0.773 against 0.733 CPU-s per 1,000 new connections, 0.61 / 2.98 against 0.66 / 3.04
// per GiB; live heap after a full collection, after 2 x (4 s http:// + 4 s intercepted) of hey,
// 16.5 MiB against 18.1 to 18.6 (Node 22). `bench/node-options-ab.mjs` (Node 22, warm processes):
// CPU per request 1.09x and then 0.93x (10 rounds) the shipped bin's for http://, 0.90x
// intercepted. `bench/startup-release-ab.mjs` (Node 24, 5 fresh processes each, three 4 s segments):
// 120.1 / 76.2 / 84.7 µs per http:// request against 125.8 / 77.7 / 72.6, 125.8 / 93.1 / 83.3 per
// intercepted one against 133.4 / 93.8 / 81.0, RSS at the end 120.5 against 122.4 and 124.8
// against 127.1. The per-request suite's CONNECT rounds (Node 24, plugin over relay, two runs
// each, alternating): 1.24x and 1.22x against 1.23x and 1.26x. Node refuses it in NODE_OPTIONS.
export const SHIPPED_NODE_ARGS = ['--max-semi-space-size=8', '--no-allocation-site-pretenuring', '--no-maglev', '--no-sparkplug']
