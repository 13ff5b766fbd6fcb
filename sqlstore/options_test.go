package sqlstore_test

import (
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jmoiron/sqlx"

	"github.com/a2akit/idempotency/sqlstore"
)

func TestNew(t *testing.T) {
	raw, _, err := sqlmock.New()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	db := func(driver string) *sqlx.DB { return sqlx.NewDb(raw, driver) }

	for _, tc := range []struct {
		driver string
		opts   sqlstore.Options
		want   sqlstore.Dialect // 0: New must fail
		table  string
	}{
		{"sqlite3", sqlstore.Options{}, sqlstore.SQLite, sqlstore.DefaultTable},
		{"postgres", sqlstore.Options{}, sqlstore.PostgreSQL, sqlstore.DefaultTable},
		{"pgx", sqlstore.Options{}, sqlstore.PostgreSQL, sqlstore.DefaultTable},
		{"pgx/v5", sqlstore.Options{}, sqlstore.PostgreSQL, sqlstore.DefaultTable},
		{"mysql", sqlstore.Options{}, 0, ""},
		{"mydriver", sqlstore.Options{Dialect: sqlstore.PostgreSQL}, sqlstore.PostgreSQL, sqlstore.DefaultTable},
		{"postgres", sqlstore.Options{Dialect: sqlstore.SQLite}, sqlstore.SQLite, sqlstore.DefaultTable},
		{"postgres", sqlstore.Options{Dialect: sqlstore.Dialect(9)}, 0, ""},
		{"postgres", sqlstore.Options{Table: "app.Keys_2"}, sqlstore.PostgreSQL, "app.Keys_2"},
		{"postgres", sqlstore.Options{Table: "order"}, sqlstore.PostgreSQL, "order"},
		{"postgres", sqlstore.Options{Table: "a.b.c"}, 0, ""},
		{"postgres", sqlstore.Options{Table: "keys; DROP TABLE tasks"}, 0, ""},
		{"postgres", sqlstore.Options{Table: `ke"ys`}, 0, ""},
		{"postgres", sqlstore.Options{Table: "2keys"}, 0, ""},
		{"postgres", sqlstore.Options{Table: "app."}, 0, ""},
		{"postgres", sqlstore.Options{Table: "k\u00e9ys"}, 0, ""},
		{"postgres", sqlstore.Options{Table: "a_very_long_table_name_that_is_longer_than_48_bytes"}, 0, ""},
		{"postgres", sqlstore.Options{TTL: -time.Hour}, 0, ""},
		{"postgres", sqlstore.Options{TTL: time.Nanosecond}, 0, ""},
		{"postgres", sqlstore.Options{TTL: time.Microsecond}, sqlstore.PostgreSQL, sqlstore.DefaultTable},
	} {
		s, err := sqlstore.New(db(tc.driver), tc.opts)
		switch {
		case tc.want == 0 && err == nil:
			t.Errorf("New(%q, %+v) succeeded; want an error", tc.driver, tc.opts)
		case tc.want != 0 && err != nil:
			t.Errorf("New(%q, %+v): %v", tc.driver, tc.opts, err)
		case tc.want != 0 && (s.Dialect() != tc.want || s.Table() != tc.table):
			t.Errorf("New(%q, %+v) = %v on %q; want %v on %q", tc.driver, tc.opts, s.Dialect(), s.Table(), tc.want, tc.table)
		}
	}
	if _, err := sqlstore.New(nil, sqlstore.Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
}
