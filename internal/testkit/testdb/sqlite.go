//go:build cgo

package testdb

import (
	"strings"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3"
)

func init() {
	openSQLite = func(path string) (*sqlx.DB, error) {
		if path != "" && !strings.HasPrefix(path, "file:") {
			path = "file:" + path + "?" + sqliteParams
		}
		return sqlx.Open("sqlite3", path)
	}
}
