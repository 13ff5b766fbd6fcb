package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	_ "github.com/lib/pq"

	"github.com/a2akit/idempotency"
	"github.com/a2akit/idempotency/sqlstore"
)

func TestPostgres(t *testing.T) {
	testStore(t, func(t testing.TB) *database { return openPostgres(t, "postgres") })
}

func TestPostgresBlockedDeadline(t *testing.T) {
	db := openPostgres(t, "postgres")
	testBlockedDeadline(t, db, false, func(t *testing.T, table string) func() {
		tx, err := db.a.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`SELECT 1 FROM ` + table + ` FOR UPDATE`); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback() }
	})
}

// TestPostgresTableNames: a reserved word and a mixed-case name work as table names
// (they are quoted, so the case is kept).
func TestPostgresTableNames(t *testing.T) {
	db := openPostgres(t, "postgres")
	for _, name := range []string{"order", "Keys"} {
		a, b := db.stores(t, sqlstore.Options{Table: db.prefix + name})
		c := mustClaim(t, a, "", key(1), "m", idempotency.Claimed)
		if err := b.Bind(context.Background(), "", key(1), c.Token, idempotency.Binding{TaskID: "t"}); err != nil {
			t.Errorf("table %q: Bind: %v", name, err)
		}
		if err := b.Migrate(context.Background()); err != nil {
			t.Errorf("table %q: Migrate again: %v", name, err)
		}
	}
}

// TestPostgresText: text a TEXT column cannot hold is refused before it reaches the
// database.
func TestPostgresText(t *testing.T) {
	a, _ := openPostgres(t, "postgres").stores(t, sqlstore.Options{})
	ctx := context.Background()
	c := mustClaim(t, a, "", key(1), "m", idempotency.Claimed)
	for name, err := range map[string]error{
		"Claim(NUL in scope)":          claimErr(a.Claim(ctx, "a\x00b", key(2), "m", lease)),
		"Claim(invalid UTF-8 message)": claimErr(a.Claim(ctx, "", key(2), "m\xff", lease)),
		"Bind(NUL in task id)":         a.Bind(ctx, "", key(1), c.Token, idempotency.Binding{TaskID: "t\x00"}),
		"Lookup(invalid UTF-8 scope)":  lookupErr(a.Lookup(ctx, "\xc3", key(1))),
		"Release(NUL in scope)":        a.Release(ctx, "\x00", key(1), c.Token),
	} {
		if !errors.Is(err, idempotency.ErrInvalidArgument) {
			t.Errorf("%s = %v, want ErrInvalidArgument", name, err)
		}
	}
	// A reply is bytes, and any bytes are kept.
	reply := []byte("{\"x\":\"\x00\xff\"}")
	if err := a.Bind(ctx, "", key(1), c.Token, idempotency.Binding{Reply: reply}); err != nil {
		t.Fatal(err)
	}
	if rec, _, err := a.Lookup(ctx, "", key(1)); err != nil || !bytes.Equal(rec.Reply, reply) {
		t.Errorf("Lookup = %q, %v; want the reply's bytes", rec.Reply, err)
	}
}

func TestPostgresEndLeases(t *testing.T) { testEndLeases(t, openPostgres(t, "postgres")) }
