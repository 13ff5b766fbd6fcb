package sqlstore

import (
	"errors"
	"strings"
	"testing"
)

func TestScheme(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://h/db": "postgres", "POSTGRESQL://h": "postgresql", "sqlite:keys.db": "sqlite", "file:k.db": "file",
		"redis://h:6379/0": "redis", "keys.db": "", "./keys.db": "", "/var/lib/keys.db": "", `C:\keys.db`: "", "": "",
		"a+b-c.d:x": "a+b-c.d", "1x:y": "", "my dir:x": "",
	} {
		if got := Scheme(in); got != want {
			t.Errorf("Scheme(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDriverDSN(t *testing.T) {
	all := []string{"postgres", "pgx", "sqlite3"}
	for _, c := range []struct {
		url, driver, dsn string
		drivers          []string
	}{
		{"postgres://u:p@h/db?sslmode=disable", "postgres", "postgres://u:p@h/db?sslmode=disable", all},
		{"postgresql://h/db", "pgx", "postgresql://h/db", []string{"pgx", "sqlite3"}},
		{"keys.db", "sqlite3", "file:keys.db?" + SQLiteParams, all},
		{"/var/lib/a2a/keys.db", "sqlite3", "file:/var/lib/a2a/keys.db?" + SQLiteParams, all},
		{"sqlite:keys.db", "sqlite3", "file:keys.db?" + SQLiteParams, all},
		{"sqlite:///data/keys.db", "sqlite3", "file:/data/keys.db?" + SQLiteParams, all},
		{"file:keys.db?_busy_timeout=5000&mode=rwc", "sqlite3",
			"file:keys.db?_busy_timeout=5000&mode=rwc&_journal_mode=WAL&_txlock=immediate&_stmt_cache_size=16", all},
	} {
		driver, dsn, err := driverDSN(c.url, c.drivers)
		if err != nil || driver != c.driver || dsn != c.dsn {
			t.Errorf("driverDSN(%q) = %q, %q, %v; want %q, %q", c.url, driver, dsn, err, c.driver, c.dsn)
		}
	}
	if _, _, err := driverDSN("redis://h:6379/0", all); !errors.Is(err, ErrNotSQL) {
		t.Errorf("redis:// URL: %v; want ErrNotSQL", err)
	}
	if _, _, err := driverDSN("", all); err == nil {
		t.Error("an empty URL was accepted")
	}
	if _, _, err := driverDSN("postgres://u:secret@h/db", []string{"sqlite3"}); err == nil ||
		!strings.Contains(err.Error(), "github.com/lib/pq") || strings.Contains(err.Error(), "secret") {
		t.Errorf("no PostgreSQL driver: %v; want an error naming the driver to import, without the password", err)
	}
	if _, _, err := driverDSN("keys.db", []string{"postgres"}); err == nil || !strings.Contains(err.Error(), "go-sqlite3") {
		t.Errorf("no SQLite driver: %v; want an error naming the driver to import", err)
	}
}

func TestDescribe(t *testing.T) {
	for in, want := range map[string]string{
		"keys.db":                             "SQLite file keys.db",
		"sqlite:///data/k.db?_busy_timeout=1": "SQLite file /data/k.db",
		"postgres://app:secret@db/app":        "PostgreSQL postgres://app:xxxxx@db/app",
		"postgres://db/app?password=secret":   "PostgreSQL postgres://db/app?password=xxxxx",
		"redis://:secret@h:6379/0":            "a redis:// store",
	} {
		if got := Describe(in); got != want {
			t.Errorf("Describe(%q) = %q, want %q", in, got, want)
		}
	}
}
