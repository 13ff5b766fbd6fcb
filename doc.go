// Package idempotency lets Go A2A servers deduplicate retried SendMessage calls by an
// idempotency key, so that an agent runs once per key and a retry gets the first attempt's task.
//
// It is the core of a kit that adds this to an existing server (the official a2a-go
// SDK's, or any A2A server behind the kit's HTTP middleware) without changing it.
//
// A client that cannot tell whether its send reached the server (the connection
// dropped after the request left) attaches an idempotency key to the message's own
// metadata, under [MetadataKey], and lists [ExtensionURI] in the message's
// extensions. The server deduplicates on (scope, key): a retry gets back the task the
// first attempt created, in its current state, and the agent runs once.
//
// This package holds what every part of the kit shares: the key format
// ([ValidateKey], [KeyOf], [SetKey], [NewKey]), the [KeyIndex] interface that stores
// claims, its optional capabilities ([Sweeper], [CapacityReporter], [Honouring]), and
// its sentinel errors. It depends on the standard library only.
//
// The HTTP middleware lives in package middleware, the bundled indexes in memstore
// and sqlstore, the reusable store test suite in conformance, and the integration
// with the official Go SDK in adapter.
package idempotency
