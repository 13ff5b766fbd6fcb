// Package cost measures what the kit costs the way SPEC §5 states it: CPU per
// request of each process, over a fixed number of requests, in one run, with the
// configurations interleaved, so that their ratios survive a shared, noisy machine.
// Requests per second are reported beside, for scale only.
//
// TestProcessCost (opt-in: IDEMPOTENCY_COST=1) runs the a2a-go echo upstream
// (internal/e2e/upstream), a tuned httputil.ReverseProxy (./hop) and the sidecar
// (cmd/a2a-idempotency-proxy) as processes of their own, and sends a fixed number of
// JSON-RPC and HTTP+JSON SendMessage requests, a fresh message id (and key) each,
// from this process to: the upstream directly; through the hop; through the sidecar
// unkeyed; and keyed, with the sidecar's keys in SQLite and, when
// IDEMPOTENCY_POSTGRES_DSN is set, PostgreSQL through pgx and through lib/pq
// (-postgres-driver), and Redis when IDEMPOTENCY_REDIS_URL is set; on JSON-RPC, also
// keyed on SQLite with early bind off, and with synchronous=NORMAL (no fsync at each
// commit: what the fsync costs). Keyed bodies go to the upstream and the hop too, so
// that every keyed row compares the same bytes. For every run it reads each process's CPU time from
// /proc/<pid>/task/*/schedstat (nanoseconds the scheduler ran its threads) and its
// heap allocations (runtime.MemStats.Mallocs, through a debug listener compiled into
// the binaries with go build -overlay, so that no command carries test code); each
// row is the median over the rounds, and the "/hop" column is the ratio of the front
// process's CPU to the hop's in the same round, before the median is taken.
// IDEMPOTENCY_COST_PROFILE=dir also writes CPU and allocation profiles of the
// sidecar (unkeyed, and keyed on SQLite) to dir and prints their top frames.
// IDEMPOTENCY_COST_BASELINE_OVERLAY=overlay.json also runs a baseline build of the
// sidecar, its files replaced as the overlay says (go help build), unkeyed and keyed
// on SQLite, interleaved with the others: a before/after comparison in one run.
//
// TestInProcessInstructions (opt-in: IDEMPOTENCY_COST_CALLGRIND=1, slow: about a
// minute a configuration) runs this test binary again under valgrind --tool=callgrind
// (GODEBUG=asyncpreemptoff=1, GOGC=off unless IDEMPOTENCY_COST_GOGC says otherwise:
// collection cycles come in steps too coarse for a few hundred sends, so the figure
// is the work itself, allocations included, collection excluded; allocations and
// bytes a send are reported beside) for each of: bare a2a-go unkeyed; bare a2a-go fed
// keyed bodies; the kit unkeyed; the kit on keyed first sends with memstore. Each
// child serves its sends through the handler in-process, one at a time, without a
// network; it runs twice, with two counts of sends, and the difference of the two
// runs' instruction totals over the difference of the counts is the instructions per
// send, free of start-up. Instruction counts do not depend on what else the machine
// runs, so this is the figure the kit's own cost (SPEC §5: ≤ 5 % over bare a2a-go
// fed the same keyed bodies) is checked by.
//
// See README's "Cost" section for the commands, and BENCHMARKS.md for figures.
package cost
