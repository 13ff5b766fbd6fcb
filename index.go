package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// KeyIndex records which message holds each (scope, key) and what the send it started
// produced. The middleware claims a key before forwarding a first send, binds it to the
// task the send created (or records the Message the agent replied with), and releases
// it when the send failed before anything existed. Retries look the key up.
//
// A scope partitions keys: the same key in two scopes is two unrelated claims. Scopes
// are opaque strings chosen by the caller (by default the A2A tenant, possibly empty).
// Keys are passed as they arrived and must satisfy [ValidateKey]; message ids, task ids
// and scopes are opaque, and message ids must not be empty (a [Binding] may leave its
// task id empty when it carries a Reply). Identity is byte for byte: two keys, scopes
// or message ids that differ in any byte (in case, in a space, in a separator, at the
// 255th byte of a key or the last byte of a message id) are different, and no pair of
// (scope, key) may stand for another, however many keys the index holds. Since clients
// choose most of them, each is bounded ([MaxScopeLength], [MaxMessageIDLength],
// [MaxTaskIDLength], [MaxReplyLength]; see [CheckLengths]), and callers refuse longer
// ones before they claim. An index returns an error wrapping [ErrInvalidArgument] for
// input it cannot accept (the bundled indexes: anything [CheckLengths] refuses),
// whatever the state of the key, before touching its storage.
//
// Every method honours ctx: when ctx is done before the operation took effect, it
// returns an error that wraps ctx.Err() (errors.Is(err, ctx.Err()) holds, so callers
// can tell a gone client from a failing store), whatever the state of the key, and the
// operation did not take effect (a cancelled Claim consumes nothing and takes nothing
// over). Expected outcomes are return values; a non-nil error means the index could
// not do what was asked (storage unreachable, timeout, fenced out), and callers must not
// assume anything was stored. Sentinel errors are wrapped with context and compared
// with errors.Is. All methods are safe for concurrent use, across goroutines and, for
// indexes backed by shared storage, across processes and machines. What a call returns
// reflects every call that returned before it began, through any handle on the same
// storage: no handle answers from what it read before.
//
// A key lives for the index's time to live, counted from its first claim (24 hours by
// default in the bundled indexes; replays do not extend it). Past it, the key counts
// as absent. A key is never deleted because its task was deleted: a retry of a send
// whose task is gone must find the key and learn that the task is gone, rather than
// run the agent again.
//
// Implementations prove these properties by passing conformance.Run.
type KeyIndex interface {
	// Claim tries to take (scope, key) for the send of message messageID.
	//
	// When the key is absent (never claimed, released, or past its time to live), Claim
	// stores a pending claim and returns [Claimed] with a fresh fencing [Token]: the
	// caller owns the key and must eventually [KeyIndex.Bind] or [KeyIndex.Release] it.
	// When the key is held by the same messageID, it returns [HeldBySameMessage] with
	// the current [Record] (task id and/or reply, or still pending). When it is held by
	// another message id, it returns [HeldByOtherMessage] with an empty Record: the key
	// was reused for a different send, and nothing about the holder is disclosed.
	//
	// Concurrent Claims of one (scope, key) resolve to exactly one [Claimed]; the others
	// see the winner's claim. A pending claim whose lease has ended (the lease runs from
	// the claim, or from the latest takeover or [KeyIndex.Extend]) was abandoned by its
	// owner (a crash): the next Claim by the same message takes it over and returns
	// [Claimed] with a new token and a fresh lease, after which the old token is fenced
	// out. The fresh lease
	// is the lease passed to the Claim that took over, counted from the takeover (not
	// the first claim's lease, nor from the first claim), and Record.LeaseExpiresAt
	// reports its end. A takeover keeps the original claim time, so it does not extend
	// the key's time to live. A claim by another message never takes over; it reports
	// [HeldByOtherMessage]. lease must be positive; the lease runs out at exactly
	// claim (or takeover) time plus lease, at the resolution of the index's clock.
	//
	// A key claimed while absent (never claimed, released, or past its time to live) is
	// a new claim: its ClaimedAt is the time of that Claim, and its time to live starts
	// anew.
	//
	// When the index bounds the number of keys per scope and the scope is full, or
	// bounds its keys in total and is full, Claim of a new key returns an error
	// wrapping [ErrFull]; it never evicts a pending claim (abandoned or not) to make
	// room. A key already held is not a new key: in a full scope, retries, claims by
	// other messages and takeovers are answered as in any other scope.
	Claim(ctx context.Context, scope, key, messageID string, lease time.Duration) (Claim, error)

	// Bind records what the send holding (scope, key) under token produced: b.TaskID,
	// the task it created or continued (a2a-go assigns it before the agent runs, so the
	// adapter binds it then), and/or b.Reply, the Message the agent answered with, as
	// A2A JSON. At least one must be set. A bound key is no longer pending: its lease no
	// longer matters, and it cannot be released or taken over.
	//
	// Only the current owner may bind: when the key is held under another token (taken
	// over after the lease ended) or is no longer held, Bind returns an error wrapping
	// [ErrNotOwner]; the token is checked first, so this holds for a bound key too.
	// Binding is idempotent: binding the value already bound (or a part of it: the
	// TaskID alone, or the Reply alone, of a key bound to both) again with the same token
	// succeeds and changes nothing. A key bound to a TaskID alone may later be given a
	// Reply with the same TaskID (the agent answered with a Message after its task id
	// was bound); any other change returns an error wrapping [ErrAlreadyBound]. A Reply
	// counts as set when it is not empty. A Binding with neither field set wraps
	// [ErrInvalidArgument]. An index that bounds the memory of its keys in total may
	// refuse a binding that does not fit with an error wrapping [ErrFull]; the key then
	// stays as it was.
	Bind(ctx context.Context, scope, key string, token Token, b Binding) error

	// Release frees (scope, key) when it is still pending under token, so that an
	// identical retry runs normally. Call it when the send failed before any task
	// existed. Releasing a key that is not held, or already released, returns nil. When
	// the key is held under another token (pending or bound), Release returns an error
	// wrapping [ErrNotOwner] and changes nothing. A key bound under token is never
	// released: Release on it returns nil and changes nothing. Callers that release
	// after their request was cancelled should pass a context that is still live
	// (context.WithoutCancel with a timeout): a cancelled ctx releases nothing.
	Release(ctx context.Context, scope, key string, token Token) error

	// Extend renews the lease of the pending claim of (scope, key) held under token:
	// the lease then ends at exactly the index's now plus lease (later or earlier than
	// before), and Record.LeaseExpiresAt reports that end. An owner that is still
	// running the send extends well before the end (a fraction of the lease), so that
	// a claim whose owner is alive is never taken over, while a claim whose owner died
	// is taken over soon after its short lease ends. Extend changes nothing else: not
	// the claim time (nor so the key's time to live), not the token, not the count of
	// keys of the scope; it works in a full scope.
	//
	// Only the owner of a claim that is still pending and whose lease has not ended may
	// extend it. When the key is absent, past its time to live or released, is bound,
	// is held under another token (it was taken over), or its lease has ended (the
	// index's now is at or past LeaseExpiresAt, whether or not anybody took it over
	// yet), Extend returns an error wrapping [ErrNotOwner] and changes nothing: a late
	// extension never revives a claim. An Extend and a takeover Claim of one key that
	// race are ordered: either the extension took effect first (the Claim then sees a
	// running lease and reports [HeldBySameMessage]) or the takeover did (Extend then
	// fails with [ErrNotOwner]); never both. lease must be positive and token non-zero,
	// or Extend returns an error wrapping [ErrInvalidArgument]; an index may round the
	// lease up to its clock's resolution, as Claim does.
	//
	// An owner whose lease ended while its send still ran (its extension came late)
	// may still Bind as long as nobody took the claim over: what ran is better recorded
	// than lost. It may also Release it then. It may not Extend again.
	Extend(ctx context.Context, scope, key string, token Token, lease time.Duration) error

	// Lookup returns what is known of (scope, key) now, and false when the key is
	// absent or past its time to live. Callers use it while waiting for an in-flight
	// first attempt to bind its task. It changes nothing: it neither creates a key nor
	// extends a lease.
	Lookup(ctx context.Context, scope, key string) (Record, bool, error)
}

