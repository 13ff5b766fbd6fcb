//go:build cgo

package indexes

import (
	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"
)

func init() {
	openSQLite = func(path string) (*sqlx.DB, error) {
		if path != "" && !hasScheme(path) {
			path = "file:" + path + "?_journal_mode=WAL&_busy_timeout=100&_txlock=immediate&_stmt_cache_size=16"
		}
		return sqlx.Open("sqlite3", path)
	}
}

func hasScheme(path string) bool { return len(path) >= 5 && path[:5] == "file:" }
