package sqlstore

import (
	"context"

	"github.com/a2akit/idempotency/sqlstore/internal/sqlrun"
)

// Migrate creates the key table and its sweep index when they do not exist, and
// changes nothing when they do. It is safe to run from several processes at once, as
// replicas do when they start together: on PostgreSQL the DDL runs in one transaction
// that first takes a transaction-scoped advisory lock derived from the table name
// (CREATE TABLE IF NOT EXISTS alone can fail when two sessions race on the catalog);
// on SQLite each statement runs on its own under SQLite's write lock. The table's
// schema, if named, must exist. Migrate never adds a foreign key: see the package
// documentation, "Schema".
func (s *Store) Migrate(ctx context.Context) error {
	if step, err := sqlrun.Migrate(ctx, s.db, s.dialect == SQLite, s.table.lockKey(), s.q.migrate); err != nil {
		return s.fail(ctx, step, err)
	}
	return nil
}