// Token is a fencing token: proof of ownership of one claim. A takeover issues a new
// token, and the old one is then refused by Bind, Release and Extend. Every token an
// index issues, to a new claim or to a takeover, is one it never issued before: tokens
// are unique per index (not merely per key), so a token from a released claim cannot
// pass for the token of a later claim of the same key. The zero Token is never issued.
type Token uint64

// RandomToken returns a fencing token of 63 random bits, never zero. An index that
// draws its tokens here needs no coordination between the processes sharing its
// server: two draws collide with probability 2^-63. 63 bits keep the token positive
// when stored as a signed 64-bit integer (a SQL BIGINT).
func RandomToken() Token {
	var b [8]byte
	for {
		rand.Read(b[:]) // never fails; see crypto/rand.Read
		if t := binary.LittleEndian.Uint64(b[:]) >> 1; t != 0 {
			return Token(t)
		}
	}
}

// ClaimStatus is the outcome of [KeyIndex.Claim].
type ClaimStatus int

const (
	// Claimed: the caller owns the key and should forward the send.
	Claimed ClaimStatus = iota + 1
	// HeldBySameMessage: a retry; the Record says what the first attempt produced.
	HeldBySameMessage
	// HeldByOtherMessage: the key was reused for a different message; refuse the send.
	HeldByOtherMessage
)

