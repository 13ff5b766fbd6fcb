// Package benchmark measures what the kit costs in front of a real a2a-go v2.4.0 echo
// server, over real HTTP on loopback, against the numbers of SPEC §5. It holds only
// benchmarks; BENCHMARKS.md at the repository's root has the figures and the commands
// that produced them.
//
// Each benchmark measures, in one run, b.N sends of the kit's side and b.N of its
// baseline, split into ten alternating rounds, so that a change of load on a shared
// machine affects both sides alike, and reports their ratio as a metric:
//
//   - send=unkeyed: unkeyed sends through the middleware (memstore index) against the
//     same sends to the bare server; metric kit/bare is the throughput ratio
//     (SPEC: at least 0.97).
//   - send=first: keyed first sends (a fresh key each) through the middleware against
//     unkeyed sends to the bare server; kit/bare is the throughput ratio (SPEC: at
//     least 0.90 with memstore).
//   - send=first-samebody: the same keyed first sends through the middleware against
//     the same keyed bodies sent to the bare server, which runs them as ordinary
//     messages; kit/bare is the kit's own cost, without a2a-go's cost of carrying the
//     key's metadata (informative).
//   - send=replay: retries of keyed sends whose task has completed, against keyed
//     first sends on the same server; replay/first is the latency ratio (SPEC: at
//     most 0.5).
//
// The client posts the A2A wire JSON with net/http (package testkit/wireclient builds
// bodies) and checks each answer for a task, so the client's cost is low and the
// same on both sides. It runs in the same process as the servers, so on a machine
// with few cores the ratios include the client's share of the CPU, which is the same
// on both sides and brings them towards 1. The benchmarks under conc=8 keep eight
// sends in flight (throughput); those under conc=1 send one at a time (latency).
//
// Indexes: memstore always; SQLite when built with cgo; PostgreSQL when
// IDEMPOTENCY_POSTGRES_DSN is set (on a table of a unique name, dropped afterwards).
// The ratio table against SPEC §5 is printed by
//
//	go test -run='^$' -bench=. -benchtime=1s -count=5 ./internal/e2e/benchmark | tee bench.txt
//	go run ./internal/e2e/benchmark/benchratio bench.txt
package benchmark
