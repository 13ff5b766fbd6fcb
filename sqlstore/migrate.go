package sqlstore

import "context"

// Migrate creates the key table and its sweep index when they do not exist, and
// changes nothing when they do. It is safe to run from several processes at once, as
// replicas do when they start together: on PostgreSQL the DDL runs in one transaction
// that first takes a transaction-scoped advisory lock derived from the table name
// (CREATE TABLE IF NOT EXISTS alone can fail when two sessions race on the catalog);
// on SQLite each statement runs on its own under SQLite's write lock. The table's
// schema, if named, must exist. Migrate never adds a foreign key: see the package
// documentation, "Schema".
func (s *Store) Migrate(ctx context.Context) error {
	if s.dialect == SQLite {
		for _, stmt := range s.q.migrate {
			if _, err := s.exec(ctx, stmt); err != nil {
				return s.fail(ctx, "migrate", err)
			}
		}
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, "migrate: begin", err)
	}
	defer tx.Rollback() // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", s.table.lockKey()); err != nil {
		return s.fail(ctx, "migrate: lock", err)
	}
	for _, stmt := range s.q.migrate {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return s.fail(ctx, "migrate", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, "migrate: commit", err)
	}
	return nil
}