func (s ClaimStatus) String() string {
	switch s {
	case Claimed:
		return "claimed"
	case HeldBySameMessage:
		return "held by same message"
	case HeldByOtherMessage:
		return "held by other message"
	}
	return "invalid claim status"
}

// Claim is the result of [KeyIndex.Claim].
type Claim struct {
	Status ClaimStatus
	// Token is set when Status is Claimed.
	Token Token
	// Record is set when Status is HeldBySameMessage.
	Record Record
}

// Binding is what a send produced: the id of the task it created or continued, and,
// when the agent answered with a Message instead of a task, that Message.
type Binding struct {
	// TaskID is the task's id, or empty when only a Reply is known.
	TaskID string
	// Reply is the agent's Message as A2A v1.0 JSON (the object that appears under
	// "message" in a SendMessage result), or nil. The index stores it verbatim, byte
	// for byte (never re-encoded: whitespace, key order and escapes are kept), and
	// keeps no reference to the slice. An empty Reply counts as none: it is not stored,
	// and Records report a nil Reply. A retry of a send that has a Reply gets the Reply,
	// not the task.
	Reply []byte
}

// Record is what an index knows of a held key. Every Record an index returns (from
// Claim and from Lookup) is the caller's: its Reply shares no memory with the index,
// with the Reply passed to Bind, or with another returned Record, so a caller may
// change it freely.
type Record struct {
	// MessageID is the id of the message that claimed the key.
	MessageID string
	// TaskID is the bound task, or empty.
	TaskID string
	// Reply is the bound Message reply, or nil. When set, it is what a retry gets.
	Reply []byte
	// ClaimedAt is when the key was first claimed, by the index's clock.
	ClaimedAt time.Time
	// LeaseExpiresAt is when a pending claim may be taken over, unless its owner
	// extends it first ([KeyIndex.Extend]). It is meaningless once the key is bound.
	LeaseExpiresAt time.Time
}

// Pending reports whether the first attempt has not bound anything yet.
func (r Record) Pending() bool { return r.TaskID == "" && r.Reply == nil }

// Sentinel errors of a [KeyIndex]. Indexes wrap them with context; compare with
// errors.Is.
var (
	// ErrNotOwner: the token does not own the claim (it was taken over, or released),
	// or, for Extend, the claim is no longer pending or its lease has ended.
	ErrNotOwner = errors.New("idempotency: claim not owned by this token")
	// ErrAlreadyBound: the key is bound to a different task or reply.
	ErrAlreadyBound = errors.New("idempotency: key already bound to another result")
	// ErrFull: the scope holds as many keys as the index allows, or the index as a
	// whole is full.
	ErrFull = errors.New("idempotency: index full")
	// ErrInvalidArgument: the index refused its input (malformed key, empty message id,
	// non-positive lease, zero token, empty binding).
	ErrInvalidArgument = errors.New("idempotency: invalid argument")
)

// Bounds on the text an index stores for a send. Scopes and message ids are chosen by
// clients (a scope is the A2A tenant unless the server mixes in more), task ids too
// when a follow-up names one, and a Reply may echo what a client sent; without bounds
// a client could make a server keep megabytes per key. The bundled indexes refuse
// longer values with [ErrInvalidArgument], and the middleware refuses a send carrying
// them as invalid params before it claims anything. Generated ids (UUIDs, 36 bytes)
// are far below them.
const (
	// MaxScopeLength bounds a scope, in bytes; it keeps the primary key of (scope,
	// key) within a PostgreSQL index entry.
	MaxScopeLength = 2048
	// MaxMessageIDLength bounds a message id, in bytes.
	MaxMessageIDLength = 4096
	// MaxTaskIDLength bounds a bound task id, in bytes.
	MaxTaskIDLength = 4096
	// MaxReplyLength bounds a bound Reply (a Message as A2A JSON), in bytes. An agent
	// that answers with a longer Message gets no recorded reply: a retry of that send
	// gets TaskNotFound rather than the Message.
	MaxReplyLength = 1 << 20
)

// CheckLengths reports whether scope, messageID and b are within [MaxScopeLength],
// [MaxMessageIDLength], [MaxTaskIDLength] and [MaxReplyLength]. It returns nil, or an
// error wrapping [ErrInvalidArgument] that names the first field past its bound and
// both lengths (never the value, which may be megabytes). It checks lengths only:
// empty values, and the key, are the caller's to check. Pass empty values for fields
// that do not apply.
func CheckLengths(scope, messageID string, b Binding) error {
	for _, f := range [...]struct {
		what     string
		len, max int
	}{
		{"scope", len(scope), MaxScopeLength},
		{"message id", len(messageID), MaxMessageIDLength},
		{"task id", len(b.TaskID), MaxTaskIDLength},
		{"reply", len(b.Reply), MaxReplyLength},
	} {
		if f.len > f.max {
			return fmt.Errorf("%w: %s of %d bytes, longer than %d", ErrInvalidArgument, f.what, f.len, f.max)
		}
	}
	return nil
}

