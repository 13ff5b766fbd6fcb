package keyedclient

import (
	"context"
	"sync/atomic"
)

// A server that honours keys marks every answer it served from a send's first
// attempt, instead of running the send, with the response header
// Idempotent-Replayed: true (idempotency.ReplayedHeader; gRPC: the header metadata
// "idempotent-replayed"): a replay of the task or Message reply, an attach to the
// task's live events, the news that the task is gone or that the reply cannot be
// replayed. A first send's answer never carries it. A client learns it with
// [WatchReplay].

// Replay tells whether the answer to a send was served from a first attempt. Get
// one from [WatchReplay].
type Replay struct {
	answered atomic.Bool
	replayed atomic.Bool
}

// Replayed reports whether the last answer the send got was marked as served from
// a first attempt: the send's own earlier attempt that [Transport] retried (its
// answer was lost), or another client's send with the same key and message. It is
// false until an answer came, and for a server that does not mark answers.
func (r *Replay) Replayed() bool { return r.replayed.Load() }

// Answered reports whether an answer came at all (its headers were read).
func (r *Replay) Answered() bool { return r.answered.Load() }

type replayKey struct{}

// WatchReplay returns a context for one send (SendMessage or SendStreamingMessage of
// an a2aclient.Client built with [FactoryOptions], or with grpcbinding's
// WithKeyedTransport) and the [Replay] that tells, once the send returned (or its
// stream's first event came), whether its answer was served from a first attempt:
//
//	ctx, replay := keyedclient.WatchReplay(ctx)
//	res, err := client.SendMessage(ctx, req)
//	if err == nil && replay.Replayed() { /* the agent did not run again for this send */ }
//
// Use one per send: each answer it sees overwrites what the previous said.
func WatchReplay(ctx context.Context) (context.Context, *Replay) {
	r := &Replay{}
	return context.WithValue(ctx, replayKey{}, r), r
}

// NoteReplayed records, for the [Replay] that ctx watches (if any), that an answer
// came, marked as served from a first attempt or not. [RoundTripper] calls it for
// every HTTP answer; the gRPC binding's client interceptors call it with the
// response header metadata.
func NoteReplayed(ctx context.Context, replayed bool) {
	if r, ok := ctx.Value(replayKey{}).(*Replay); ok {
		r.answered.Store(true)
		r.replayed.Store(replayed)
	}
}
