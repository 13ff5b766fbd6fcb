package middleware

// Every error the kit makes carries, besides the A2A ErrorInfo (domain
// a2a-protocol.org) that A2A clients type it by, an ErrorInfo of its own: domain
// [ReasonDomain], one of the reasons below. A client tells the kit's answers apart
// by it: the kit's 409 "in flight" from A2A v1.1's TaskGenerationMismatchError
// (-32010, gRPC ABORTED, also 409), a key reused from any other invalid params.
// The kit never answers -32010 or ABORTED.
//
// Where it goes: JSON-RPC, the error's data, after A2A's; HTTP+JSON, the
// google.rpc.Status details, after A2A's; gRPC, the status details, BEFORE A2A's
// (a2a-go's gRPC client types a status by its last ErrorInfo, whatever its domain).
const (
	// ReasonDomain is the ErrorInfo domain of the kit's own reasons.
	ReasonDomain = "github.com/a2akit/idempotency"

	// ReasonInvalid: the keyed send is malformed (the key, the carriers disagree, no
	// messageId, a tenant or id the index cannot store). JSON-RPC -32602, HTTP 400
	// INVALID_ARGUMENT, gRPC INVALID_ARGUMENT.
	ReasonInvalid = "KEYED_SEND_INVALID"
	// ReasonKeyReused: the key is held by another message; or, when keys are bound
	// to callers, by another caller; or, with Options.CheckContent, by the same
	// messageId with other content. The three are one answer on purpose: the claim
	// holds one digest of them, and the answer discloses nothing of the holder.
	// -32602, 400, INVALID_ARGUMENT.
	ReasonKeyReused = "KEY_REUSED"
	// ReasonInFlight: the first attempt is still in flight and its task is not known
	// yet; retry after Retry-After. HTTP 409 (JSON-RPC -32000, HTTP+JSON status
	// UNAVAILABLE), gRPC UNAVAILABLE.
	ReasonInFlight = "KEY_IN_FLIGHT"
	// ReasonCannotHonour: the server cannot honour keys, so it refused the keyed send
	// rather than run it without deduplication. -32004, 400 UNIMPLEMENTED, gRPC
	// FAILED_PRECONDITION.
	ReasonCannotHonour = "KEYS_NOT_HONOURED"
	// ReasonUnavailable: the index is unavailable; retry after Retry-After. 503,
	// gRPC UNAVAILABLE.
	ReasonUnavailable = "INDEX_UNAVAILABLE"
	// ReasonExhausted: the index is full for the tenant, or in all. 429, gRPC
	// RESOURCE_EXHAUSTED.
	ReasonExhausted = "INDEX_FULL"
	// ReasonUnreplayable: the first attempt ran, but what it produced cannot be
	// replayed. -32603, 500 DATA_LOSS, gRPC DATA_LOSS.
	ReasonUnreplayable = "REPLY_NOT_REPLAYABLE"
	// ReasonTaskGone: the key's task no longer exists; the agent is not run again.
	// -32001, 404, gRPC NOT_FOUND.
	ReasonTaskGone = "TASK_GONE"
	// ReasonOutcomeUnknown: the answer to the first attempt was cut off before it
	// was known what ran; retry with the same key. HTTP 502.
	ReasonOutcomeUnknown = "OUTCOME_UNKNOWN"
	// ReasonUnanswerable: the key's task or reply is stored in a form the retry's
	// binding cannot carry. -32603, 500 INTERNAL, gRPC INTERNAL.
	ReasonUnanswerable = "REPLY_UNANSWERABLE"
	// ReasonTaskNotServed: nothing at the retry's path serves the key's task.
	ReasonTaskNotServed = "TASK_NOT_SERVED"
	// ReasonRequestTooLarge and ReasonRequestUnreadable: the body of a send was past
	// MaxBodyBytes (413), or could not be read (400).
	ReasonRequestTooLarge   = "REQUEST_TOO_LARGE"
	ReasonRequestUnreadable = "REQUEST_UNREADABLE"
)

// kitReason returns f's reason in [ReasonDomain]: its own, or its kind's. A relayed
// error is the server's, not the kit's: it has none.
func (f *failure) kitReason() string {
	if f.reason != "" {
		return f.reason
	}
	switch f.kind {
	case failInvalidParams:
		return ReasonInvalid
	case failUnsupported:
		return ReasonCannotHonour
	case failTaskNotFound:
		return ReasonTaskGone
	case failUnavailable:
		return ReasonUnavailable
	case failExhausted:
		return ReasonExhausted
	case failInFlight:
		return ReasonInFlight
	case failTooLarge:
		return ReasonRequestTooLarge
	case failUnreadable:
		return ReasonRequestUnreadable
	case failInternal:
		return ReasonUnanswerable
	case failUnreplayable:
		return ReasonUnreplayable
	case failNotServed:
		return ReasonTaskNotServed
	case failUnknown:
		return ReasonOutcomeUnknown
	}
	return ""
}

// a2aReason returns the reason of the A2A ErrorInfo (domain a2a-protocol.org) that
// f carries on the HTTP bindings: that of the A2A error its kind is answered as, the
// same on JSON-RPC and HTTP+JSON. A relayed error is the server's: it is not framed.
func (f *failure) a2aReason() string {
	switch f.kind {
	case failInvalidParams:
		return "INVALID_PARAMS"
	case failUnsupported:
		return "UNSUPPORTED_OPERATION"
	case failTaskNotFound:
		return "TASK_NOT_FOUND"
	case failInternal:
		return "INTERNAL_ERROR"
	case failUnavailable, failInFlight, failUnknown:
		return "SERVER_ERROR"
	case failExhausted:
		return "RESOURCE_EXHAUSTED"
	case failUnreplayable:
		return "REPLY_NOT_REPLAYABLE"
	}
	return "INVALID_REQUEST" // failTooLarge, failNotServed, failUnreadable
}

// errorInfos returns the ErrorInfo details of f on the HTTP bindings: A2A's, then
// the kit's.
func errorInfos(f *failure) []errorInfo {
	kit := newErrorInfo(f.kitReason(), f)
	kit.Domain = ReasonDomain
	return []errorInfo{newErrorInfo(f.a2aReason(), f), kit}
}
