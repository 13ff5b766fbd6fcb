package a2atasks

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/a2akit/idempotency/sqlstore"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// List implements [taskstore.Store.List] as a2a-go's in-memory store does: the
// caller's tasks (a caller without a name is [a2a.ErrUnauthenticated]), filtered by
// context id, state and status timestamp (a task without one passes that filter),
// newest update first (ties by descending id), pages of req.PageSize (default 50, 1
// to 100) with an opaque page token, histories cut to req.HistoryLength (default
// 100) and artifacts only on request. TotalSize counts every task the filters admit.
// Two statements: the page and the count. The tenant is recorded but, as in a2a-go's
// store, does not filter.
func (s *Store) List(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	const defaultPageSize, maxPageSize = 50, 100
	owner, err := s.auth(ctx)
	if owner == "" || err != nil {
		return nil, a2a.ErrUnauthenticated
	}
	pageSize := req.PageSize
	if pageSize == 0 {
		pageSize = defaultPageSize
	} else if pageSize < 1 || pageSize > maxPageSize {
		return nil, fmt.Errorf("page size must be between 1 and 100 inclusive, got %d: %w", pageSize, a2a.ErrInvalidRequest)
	}
	var after any
	if req.StatusTimestampAfter != nil {
		after = nanos(*req.StatusTimestampAfter)
	}
	filters := []any{owner, req.ContextID, string(req.Status), after}
	var cursorTime any
	var cursorID string
	if req.PageToken != "" {
		t, id, err := decodePageToken(req.PageToken)
		if err != nil {
			return nil, err
		}
		cursorTime, cursorID = s.timeArg(t), string(id)
	}

	type row struct {
		body    []byte
		id      string
		updated sqlrun.Time
	}
	rows, err := sqlrun.Query(ctx, s.db, s.dialect == sqlstore.SQLite, s.q.list, append(filters, cursorTime, cursorID, pageSize+1),
		func(r *row) []any { return []any{&r.id, &r.body, &r.updated} })
	if err != nil {
		return nil, s.fail(ctx, "list", err)
	}
	var total int
	if err := s.queryRow(ctx, s.q.count, filters, &total); err != nil {
		return nil, s.fail(ctx, "list: count", err)
	}
	var next string
	if len(rows) > pageSize {
		rows = rows[:pageSize]
		last := rows[pageSize-1]
		next = encodePageToken(last.updated.Time, a2a.TaskID(last.id))
	}
	historyLength := 100
	if req.HistoryLength != nil {
		historyLength = *req.HistoryLength
	}
	var tasks []*a2a.Task
	for _, r := range rows {
		task, err := decodeTask(r.body)
		if err != nil {
			return nil, err
		}
		if historyLength == 0 {
			task.History = []*a2a.Message{}
		} else if historyLength > 0 && len(task.History) > historyLength {
			task.History = task.History[len(task.History)-historyLength:]
		}
		if !req.IncludeArtifacts {
			task.Artifacts = nil
		}
		tasks = append(tasks, task)
	}
	return &a2a.ListTasksResponse{Tasks: tasks, TotalSize: total, PageSize: pageSize, NextPageToken: next}, nil
}

// encodePageToken and decodePageToken write and read page tokens in the format of
// a2a-go's in-memory store: base64url("<RFC 3339 time>_<task id>").
func encodePageToken(updated time.Time, id a2a.TaskID) string {
	return base64.URLEncoding.EncodeToString([]byte(updated.UTC().Format(time.RFC3339Nano) + "_" + string(id)))
}

func decodePageToken(token string) (time.Time, a2a.TaskID, error) {
	decoded, err := base64.URLEncoding.DecodeString(token)
	if err != nil {
		return time.Time{}, "", a2a.ErrParseError
	}
	parts := strings.Split(string(decoded), "_")
	if len(parts) != 2 {
		return time.Time{}, "", a2a.ErrParseError
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return time.Time{}, "", a2a.ErrParseError
	}
	return t, a2a.TaskID(parts[1]), nil
}
