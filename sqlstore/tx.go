package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/a2akit/idempotency"
)

// BindTx binds (scope, key) under token to b as [Store.Bind] does, with the same
// checks, answers and errors, but within tx, a transaction the caller began on the
// store's database: the binding takes effect when tx commits, and not at all when it
// rolls back. Package a2atasks binds a key in the transaction that stores its task,
// so that a key never names a task that was not stored.
//
// On SQLite, begin tx with a write (or BEGIN IMMEDIATE): a transaction that reads
// first may find the database locked when it writes, which no retry within the
// transaction can resolve.
func (s *Store) BindTx(ctx context.Context, tx *sql.Tx, scope, key string, token idempotency.Token, b idempotency.Binding) error {
	if tx == nil {
		return fmt.Errorf("sqlstore: bind: %w: nil transaction", idempotency.ErrInvalidArgument)
	}
	return s.bind(ctx, tx, scope, key, token, b)
}
