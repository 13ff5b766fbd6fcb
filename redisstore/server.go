package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrUnsafeServer is wrapped by the error of [Store.Check] for a server that may lose
// keys before their time to live ends, or cannot store them.
var ErrUnsafeServer = errors.New("redisstore: the server cannot keep idempotency keys safely")

// Check asks the server (INFO memory and replication, one round trip) whether it can
// keep the store's keys: it returns an error wrapping [ErrUnsafeServer] when the server
// evicts keys under memory pressure (maxmemory set with a maxmemory-policy other than
// noeviction: an evicted key lets a retry run the agent again) or is a replica (which
// refuses writes), an error wrapping the client's when the server does not answer, and
// nil otherwise. On Cluster it asks one node.
func (s *Store) Check(ctx context.Context) error {
	info, err := s.rdb.Info(ctx, "memory", "replication").Result()
	if err != nil {
		return fmt.Errorf("redisstore: check: %w", err)
	}
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch policy := fields["maxmemory_policy"]; {
	case fields["role"] == "slave" || fields["role"] == "replica":
		return fmt.Errorf("%w: it is a replica (connect to the primary)", ErrUnsafeServer)
	case fields["maxmemory"] != "0" && policy != "noeviction":
		return fmt.Errorf("%w: maxmemory-policy %s evicts keys when maxmemory is reached; set noeviction", ErrUnsafeServer, policy)
	}
	return nil
}

// HonoursKeys implements [idempotency.Honouring] with [Store.Check]: false when the
// server evicts keys or is a replica, so that the middleware refuses keyed sends rather
// than deduplicate them on keys the server may drop. A server that does not answer
// honours keys as far as this says: the calls themselves then fail, and the middleware
// answers 503.
func (s *Store) HonoursKeys(ctx context.Context) bool {
	return !errors.Is(s.Check(ctx), ErrUnsafeServer)
}
