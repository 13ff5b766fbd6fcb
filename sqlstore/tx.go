package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
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

// EndLeases ends, now, the lease of every pending claim of the table (claimed, neither
// bound nor released), so that the next identical send takes it over at once instead
// of when its lease would have ended, and returns how many it ended. It is one
// UPDATE, on the store's clock.
//
// Call it only where every process that could still be running one of those sends
// is known to be gone: at the start of the only process that runs keyed sends on the
// table (the one a crash or a stop replaced), before it serves. Never while replicas
// share the table or during a rolling deploy, where the claims of a live process
// would be taken over and its sends run twice.
func (s *Store) EndLeases(ctx context.Context) (int64, error) {
	now := "now()"
	switch {
	case s.now != nil && s.dialect == PostgreSQL:
		now = "$1::timestamptz"
	case s.now != nil:
		now = "?1"
	case s.dialect == SQLite:
		now = sqlrun.SQLiteNowMicros
	}
	query := `UPDATE ` + s.table.quoted() + ` SET lease_expires_at = ` + now +
		` WHERE task_id IS NULL AND reply IS NULL AND lease_expires_at > ` + now
	n, err := s.exec(ctx, query, s.args()...)
	if err != nil {
		return 0, s.fail(ctx, "end leases", err)
	}
	return n, nil
}
