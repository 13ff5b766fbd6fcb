// Package crashtest holds the kit's crash test: the server of package
// crashtest/crashserver (an a2a-go echo server behind the middleware and the adapter,
// with keys in SQLite or PostgreSQL and a run log that survives the process) runs as a
// child process and is killed with SIGKILL at random points of keyed sends, then
// restarted on the same store, while its clients resend with the same key and message
// until they are answered.
//
// The test checks SPEC §5's crash promise: the agent ran at most once per key,
// counted in the run log, and no key stays refused (409) past its lease: a 409 to a
// send made after the lease of every claim the key may hold has ended fails the test.
//
//	go test ./internal/e2e/crashtest                      # short form: a few trials
//	IDEMPOTENCY_LONG=1 go test -timeout 30m ./internal/e2e/crashtest   # long form: 200 trials a store
//
// PostgreSQL runs when IDEMPOTENCY_POSTGRES_DSN is set. SQLite needs cgo.
package crashtest
