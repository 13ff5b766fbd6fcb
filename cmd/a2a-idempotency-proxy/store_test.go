package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/internal/testkit"
)

// TestOpenPostgresDrivers opens a postgres:// store through each -postgres-driver
// and claims a key in it: the key table works on either driver.
func TestOpenPostgresDrivers(t *testing.T) {
	dsn := testkit.PostgresDSN(t)
	for _, driver := range []string{"pgx", "pq"} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			table := testkit.RandomName("proxy_drv_")
			ks, err := openStore(ctx, &config{store: dsn, table: table, pgDriver: driver})
			if err != nil {
				t.Fatal(err)
			}
			db, err := openSQLDB(ctx, &config{store: dsn, pgDriver: driver})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				db.ExecContext(ctx, `DROP TABLE IF EXISTS `+table)
				db.Close()
				ks.close()
			})
			if want := map[string]string{"pgx": "pgx", "pq": "postgres"}[driver]; db.DriverName() != want {
				t.Fatalf("driver %q, want %q", db.DriverName(), want)
			}
			c, err := ks.index.Claim(ctx, "scope", testkit.RandomName("key-0123456789-"), "m1", time.Minute)
			if err != nil || c.Status != idempotency.Claimed {
				t.Fatalf("claim: %+v, %v", c, err)
			}
		})
	}
}

// TestStoreKeepsIdleConnections holds maxIdleConns connections of the key store at
// once and gives them back: all stay open for the next sends (database/sql kept 2,
// and closed the rest, so that busy sidecars reconnected on every store call).
func TestStoreKeepsIdleConnections(t *testing.T) {
	ctx := context.Background()
	db, err := openSQLDB(ctx, &config{store: t.TempDir() + "/keys.db", pgDriver: "pgx"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conns := make([]*sql.Conn, maxIdleConns)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	if st := db.Stats(); st.Idle != maxIdleConns || st.MaxIdleClosed != 0 {
		t.Fatalf("after %d connections were given back: %d idle, %d closed for the idle limit; want all idle",
			maxIdleConns, st.Idle, st.MaxIdleClosed)
	}
}
