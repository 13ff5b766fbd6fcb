package sqlstore_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

// The tests in this file inject faults with go-sqlmock: every statement that fails must
// surface as an error, and a claim must never be reported as made unless its own
// statement made it. Behaviour on a real database is tested elsewhere.

var errBoom = errors.New("boom: connection reset by peer")

// Statement patterns (regular expressions) for the expectations.
const (
	claimSQL   = `^INSERT INTO `
	readSQL    = `^SELECT message_id, task_id, reply`
	ownerSQL   = `^SELECT token, task_id, reply`
	bindSQL    = `^UPDATE `
	releaseSQL = `^DELETE FROM .* AND token = `
	purgeSQL   = `^DELETE FROM .* (ctid|rowid)`
	leftSQL    = `^SELECT EXISTS`
)

func mockStore(t *testing.T, d sqlstore.Dialect) (*sqlstore.Store, sqlmock.Sqlmock) {
	t.Helper()
	db, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherRegexp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := sqlstore.New(sqlx.NewDb(db, "sqlmock"), sqlstore.Options{Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	return s, mock
}

var readColumns = []string{"message_id", "task_id", "reply", "claimed_at", "lease_expires_at", "lease_ended"}

func TestFailingStatements(t *testing.T) {
	ctx := context.Background()
	k := key(1)
	claim := func(s *sqlstore.Store) error {
		c, err := s.Claim(ctx, "", k, "m1", lease)
		if c.Status == idempotency.Claimed {
			t.Errorf("Claim reported %v with error %v", c.Status, err)
		}
		return err
	}
	bind := func(s *sqlstore.Store) error {
		return s.Bind(ctx, "", k, 42, idempotency.Binding{TaskID: "t1"})
	}
	release := func(s *sqlstore.Store) error { return s.Release(ctx, "", k, 42) }
	lookup := func(s *sqlstore.Store) error {
		_, ok, err := s.Lookup(ctx, "", k)
		if ok {
			t.Errorf("Lookup reported a key with error %v", err)
		}
		return err
	}
	purge := func(want idempotency.PurgeReport) func(*sqlstore.Store) error {
		return func(s *sqlstore.Store) error {
			rep, err := s.PurgeExpired(ctx, idempotency.RetentionPolicy{BatchSize: 10, MaxBatches: 1})
			if rep != want {
				t.Errorf("PurgeExpired = %+v, want %+v", rep, want)
			}
			return err
		}
	}
	noRow := func(m sqlmock.Sqlmock) { m.ExpectQuery(readSQL).WillReturnRows(sqlmock.NewRows(readColumns)) }

	for _, tc := range []struct {
		name   string
		expect func(m sqlmock.Sqlmock)
		call   func(*sqlstore.Store) error
		// boom reports whether the error must wrap errBoom (else any error will do).
		boom bool
	}{
		{"ClaimStatement", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnError(errBoom)
		}, claim, true},
		{"ClaimRowsAffected", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewErrorResult(errBoom))
		}, claim, true},
		{"ClaimTwoRows", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 2))
		}, claim, false},
		{"ClaimSecondRead", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectQuery(readSQL).WillReturnError(errBoom)
		}, claim, true},
		{"ClaimSecondReadRows", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectQuery(readSQL).WillReturnRows(sqlmock.NewRows(readColumns).
				AddRow("m1", nil, nil, time.Now(), time.Now(), false).RowError(0, errBoom))
		}, claim, true},
		{"ClaimSecondReadGarbage", func(m sqlmock.Sqlmock) {
			m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectQuery(readSQL).WillReturnRows(sqlmock.NewRows(readColumns).
				AddRow("m1", nil, nil, "yesterday", time.Now(), false))
		}, claim, false},
		{"ClaimNeitherClaimedNorHeld", func(m sqlmock.Sqlmock) {
			// The key vanishes between the statements every time: Claim gives up
			// rather than report a claim it did not make.
			for range 8 {
				m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 0))
				noRow(m)
			}
		}, claim, false},
		{"ClaimAbandonedEveryTime", func(m sqlmock.Sqlmock) {
			for range 8 {
				m.ExpectExec(claimSQL).WillReturnResult(sqlmock.NewResult(0, 0))
				m.ExpectQuery(readSQL).WillReturnRows(sqlmock.NewRows(readColumns).
					AddRow("m1", nil, nil, time.Now(), time.Now(), true))
			}
		}, claim, false},
		{"BindStatement", func(m sqlmock.Sqlmock) {
			m.ExpectExec(bindSQL).WillReturnError(errBoom)
		}, bind, true},
		{"BindRowsAffected", func(m sqlmock.Sqlmock) {
			m.ExpectExec(bindSQL).WillReturnResult(sqlmock.NewErrorResult(errBoom))
		}, bind, true},
		{"BindRead", func(m sqlmock.Sqlmock) {
			m.ExpectExec(bindSQL).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectQuery(ownerSQL).WillReturnError(errBoom)
		}, bind, true},
		{"ReleaseStatement", func(m sqlmock.Sqlmock) {
			m.ExpectExec(releaseSQL).WillReturnError(errBoom)
		}, release, true},
		{"ReleaseRowsAffected", func(m sqlmock.Sqlmock) {
			m.ExpectExec(releaseSQL).WillReturnResult(sqlmock.NewErrorResult(errBoom))
		}, release, true},
		{"ReleaseRead", func(m sqlmock.Sqlmock) {
			m.ExpectExec(releaseSQL).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectQuery(ownerSQL).WillReturnError(errBoom)
		}, release, true},
		{"Lookup", func(m sqlmock.Sqlmock) {
			m.ExpectQuery(readSQL).WillReturnError(errBoom)
		}, lookup, true},
		{"PurgeFirstBatch", func(m sqlmock.Sqlmock) {
			m.ExpectExec(purgeSQL).WillReturnError(errBoom)
		}, purge(idempotency.PurgeReport{}), true},
		{"PurgeRowsAffected", func(m sqlmock.Sqlmock) {
			m.ExpectExec(purgeSQL).WillReturnResult(sqlmock.NewErrorResult(errBoom))
		}, purge(idempotency.PurgeReport{}), true},
		{"PurgeWhatIsLeft", func(m sqlmock.Sqlmock) {
			m.ExpectExec(purgeSQL).WillReturnResult(sqlmock.NewResult(0, 10))
			m.ExpectQuery(leftSQL).WillReturnError(errBoom)
		}, purge(idempotency.PurgeReport{KeysDeleted: 10, Batches: 1}), true},
	} {
		for _, d := range []sqlstore.Dialect{sqlstore.PostgreSQL, sqlstore.SQLite} {
			t.Run(tc.name+"/"+d.String(), func(t *testing.T) {
				s, mock := mockStore(t, d)
				tc.expect(mock)
				err := tc.call(s)
				switch {
				case err == nil:
					t.Error("the failure was not reported")
				case tc.boom && !errors.Is(err, errBoom):
					t.Errorf("error %q does not wrap the driver's error", err)
				}
				if err := mock.ExpectationsWereMet(); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

func TestFailingLaterPurgeBatch(t *testing.T) {
	s, mock := mockStore(t, sqlstore.PostgreSQL)
	mock.ExpectExec(purgeSQL).WillReturnResult(sqlmock.NewResult(0, 10))
	mock.ExpectExec(purgeSQL).WillReturnError(errBoom)
	rep, err := s.PurgeExpired(context.Background(), idempotency.RetentionPolicy{BatchSize: 10})
	if want := (idempotency.PurgeReport{KeysDeleted: 10, Batches: 1}); !errors.Is(err, errBoom) || rep != want {
		t.Errorf("PurgeExpired = %+v, %v; want %+v and the driver's error", rep, err, want)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

func TestFailingMigration(t *testing.T) {
	// pg expects the PostgreSQL migration up to the step named fail, which fails.
	pg := func(fail string) func(m sqlmock.Sqlmock) {
		return func(m sqlmock.Sqlmock) {
			if fail == "begin" {
				m.ExpectBegin().WillReturnError(errBoom)
				return
			}
			m.ExpectBegin()
			for _, st := range []struct{ name, sql string }{
				{"lock", `^SELECT pg_advisory_xact_lock\(\$1\)$`},
				{"table", `^CREATE TABLE IF NOT EXISTS `},
				{"index", `^CREATE INDEX IF NOT EXISTS `},
			} {
				e := m.ExpectExec(st.sql)
				if st.name == fail {
					e.WillReturnError(errBoom)
					m.ExpectRollback()
					return
				}
				e.WillReturnResult(sqlmock.NewResult(0, 0))
			}
			m.ExpectCommit().WillReturnError(errBoom)
		}
	}
	for _, tc := range []struct {
		name    string
		dialect sqlstore.Dialect
		expect  func(m sqlmock.Sqlmock)
	}{
		{"Begin", sqlstore.PostgreSQL, pg("begin")},
		{"Lock", sqlstore.PostgreSQL, pg("lock")},
		{"CreateTable", sqlstore.PostgreSQL, pg("table")},
		{"CreateIndex", sqlstore.PostgreSQL, pg("index")},
		{"Commit", sqlstore.PostgreSQL, pg("commit")},
		{"SQLiteCreateTable", sqlstore.SQLite, func(m sqlmock.Sqlmock) {
			m.ExpectExec(`^CREATE TABLE IF NOT EXISTS `).WillReturnError(errBoom)
		}},
		{"SQLiteCreateIndex", sqlstore.SQLite, func(m sqlmock.Sqlmock) {
			m.ExpectExec(`^CREATE TABLE IF NOT EXISTS `).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectExec(`^CREATE INDEX IF NOT EXISTS `).WillReturnError(errBoom)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, mock := mockStore(t, tc.dialect)
			tc.expect(mock)
			if err := s.Migrate(context.Background()); !errors.Is(err, errBoom) {
				t.Errorf("Migrate = %v, want the driver's error", err)
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDeadline: a statement that outlives ctx's deadline fails with an error that
// errors.Is finds context.DeadlineExceeded in, and claims nothing.
func TestDeadline(t *testing.T) {
	s, mock := mockStore(t, sqlstore.PostgreSQL)
	mock.ExpectExec(claimSQL).WillDelayFor(time.Minute).WillReturnResult(sqlmock.NewResult(0, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	c, err := s.Claim(ctx, "", key(1), "m1", lease)
	if !errors.Is(err, context.DeadlineExceeded) || c.Status == idempotency.Claimed {
		t.Errorf("Claim past its deadline = %v, %v; want context.DeadlineExceeded", c.Status, err)
	}
}

// TestHappyPathStatements counts the statements of a keyed first send: the claim and
// the bind, nothing else.
func TestHappyPathStatements(t *testing.T) {
	for _, d := range []sqlstore.Dialect{sqlstore.PostgreSQL, sqlstore.SQLite} {
		t.Run(d.String(), func(t *testing.T) {
			s, mock := mockStore(t, d)
			mock.MatchExpectationsInOrder(true)
			mock.ExpectExec(claimSQL).WithArgs("tenant", key(1), "m1", anyToken{}, lease.Microseconds()).
				WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectExec(bindSQL).WithArgs("tenant", key(1), anyToken{}, "t1", nil).
				WillReturnResult(sqlmock.NewResult(0, 1))
			ctx := context.Background()
			c, err := s.Claim(ctx, "tenant", key(1), "m1", lease)
			if err != nil || c.Status != idempotency.Claimed {
				t.Fatalf("Claim = %v, %v", c.Status, err)
			}
			if err := s.Bind(ctx, "tenant", key(1), c.Token, idempotency.Binding{TaskID: "t1"}); err != nil {
				t.Fatalf("Bind: %v", err)
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}

// anyToken matches a non-zero fencing token argument.
type anyToken struct{}

func (anyToken) Match(v driver.Value) bool {
	n, ok := v.(int64)
	return ok && n != 0
}
