package adapter

import (
	"context"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/middleware"
)

// BindingStore is an a2a-go taskstore.Store that binds the middleware's claim to a
// new task right after the wrapped store saved the task for the first time: a
// retry then gets the task at once, even while a long blocking send is still
// running, and the key never names a task that was not stored. Create it with
// [NewBindingStore] around the task store the a2a-go handler writes to, and give the
// handler the BindingStore (a2asrv.WithTaskStore). It is safe for concurrent use
// when the wrapped store is.
//
// Only Create does more than the wrapped store: after a successful Create in the
// context of a keyed first send (a2a-go saves a task in the context of its
// execution, which carries the request's [middleware.ClaimedSend]), it binds the
// claim to the task, unless something bound it already. A failed binding is logged
// and Create still succeeds: the task exists, and the middleware binds the key from
// the answer's first event. A process that dies between the save and the bind
// leaves the key pending with its task stored; after the lease a retry runs the
// agent again. Package sqlstore/a2atasks closes that window (the task's first save
// and the bind commit in one transaction) and needs no BindingStore.
type BindingStore struct {
	taskstore.Store
	logger *slog.Logger
}

var _ taskstore.Store = (*BindingStore)(nil)

// NewBindingStore returns a [BindingStore] around store. store must not be nil.
func NewBindingStore(store taskstore.Store, opts Options) *BindingStore {
	if store == nil {
		panic("adapter: NewBindingStore with a nil task store")
	}
	return &BindingStore{Store: store, logger: opts.logger()}
}

// Create implements taskstore.Store: it creates task in the wrapped store, then binds
// the claim of the send whose context is ctx to it; see [BindingStore].
func (b *BindingStore) Create(ctx context.Context, task *a2a.Task) (taskstore.TaskVersion, error) {
	v, err := b.Store.Create(ctx, task)
	if err != nil {
		return v, err
	}
	claim, ok := middleware.ClaimedSendFrom(ctx)
	if !ok {
		return v, nil
	}
	if _, bound := claim.Bound(); bound {
		return v, nil
	}
	if err := claim.Bind(ctx, idempotency.Binding{TaskID: string(task.ID)}); err != nil {
		b.logger.ErrorContext(ctx, "adapter: could not bind the idempotency key to its task once stored; the middleware binds "+
			"it from the answer, or it stays pending until its lease ends", claimAttrs(claim, string(task.ID), err)...)
	}
	return v, nil
}
