package testkit

import (
	"context"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
)

// HidingStore is a task store whose tasks a test can delete: Get of a deleted task
// is [a2a.ErrTaskNotFound], as after the store dropped it. Other calls pass on.
type HidingStore struct {
	taskstore.Store
	deleted sync.Map // a2a.TaskID -> struct{}
}

// Delete makes the task id not found from now on.
func (s *HidingStore) Delete(id a2a.TaskID) { s.deleted.Store(id, struct{}{}) }

// Get implements taskstore.Store.
func (s *HidingStore) Get(ctx context.Context, id a2a.TaskID) (*taskstore.StoredTask, error) {
	if _, gone := s.deleted.Load(id); gone {
		return nil, a2a.ErrTaskNotFound
	}
	return s.Store.Get(ctx, id)
}