// Honouring is implemented by an index that may be unable to honour keys, for example
// a read-only replica or a store whose schema has not been migrated. When HonoursKeys
// reports false, the middleware refuses keyed sends (rather than run them without
// deduplication) and does not advertise the extension. An index that does not
// implement Honouring honours keys.
type Honouring interface {
	HonoursKeys(ctx context.Context) bool
}

// Sweeper is implemented by indexes that can delete old keys in bulk. Indexes that
// expire keys on their own (memstore) may still implement it to free memory at a time
// the operator chooses.
type Sweeper interface {
	// PurgeExpired deletes keys older than the policy's effective key age, in batches,
	// and reports what it did: KeysDeleted counts exactly the keys this call deleted.
	// It never deletes a key younger than that age (even a pending claim whose lease
	// ended), nor a pending claim whose lease is still running. It is safe to run from
	// several processes at once, and while claims go on. When ctx ends before or
	// between batches, it returns the report so far and an error wrapping ctx.Err(); it
	// checks ctx before every batch.
	PurgeExpired(ctx context.Context, policy RetentionPolicy) (PurgeReport, error)
}

// DefaultKeyMaxAge is how long keys live unless configured otherwise.
const DefaultKeyMaxAge = 24 * time.Hour

// DefaultPurgeBatchSize is the batch size of a [RetentionPolicy] that sets none.
const DefaultPurgeBatchSize = 1000

// RetentionPolicy says which keys a [Sweeper] deletes. The zero value deletes keys
// older than 24 hours, 1000 at a time, until none is left.
type RetentionPolicy struct {
	// KeyMaxAge is how old a key must be to be deleted; zero means
	// [DefaultKeyMaxAge], and a negative value disables the key sweep.
	KeyMaxAge time.Duration
	// TerminalTaskRetention is how long the operator keeps finished tasks, counted
	// from their last update. A key is never deleted while the task it names may still
	// exist (a retry would then run the agent a second time), so the effective key age
	// is at least this. A sweeper that also holds the tasks (sqlstore/a2atasks) deletes
	// the terminal tasks older than this; zero there means tasks are kept.
	TerminalTaskRetention time.Duration
	// BatchSize is how many keys one batch deletes; zero or less means
	// [DefaultPurgeBatchSize].
	BatchSize int
	// MaxBatches bounds the number of batches of one call; zero or less means no bound.
	MaxBatches int
}

// EffectiveKeyMaxAge returns the age past which keys are deleted: KeyMaxAge (or its
// default), raised to TerminalTaskRetention, and false when the key sweep is disabled.
func (p RetentionPolicy) EffectiveKeyMaxAge() (time.Duration, bool) {
	switch {
	case p.KeyMaxAge < 0:
		return 0, false
	case p.KeyMaxAge == 0:
		return max(DefaultKeyMaxAge, p.TerminalTaskRetention), true
	}
	return max(p.KeyMaxAge, p.TerminalTaskRetention), true
}

// EffectiveBatchSize returns BatchSize, or its default.
func (p RetentionPolicy) EffectiveBatchSize() int {
	if p.BatchSize <= 0 {
		return DefaultPurgeBatchSize
	}
	return p.BatchSize
}

// PurgeReport says what [Sweeper.PurgeExpired] did.
type PurgeReport struct {
	KeysDeleted int64
	// TasksDeleted counts the terminal tasks deleted, by a sweeper that also holds
	// the tasks; zero otherwise.
	TasksDeleted int64
	Batches      int
	// Complete is false when MaxBatches (or ctx) stopped the sweep before it ran out of
	// keys to delete.
	Complete bool
}

// CapacityReporter is implemented by indexes that bound the number of keys per scope.
type CapacityReporter interface {
	// Capacity reports how many keys scope holds now and how many it may hold (zero
	// meaning no bound). Held may count keys past their time to live that the index has
	// not deleted yet; they never keep a new key out. Limit bounds this scope alone: an
	// index that also bounds its keys in total may refuse a new key with [ErrFull]
	// before any scope reaches its Limit, or while Limit is 0.
	//
	// An index configured to keep no count (and so to bound no scope, as redisstore by
	// default) returns an error wrapping [errors.ErrUnsupported], for every scope, and
	// then never refuses a new key for its scope's sake: callers treat the capacity as
	// unknown rather than as a failure. The conformance suite then skips the checks
	// that read the count, and checks that one scope takes keys past the usual bounds.
	Capacity(ctx context.Context, scope string) (Capacity, error)
}

// Capacity is a scope's use of a bounded index.
type Capacity struct {
	Held  int
	Limit int
}
