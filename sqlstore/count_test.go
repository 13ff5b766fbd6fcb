package sqlstore_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
	"github.com/a2akit/idempotency/internal/testkit/testdb"
	"github.com/a2akit/idempotency/sqlstore"
)

// testStatementCount checks, on a real database, how many statements each path runs.
func testStatementCount(t *testing.T, d sqlstore.Dialect, drv driver.Driver, dsn, table string) {
	var statements atomic.Int64
	db := sql.OpenDB(testdb.NewCountingConnector(drv, dsn, func(string) { statements.Add(1) }))
	t.Cleanup(func() { db.Close() })
	s, err := sqlstore.New(sqlx.NewDb(db, "counting"), sqlstore.Options{Dialect: d, Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	counted := func(name string, want int64, f func() error) {
		t.Helper()
		statements.Store(0)
		if err := f(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := statements.Load(); n != want {
			t.Errorf("%s ran %d statements, want %d", name, n, want)
		}
	}
	var token idempotency.Token
	counted("keyed first send (claim and bind)", 2, func() error {
		c, err := s.Claim(ctx, "", key(1), "m1", lease)
		if err != nil || c.Status != idempotency.Claimed {
			return errors.Join(err, errors.New("not claimed"))
		}
		token = c.Token
		return s.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t1"})
	})
	counted("retry (claim and read)", 2, func() error {
		c, err := s.Claim(ctx, "", key(1), "m1", lease)
		if err == nil && (c.Status != idempotency.HeldBySameMessage || c.Record.TaskID != "t1") {
			err = errors.New("the retry did not find the bound task")
		}
		return err
	})
	counted("lookup", 1, func() error {
		_, ok, err := s.Lookup(ctx, "", key(1))
		if err == nil && !ok {
			err = errors.New("not found")
		}
		return err
	})
	counted("idempotent bind (update and read)", 2, func() error {
		return s.Bind(ctx, "", key(1), token, idempotency.Binding{TaskID: "t1"})
	})
	counted("lease extension", 1, func() error {
		cl, err := s.Claim(ctx, "", key(3), "m3", lease)
		if err != nil {
			return err
		}
		statements.Store(0) // count the extension alone
		return s.Extend(ctx, "", key(3), cl.Token, lease)
	})
	counted("failed send (claim and release)", 2, func() error {
		c, err := s.Claim(ctx, "", key(2), "m2", lease)
		if err != nil {
			return err
		}
		return s.Release(ctx, "", key(2), c.Token)
	})
}

func TestPostgresStatementCount(t *testing.T) {
	db := openPostgres(t, "postgres")
	testStatementCount(t, sqlstore.PostgreSQL, &pq.Driver{}, testkit.PostgresDSN(t), db.prefix+"keys")
}
