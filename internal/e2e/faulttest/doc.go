// Package faulttest holds the kit's fault and bad-input tests, run against a real
// a2a-go echo server behind the kit:
//
//   - an index that fails or is slow (an injected wrapper around memstore): keyed
//     sends are refused with 503 and Retry-After and never run undeduplicated, while
//     unkeyed sends are unaffected;
//   - PostgreSQL cut off mid-load through a TCP proxy on loopback (every connection
//     dropped, new ones refused, then restored), which the real server does not
//     notice: no key runs twice, and the service recovers;
//   - bad input (bodies over the limit, truncated JSON, wrong types, huge and deep
//     metadata, non-UTF-8 keys, keys with CR/LF): clear refusals, nothing run, and
//     no raw key in the logs;
//   - hostile clients (TestHostileClients): requests that announce 10 MiB and stall
//     after one byte hold about 46 KiB each; floods of keyed follow-ups to unknown
//     tasks hold no key; 1 MiB message ids and 4 MiB tenants are refused before
//     anything is claimed; a JSON-RPC handler mounted on "/" runs a keyed send sent
//     to two paths once; a full index answers 429 and still answers retries; the
//     index stays within memstore.Options.MaxBytes.
//
// Run them with
//
//	go test ./internal/e2e/faulttest
//	IDEMPOTENCY_LONG=1 go test ./internal/e2e/faulttest   # longer load and more cuts
//
// PostgreSQL runs when IDEMPOTENCY_POSTGRES_DSN is set.
package faulttest
